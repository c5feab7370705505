// Helpers of the tests of the CPU's own float kernels (narrow_gemm, packed_gemm): random
// inputs and the instruction-set forms this CPU runs.
#ifndef ADAPTD_KERNELS_CPU_SIMD_FORMS_TEST_UTIL_H_
#define ADAPTD_KERNELS_CPU_SIMD_FORMS_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/narrow_gemm.h"

namespace adaptd::kernels::cpu::testing {

// n normal floats times `scale`.
inline std::vector<float> Random(int64_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> dist;
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(scale * dist(rng));
  return v;
}

// Every form this CPU runs (AVX2, and AVX-512 where present); empty without AVX2 + FMA.
inline std::vector<NarrowIsa> FormsHere() {
  std::vector<NarrowIsa> out;
  if (BestNarrowIsa() == NarrowIsa::kNone) return out;
  out.push_back(NarrowIsa::kAvx2);
  if (BestNarrowIsa() == NarrowIsa::kAvx512) out.push_back(NarrowIsa::kAvx512);
  return out;
}

}  // namespace adaptd::kernels::cpu::testing

#endif  // ADAPTD_KERNELS_CPU_SIMD_FORMS_TEST_UTIL_H_
