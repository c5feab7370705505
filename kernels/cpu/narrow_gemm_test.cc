// The narrow float product (narrow_gemm.h) against a float64 loop on random inputs, for every
// form this CPU runs: column counts on and off the panel widths, row counts off the tiles,
// padded leading dimensions, alpha and beta (beta = 0 must not read C), several threads, huge
// and tiny magnitudes, and the shapes it must decline.
#include "kernels/cpu/narrow_gemm.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "kernels/cpu/simd_forms_test_util.h"

namespace adaptd::kernels::cpu {
namespace {

using testing::FormsHere;
using testing::Random;

struct Case {
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  int threads;
  double scale;
};

// Checks C against alpha·A·B + beta·C0 in float64, within float32's bound for a dot product
// of length k: (k + 2)·u·Σ|a||b| (u = FLT_EPSILON / 2), twice over, plus the rounding of C.
void Check(const Case& t, NarrowIsa isa, std::mt19937_64& rng) {
  SCOPED_TRACE(::testing::Message() << "isa " << static_cast<int>(isa) << " m " << t.m << " n "
                                    << t.n << " k " << t.k << " threads " << t.threads);
  const std::vector<float> a = Random(t.m * t.lda, rng, t.scale);
  const std::vector<float> b = Random(t.k * t.ldb, rng);
  std::vector<float> c = Random(t.m * t.ldc, rng);
  if (t.beta == 0.0f) {
    for (int64_t i = 0; i < t.m; ++i) c[i * t.ldc] = std::numeric_limits<float>::quiet_NaN();
  }
  const std::vector<float> c0 = c;
  ASSERT_TRUE(NarrowGemm(t.m, t.n, t.k, t.alpha, a.data(), t.lda, b.data(), t.ldb, t.beta, c.data(),
                         t.ldc, isa, t.threads));
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.ldc; ++j) {
      if (j >= t.n) {  // padding past n is untouched
        ASSERT_EQ(c[i * t.ldc + j], c0[i * t.ldc + j]) << i << "," << j;
        continue;
      }
      double dot = 0, scale = 0;
      for (int64_t l = 0; l < t.k; ++l) {
        const double p = static_cast<double>(a[i * t.lda + l]) * b[l * t.ldb + j];
        dot += p;
        scale += std::fabs(p);
      }
      const double c_in = t.beta == 0.0f ? 0.0 : static_cast<double>(c0[i * t.ldc + j]);
      const double want = t.alpha * dot + t.beta * c_in;
      const double bound = 2.0 * (t.k + 2) * (FLT_EPSILON / 2) *
                               (std::fabs(t.alpha) * scale + std::fabs(t.beta * c_in)) +
                           std::fabs(want) * FLT_EPSILON;
      ASSERT_LE(std::fabs(c[i * t.ldc + j] - want), bound) << i << "," << j;
    }
  }
}

TEST(NarrowGemmTest, MatchesFloat64OnEveryShapeAndForm) {
  if (FormsHere().empty()) GTEST_SKIP() << "no AVX2 on this CPU: the kernel declines every call";
  std::mt19937_64 rng(5);
  const std::vector<Case> cases = {
      {32, 1, 1, 1, 1, 1, 1.0f, 0.0f, 1, 1.0},           // the smallest shape taken
      {100, 26, 256, 256, 26, 26, 1.0f, 0.0f, 1, 1.0},   // labels: rows off every tile
      {257, 8, 64, 70, 9, 11, 2.0f, 0.5f, 1, 1.0},       // padded ld, alpha, beta
      {333, 16, 33, 33, 16, 16, 1.0f, 1.0f, 2, 1.0},     // a panel exactly, two threads
      {129, 17, 129, 129, 17, 20, -1.0f, 0.0f, 3, 1.0},  // one past a panel
      {64, 32, 512, 512, 32, 32, 0.5f, 2.0f, 2, 1.0},    // the widest
      {75, 31, 40, 40, 31, 31, 1.0f, 0.0f, 1, 1e30},     // huge keys (products ~1e30)
      {75, 5, 40, 40, 5, 5, 1.0f, 0.0f, 1, 1e-30},       // tiny keys (products ~1e-30)
      {4096, 26, 128, 128, 26, 26, 1.0f, 0.0f, 2, 1.0},  // enough work for two threads
  };
  for (NarrowIsa isa : FormsHere()) {
    for (const Case& t : cases) Check(t, isa, rng);
  }
}

TEST(NarrowGemmTest, DeclinesShapesOutsideItsOwnAndWritesNothing) {
  std::mt19937_64 rng(6);
  const std::vector<float> a = Random(64 * 40, rng), b = Random(40 * 40, rng);
  std::vector<float> c(64 * 40, 7.0f);
  for (NarrowIsa isa : FormsHere()) {
    EXPECT_FALSE(NarrowGemm(64, 33, 40, 1, a.data(), 40, b.data(), 40, 0, c.data(), 40, isa));
    EXPECT_FALSE(NarrowGemm(0, 8, 40, 1, a.data(), 40, b.data(), 8, 0, c.data(), 8, isa));
    EXPECT_FALSE(NarrowGemm(64, 0, 40, 1, a.data(), 40, b.data(), 8, 0, c.data(), 8, isa));
    EXPECT_FALSE(NarrowGemm(64, 8, 0, 1, a.data(), 40, b.data(), 8, 0, c.data(), 8, isa));
  }
  EXPECT_FALSE(
      NarrowGemm(64, 8, 40, 1, a.data(), 40, b.data(), 8, 0, c.data(), 8, NarrowIsa::kNone));
  for (float v : c) ASSERT_EQ(v, 7.0f);
}

TEST(NarrowGemmTest, ARowsResultIsTheSameAloneInABatchAndInEveryForm) {
  if (FormsHere().empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937_64 rng(8);
  for (const int64_t n : {int64_t{3}, int64_t{16}, int64_t{26}, int64_t{32}}) {
    SCOPED_TRACE(n);
    const int64_t m = 301, k = 777;
    const std::vector<float> a = Random(m * k, rng), b = Random(k * n, rng);
    std::vector<float> batch(m * n), reference;
    for (NarrowIsa isa : FormsHere()) {
      ASSERT_TRUE(
          NarrowGemm(m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, batch.data(), n, isa, 2));
      if (reference.empty()) reference = batch;
      EXPECT_EQ(batch, reference) << "form " << static_cast<int>(isa);
      for (const int64_t r : {int64_t{0}, int64_t{7}, int64_t{150}, m - 1}) {
        std::vector<float> alone(n);
        ASSERT_TRUE(NarrowGemm(1, n, k, 1.0f, a.data() + r * k, k, b.data(), n, 0.0f, alone.data(),
                               n, isa, 1));
        EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batch.begin() + r * n)) << "row " << r;
      }
    }
  }
}

TEST(NarrowGemmTest, TheCpuBackendRoutesNarrowProductsThroughIt) {
  // The backend's float Gemm and GroupedGemm give the kernel's exact bits for a narrow shape.
  std::mt19937_64 rng(7);
  const int64_t m = 500, n = 26, k = 300;
  const std::vector<float> a = Random(m * k, rng), b = Random(k * n, rng);
  std::vector<float> via_backend(m * n), direct(m * n);
  auto backend = MakeCpuBackend();
  ASSERT_TRUE(backend
                  ->Gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f,
                         via_backend.data(), n)
                  .ok());
  if (BestNarrowIsa() == NarrowIsa::kNone) GTEST_SKIP() << "no AVX2: sgemm answers";
  ASSERT_TRUE(NarrowGemm(m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, direct.data(), n,
                         BestNarrowIsa(), 1));
  EXPECT_EQ(via_backend, direct);
  // Grouped predicts too, so a store answers the same through the scheduler and alone.
  std::vector<float> grouped(m * n), one_row(n);
  const GemmGroup groups[] = {{m, n, k, a.data(), k, b.data(), n, grouped.data(), n},
                              {1, n, k, a.data(), k, b.data(), n, one_row.data(), n}};
  ASSERT_TRUE(backend->GroupedGemm(groups).ok());
  EXPECT_EQ(grouped, direct);
  EXPECT_TRUE(std::equal(one_row.begin(), one_row.end(), direct.begin()));
}

}  // namespace
}  // namespace adaptd::kernels::cpu
