// The packed-weights product (packed_gemm.h) against a float64 loop on random inputs, for every
// form this CPU runs: row counts on and off the blocks (1, 13, past a chunk), column counts on
// and off the panel widths, depths from 1, padded leading dimensions, beta 0 (C must not be
// read), 1 and others, huge and tiny magnitudes; and the shapes Pack declines.
#include "kernels/cpu/packed_gemm.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/simd_forms_test_util.h"

namespace adaptd::kernels::cpu {
namespace {

using testing::FormsHere;
using testing::Random;

struct Case {
  int64_t m, n, k, lda, ldw, ldc;
  float beta;
  double scale;
};

// C against A·Wᵀ + beta·C0 in float64, within float32's bound for a dot product of length k:
// (k + 2)·u·Σ|a||w| (u = FLT_EPSILON / 2), twice over, plus the rounding of C.
void Check(const Case& t, NarrowIsa isa, std::mt19937_64& rng) {
  SCOPED_TRACE(::testing::Message()
               << "isa " << static_cast<int>(isa) << " m " << t.m << " n " << t.n << " k " << t.k);
  const std::vector<float> a = Random(t.m * t.lda, rng, t.scale);
  const std::vector<float> w = Random(t.n * t.ldw, rng);
  std::vector<float> c = Random(t.m * t.ldc, rng);
  if (t.beta == 0.0f) {
    for (int64_t i = 0; i < t.m; ++i) c[i * t.ldc] = std::numeric_limits<float>::quiet_NaN();
  }
  const std::vector<float> c0 = c;
  const std::optional<PackedWeights> packed = PackedWeights::Pack(w.data(), t.n, t.k, t.ldw, isa);
  ASSERT_TRUE(packed.has_value());
  EXPECT_EQ(packed->n(), t.n);
  EXPECT_EQ(packed->k(), t.k);
  packed->Multiply(t.m, a.data(), t.lda, t.beta, c.data(), t.ldc);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.ldc; ++j) {
      if (j >= t.n) {  // padding past n is untouched
        ASSERT_EQ(c[i * t.ldc + j], c0[i * t.ldc + j]) << i << "," << j;
        continue;
      }
      double dot = 0, scale = 0;
      for (int64_t l = 0; l < t.k; ++l) {
        const double p = static_cast<double>(a[i * t.lda + l]) * w[j * t.ldw + l];
        dot += p;
        scale += std::fabs(p);
      }
      const double c_in = t.beta == 0.0f ? 0.0 : static_cast<double>(c0[i * t.ldc + j]);
      const double want = dot + t.beta * c_in;
      const double bound =
          2.0 * (t.k + 2) * (FLT_EPSILON / 2) * (scale + std::fabs(t.beta * c_in)) +
          std::fabs(want) * FLT_EPSILON;
      ASSERT_LE(std::fabs(c[i * t.ldc + j] - want), bound) << i << "," << j;
    }
  }
}

TEST(PackedGemmTest, MatchesFloat64OnEveryShapeAndForm) {
  if (FormsHere().empty()) GTEST_SKIP() << "no AVX2 on this CPU: Pack declines every matrix";
  std::mt19937_64 rng(11);
  const std::vector<Case> cases = {
      {1, 1, 1, 1, 1, 1, 0.0f, 1.0},                // the smallest shape
      {13, 1152, 384, 384, 384, 1152, 1.0f, 1.0},   // one short text's Q, K, V with biases
      {13, 384, 1536, 1536, 1536, 384, 1.0f, 1.0},  // its second feed-forward product
      {7, 33, 65, 70, 66, 40, 0.5f, 1.0},           // one past a panel, padded ld, beta
      {25, 17, 3, 3, 3, 17, 0.0f, 1.0},             // past a block, one past the AVX2 panel
      {1, 40, 2, 2, 2, 40, 2.0f, 1.0},              // depth 2
      {700, 100, 300, 300, 300, 100, 1.0f, 1.0},    // rows past one chunk
      {40, 64, 1000, 1000, 1000, 64, 0.0f, 1.0},    // deep
      {12, 31, 40, 40, 40, 31, 0.0f, 1e30},         // huge inputs (products ~1e30)
      {12, 31, 40, 40, 40, 31, 0.0f, 1e-30},        // tiny inputs (products ~1e-30)
  };
  for (NarrowIsa isa : FormsHere()) {
    for (const Case& t : cases) Check(t, isa, rng);
  }
}

TEST(PackedGemmTest, ARowsResultIsTheSameAloneInABatchAndInEveryForm) {
  if (FormsHere().empty()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937_64 rng(12);
  const int64_t m = 301, n = 200, k = 777;
  const std::vector<float> a = Random(m * k, rng), w = Random(n * k, rng);
  std::vector<float> reference;
  for (NarrowIsa isa : FormsHere()) {
    const std::optional<PackedWeights> packed = PackedWeights::Pack(w.data(), n, k, k, isa);
    ASSERT_TRUE(packed.has_value());
    std::vector<float> batch(m * n);
    packed->Multiply(m, a.data(), k, 0.0f, batch.data(), n);
    if (reference.empty()) reference = batch;
    EXPECT_EQ(batch, reference) << "form " << static_cast<int>(isa);
    for (const int64_t r : {int64_t{0}, int64_t{7}, int64_t{150}, m - 1}) {
      std::vector<float> alone(n);
      packed->Multiply(1, a.data() + r * k, k, 0.0f, alone.data(), n);
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), reference.begin() + r * n)) << "row " << r;
    }
  }
}

TEST(PackedGemmTest, DeclinesEmptyShapesShortRowsAndFormsThisCpuLacks) {
  const std::vector<float> w(64, 1.0f);
  EXPECT_FALSE(PackedWeights::Pack(w.data(), 0, 8, 8).has_value());
  EXPECT_FALSE(PackedWeights::Pack(w.data(), 8, 0, 8).has_value());
  EXPECT_FALSE(PackedWeights::Pack(w.data(), 8, 8, 7).has_value());
  EXPECT_FALSE(PackedWeights::Pack(w.data(), 8, 8, 8, NarrowIsa::kNone).has_value());
  if (BestNarrowIsa() != NarrowIsa::kAvx512) {
    EXPECT_FALSE(PackedWeights::Pack(w.data(), 8, 8, 8, NarrowIsa::kAvx512).has_value());
  } else {
    EXPECT_TRUE(PackedWeights::Pack(w.data(), 8, 8, 8, NarrowIsa::kAvx512).has_value());
  }
}

TEST(PackedGemmTest, PaysForAShortTextsRowsNotForALongBatch) {
  EXPECT_TRUE(PackedWeights::Pays(1));
  EXPECT_TRUE(PackedWeights::Pays(40));
  EXPECT_FALSE(PackedWeights::Pays(97));
  EXPECT_FALSE(PackedWeights::Pays(2048));
}

}  // namespace
}  // namespace adaptd::kernels::cpu
