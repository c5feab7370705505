// Shared pieces of the backend consistency suite: the backend under test (chosen at build time
// by ADAPTD_BACKEND_UNDER_TEST, "cpu" or "cuda"), the CPU reference, random inputs and the
// comparison helpers. A device backend that is unavailable skips its tests, or fails them when
// ADAPTD_REQUIRE_CUDA=1.
#ifndef ADAPTD_KERNELS_TESTS_CONSISTENCY_UTIL_H_
#define ADAPTD_KERNELS_TESTS_CONSISTENCY_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"

namespace adaptd::kernels {

inline bool CudaRequired() {
  const char* value = std::getenv("ADAPTD_REQUIRE_CUDA");
  return value != nullptr && std::string(value) == "1";
}

// Each test runs the op on `under_test` and on `cpu`, and checks the CPU against a float64
// loop and the backend under test against the CPU. For the CPU build both are the CPU backend.
class ConsistencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu_ = MakeCpuBackend();
    const std::string which = ADAPTD_BACKEND_UNDER_TEST;
    if (which == "cpu") {
      under_test_ = MakeCpuBackend();
      return;
    }
    auto made = MakeCudaBackend(0);
    if (absl::IsUnavailable(made.status()) && !CudaRequired()) {
      GTEST_SKIP() << "no CUDA device, skipping: " << made.status();
    }
    ASSERT_TRUE(made.ok()) << made.status();
    under_test_ = *std::move(made);
  }
  Backend& cpu() { return *cpu_; }
  Backend& under_test() { return *under_test_; }
  bool on_device() const { return under_test_->name() != "cpu"; }

 private:
  std::unique_ptr<Backend> cpu_, under_test_;
};

template <typename T>
std::vector<T> RandomVector(size_t count, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> dist;
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(dist(rng) * scale);
  return v;
}

// Near within tol·scale, where scale bounds the magnitude the result's rounding is relative to.
inline ::testing::AssertionResult Near(double got, double want, double tol, double scale) {
  if (std::abs(got - want) <= tol * scale || (std::isnan(got) && std::isnan(want))) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "got " << got << ", want " << want << " (|diff| " << std::abs(got - want) << " > "
         << tol << " × " << scale << ")";
}

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_TESTS_CONSISTENCY_UTIL_H_
