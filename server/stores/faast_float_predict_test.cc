// FaastStore's float32 predict path (a float32 copy of S times the caller's float keys) against
// the float64 path (float64 keys times S, then ranked in float64): label agreement on data
// shaped like the scikit-learn comparison, scores within float32's error bound, and the
// awkward cases (rank-deficient and few-shot weights, huge, tiny and zero keys, weights
// outside float32's range), where the float64 path must answer.
#include <cfloat>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/faast_weights.h"

namespace adaptd {
namespace {

using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::LabelBatch;
using faast_test::LabelSpec;
using faast_test::MakeStore;
using faast_test::VectorBatch;
using faast_test::VectorSpec;

// The float64 path's answer for `keys`: float64 products, ranked in float64.
Predictions Float64Predictions(const FaastWeights& w, const std::vector<float>& keys, int64_t rows,
                               int top_k, kernels::Backend* backend) {
  std::vector<double> x(keys.begin(), keys.end());
  absl::StatusOr<std::vector<double>> outputs = FaastOutputs(w, x.data(), rows, backend);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  Predictions out;
  if (outputs.ok()) FaastFillPredictions(w, *outputs, rows, top_k, &out);
  return out;
}

// Σ_i |x_i|·|S_ij| for row r and column j: the scale of float32's rounding error there.
double AbsoluteScale(const FaastWeights& w, const std::vector<float>& keys, int64_t r, int64_t j) {
  double sum = 0;
  for (int64_t i = 0; i < w.dim; ++i) {
    sum += std::fabs(static_cast<double>(keys[r * w.dim + i])) * std::fabs(w.s[i * w.columns + j]);
  }
  return sum;
}

// The classic error bound of a length-d float32 dot product (plus the rounding of S to
// float32): (d + 2)·u·Σ|x||s|, u = FLT_EPSILON / 2, with a factor of 2 to spare.
double Float32Bound(int64_t d, double scale) {
  return 2.0 * static_cast<double>(d + 2) * (FLT_EPSILON / 2) * scale;
}

// Class centroids drawn from N(0, spread²), each row its centroid plus N(0, 1) noise, as
// bench/sklearn_peer.py generates them.
void CentroidData(std::mt19937_64& rng, int64_t rows, int64_t d, int classes, double spread,
                  std::vector<float>* keys, std::vector<std::string>* labels) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> centroids(static_cast<size_t>(classes) * d);
  for (double& c : centroids) c = spread * normal(rng);
  std::uniform_int_distribution<int> pick(0, classes - 1);
  keys->resize(rows * d);
  labels->resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const int c = pick(rng);
    (*labels)[r] = "c" + std::to_string(c);
    for (int64_t i = 0; i < d; ++i) {
      (*keys)[r * d + i] = static_cast<float>(centroids[c * d + i] + normal(rng));
    }
  }
}

class FaastFloatPredictTest : public ::testing::Test {
 protected:
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend();
};

TEST_F(FaastFloatPredictTest, LabelsAgreeWithTheFloat64PathOnAtLeast9999OfRows) {
  std::mt19937_64 rng(7);
  const int64_t d = 256, train = 4000, rows = 20000;
  const int classes = 26;
  std::vector<float> keys, queries;
  std::vector<std::string> labels, unused;
  CentroidData(rng, train, d, classes, 0.08, &keys, &labels);
  CentroidData(rng, rows, d, classes, 0.08, &queries, &unused);
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  adapt::v1::FaastParams ridge;
  ridge.set_ridge(1.0);
  ASSERT_TRUE(CompileNow(*store, ridge).ok());
  std::shared_ptr<const FaastWeights> w = store->published();
  ASSERT_TRUE(w->float_scoring);

  absl::StatusOr<Predictions> got = store->Predict(queries.data(), rows, d, 3);
  ASSERT_TRUE(got.ok()) << got.status();
  const Predictions want = Float64Predictions(*w, queries, rows, 3, backend_.get());
  ASSERT_EQ(got->top_k, 3);
  ASSERT_EQ(got->label_ids.size(), want.label_ids.size());
  int64_t differ = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (got->label_ids[r * 3] != want.label_ids[r * 3]) ++differ;
    for (int i = 0; i < 3; ++i) {
      const int64_t label = got->label_ids[r * 3 + i];
      // Each score is its label's float64 score within float32's rounding.
      const float* row = queries.data() + r * d;
      double exact = 0;
      for (int64_t k = 0; k < d; ++k) {
        exact += static_cast<double>(row[k]) * w->s[k * w->columns + label];
      }
      ASSERT_LE(
          std::fabs(got->scores[r * 3 + i] - exact),
          Float32Bound(d, AbsoluteScale(*w, queries, r, label)) + std::fabs(exact) * FLT_EPSILON)
          << "row " << r << " rank " << i;
      if (i > 0) {
        ASSERT_GE(got->scores[r * 3 + i - 1], got->scores[r * 3 + i]);
      }
    }
  }
  // At least 99.99% of rows agree: at most 2 of 20,000.
  EXPECT_LE(differ, 2) << differ << " of " << rows << " rows got another label";
}

TEST_F(FaastFloatPredictTest, VectorOutputsOfRankDeficientFewShotWeightsAreWithinTheBound) {
  std::mt19937_64 rng(11);
  const int64_t d = 64, m = 8;
  for (const int64_t n : {int64_t{20}, int64_t{300}}) {  // fewer examples than dimensions, more
    SCOPED_TRACE(n);
    const std::vector<float> keys = faast_test::LowRankFloats(rng, n, d, 12);
    const std::vector<float> targets = faast_test::RandomFloats(rng, n * m);
    auto store = MakeStore(VectorSpec(m), backend_.get());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, n)}).ok());
    ASSERT_TRUE(CompileNow(*store).ok());
    std::shared_ptr<const FaastWeights> w = store->published();
    ASSERT_TRUE(w->float_scoring);
    const int64_t rows = 500;
    const std::vector<float> queries = faast_test::RandomFloats(rng, rows * d);
    absl::StatusOr<Predictions> got = store->Predict(queries.data(), rows, d, 1);
    ASSERT_TRUE(got.ok()) << got.status();
    const Predictions want = Float64Predictions(*w, queries, rows, 1, backend_.get());
    ASSERT_EQ(got->out_dim, m);
    ASSERT_EQ(got->vectors.size(), want.vectors.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < m; ++j) {
        const double bound = Float32Bound(d, AbsoluteScale(*w, queries, r, j)) +
                             std::fabs(want.vectors[r * m + j]) * FLT_EPSILON;
        ASSERT_LE(std::fabs(got->vectors[r * m + j] - want.vectors[r * m + j]), bound)
            << "row " << r << " column " << j;
      }
    }
  }
}

// Trains a 5-label store on N(0, 1e-6) keys in dimension 16 (so |S| is in the hundreds).
std::unique_ptr<FaastStore> FiveLabelStore(kernels::Backend* backend, std::mt19937_64& rng) {
  const int64_t d = 16, n = 200;
  std::vector<float> keys = faast_test::RandomFloats(rng, n * d, 1e-3);
  std::vector<std::string> labels(n);
  for (int64_t r = 0; r < n; ++r) labels[r] = "l" + std::to_string(r % 5);
  auto store = MakeStore(LabelSpec(), backend);
  EXPECT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, 16, labels)}).ok());
  EXPECT_TRUE(CompileNow(*store).ok());
  return store;
}

TEST_F(FaastFloatPredictTest, HugeTinyAndZeroKeysAnswerAsTheFloat64PathDoes) {
  std::mt19937_64 rng(13);
  auto store = FiveLabelStore(backend_.get(), rng);
  std::shared_ptr<const FaastWeights> w = store->published();
  ASSERT_TRUE(w->float_scoring);
  const int64_t d = 16;
  // Rows 0–3 overflow float32's products (1e37 up to float max), rows 4–7 underflow them
  // (1e-36 and subnormal keys), rows 8–9 are zero, rows 10–11 are ordinary.
  const double scales[] = {1e37, -1e37, 3e38, 1e38, 1e-36, 1e-38, 1e-44, -1e-40, 0, 0, 1, 1};
  const int64_t rows = std::size(scales);
  std::vector<float> queries(rows * d);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      const double v = scales[r] * normal(rng);
      queries[r * d + i] =
          std::fabs(v) > FLT_MAX ? std::copysign(FLT_MAX, v) : static_cast<float>(v);
    }
  }
  const std::vector<int64_t> rescored = [&] {
    std::vector<float> out(rows * w->columns);
    std::vector<float> s(w->s.begin(), w->s.end());
    EXPECT_TRUE(backend_
                    ->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, w->columns, d, 1.0f,
                           queries.data(), d, s.data(), w->columns, 0.0f, out.data(), w->columns)
                    .ok());
    return RowsToRescore(out.data(), rows, w->columns);
  }();
  // The extreme rows are exactly the ones float32 cannot score.
  EXPECT_EQ(rescored, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  absl::StatusOr<Predictions> got = store->Predict(queries.data(), rows, d, 5);
  ASSERT_TRUE(got.ok()) << got.status();
  const Predictions want = Float64Predictions(*w, queries, rows, 5, backend_.get());
  for (int64_t r = 0; r < 10; ++r) {
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(got->label_ids[r * 5 + i], want.label_ids[r * 5 + i]) << "row " << r;
      EXPECT_EQ(got->scores[r * 5 + i], want.scores[r * 5 + i]) << "row " << r;
    }
  }
  // Ranked by float64 even where the scores round to float32's infinities or zeros.
  for (int64_t r : {0, 4}) {
    std::vector<float> one(queries.begin() + r * d, queries.begin() + (r + 1) * d);
    std::vector<double> exact(5, 0.0);
    for (int64_t j = 0; j < 5; ++j) {
      for (int64_t i = 0; i < d; ++i) exact[j] += static_cast<double>(one[i]) * w->s[i * 5 + j];
    }
    const int64_t best = std::max_element(exact.begin(), exact.end()) - exact.begin();
    EXPECT_EQ(got->label_ids[r * 5], best) << "row " << r;
  }
  for (int64_t r = 10; r < rows; ++r) {
    EXPECT_EQ(got->label_ids[r * 5], want.label_ids[r * 5]) << "row " << r;
  }
}

TEST_F(FaastFloatPredictTest, WeightsOutsideFloat32sRangeArePredictedInFloat64) {
  std::mt19937_64 rng(17);
  const int64_t d = 8, m = 2, n = 40;
  // Keys of norm ~1e-3 and targets ~1e36 give |S| ~ 1e39 (past float max); keys ~1e3 and
  // targets ~1e-34 give |S| ~ 1e-37 (below the float32 scoring floor).
  for (const auto& [key_scale, target_scale] : {std::pair{1e-3, 1e36}, std::pair{1e3, 1e-34}}) {
    SCOPED_TRACE(key_scale);
    const std::vector<float> keys = faast_test::RandomFloats(rng, n * d, key_scale);
    const std::vector<float> targets = faast_test::RandomFloats(rng, n * m, target_scale);
    auto store = MakeStore(VectorSpec(m), backend_.get());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, n)}).ok());
    ASSERT_TRUE(CompileNow(*store).ok());
    std::shared_ptr<const FaastWeights> w = store->published();
    ASSERT_FALSE(w->float_scoring);
    EXPECT_EQ(store->Readout(), nullptr);  // grouped predicts use Predict too
    absl::StatusOr<Predictions> got = store->Predict(keys.data(), n, d, 1);
    ASSERT_TRUE(got.ok()) << got.status();
    const Predictions want = Float64Predictions(*w, keys, n, 1, backend_.get());
    EXPECT_EQ(got->vectors, want.vectors);
    // Outputs of the targets' scale, which float32 weights could not have produced.
    for (float v : got->vectors) {
      ASSERT_TRUE(std::isfinite(v));
      ASSERT_GT(std::fabs(v), target_scale * 1e-6);
    }
  }
  EXPECT_FALSE(FitsFloat({1.0, std::nan("")}));
  EXPECT_TRUE(FitsFloat({0.0, 0.0}));
  EXPECT_TRUE(FitsFloat({1e-30, -3e38}));
  EXPECT_FALSE(FitsFloat({1e-31, 0.0}));
}

}  // namespace
}  // namespace adaptd
