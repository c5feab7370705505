// FAAST's zero-shot start and its interpolation with the fast weights (label-embedding stores
// whose keys and label embeddings share a space), against a float64 reference: before any
// example the store decodes the key itself against the declared labels' embeddings; after N
// examples its read-out is (1 − r)·I + r·S, r = N / (N₀ + N), with S = K⁺V from an SVD.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::MakeStore;
using faast_test::RandomFloats;

constexpr int kDim = 8;
const std::vector<std::string> kLabels = {"ant", "bee", "cat", "dog", "eel"};

adapt::v1::StoreSpec ZeroShotSpec(double prior, int dim = kDim) {
  adapt::v1::StoreSpec spec = faast_test::LabelSpec(dim);
  spec.mutable_output()->set_label_encoder("text");
  spec.mutable_output()->set_label_dim(dim);
  for (const auto& name : kLabels) spec.mutable_output()->add_labels(name);
  spec.mutable_faast()->set_prior_examples(prior);
  spec.mutable_faast()->set_auto_compile_every(0);
  spec.mutable_faast()->set_auto_compile_delay_ms(0);
  return spec;
}

// cosine(a, b) in float64 (0 when either is zero).
double Cosine(const double* a, const double* b, int n) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < n; ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

class FaastZeroShotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    std::mt19937_64 rng(41);
    embeddings_ = RandomFloats(rng, static_cast<int64_t>(kLabels.size()) * kDim);
    probes_ = RandomFloats(rng, 64 * kDim);
  }

  // Predictions of `store` on the probes must be the labels of highest cosine between
  // `read_out`ᵀx and the label embeddings, with those cosines as scores.
  void ExpectDecodes(const Store& store, const std::vector<double>& read_out, int dim) {
    const int rows = static_cast<int>(probes_.size()) / kDim;
    auto p = store.Predict(probes_.data(), rows, dim, 2);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->top_k, 2);
    for (int r = 0; r < rows; ++r) {
      std::vector<double> y(dim, 0.0);
      for (int a = 0; a < dim; ++a) {
        for (int j = 0; j < dim; ++j) y[j] += probes_[r * dim + a] * read_out[a * dim + j];
      }
      std::vector<std::pair<double, int>> scored;
      for (size_t l = 0; l < kLabels.size(); ++l) {
        const std::vector<double> e(embeddings_.begin() + l * dim,
                                    embeddings_.begin() + (l + 1) * dim);
        scored.emplace_back(Cosine(y.data(), e.data(), dim), static_cast<int>(l));
      }
      std::sort(scored.begin(), scored.end(), [](auto a, auto b) { return a.first > b.first; });
      if (scored[0].first - scored[1].first < 1e-6) continue;  // a near tie: either is right
      EXPECT_EQ(p->label_ids[r * 2], scored[0].second) << r;
      EXPECT_NEAR(p->scores[r * 2], scored[0].first, 1e-5) << r;
    }
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::vector<float> embeddings_, probes_;
};

TEST_F(FaastZeroShotTest, AnswersBeforeAnyExampleFromTheLabelEmbeddings) {
  auto store = MakeStore(ZeroShotSpec(16), backend_.get());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Predict(probes_.data(), 1, kDim, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->SeedDeclaredLabels(kLabels, embeddings_).ok());
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.version(), 1u);
  EXPECT_EQ(info.labels_size(), 5);
  EXPECT_EQ(info.faast().solver(), "zero_shot");
  EXPECT_EQ(info.faast().fast_weight_share(), 0.0);
  std::vector<double> identity(kDim * kDim, 0.0);
  for (int i = 0; i < kDim; ++i) identity[i * kDim + i] = 1.0;
  ExpectDecodes(*store, identity, kDim);
  // Nothing new since: the automatic compile would publish nothing.
  EXPECT_FALSE(store->ChangedSinceCompile());
}

// N examples (N > d, then N < d through the few-shot path, and a rank-deficient key set):
// the published read-out is (1 − r)·I + r·K⁺V, and predictions decode it.
TEST_F(FaastZeroShotTest, InterpolatesTowardsTheFastWeightsAsExamplesArrive) {
  struct Case {
    int n;
    int rank;  // of the keys; kDim: full
  };
  for (const Case c : {Case{24, kDim}, Case{5, 5}, Case{20, 3}}) {
    SCOPED_TRACE(c.n);
    constexpr double kPrior = 10;
    auto store = MakeStore(ZeroShotSpec(kPrior), backend_.get());
    ASSERT_TRUE(store->SeedDeclaredLabels(kLabels, embeddings_).ok());
    std::mt19937_64 rng(50 + c.n);
    const std::vector<float> keys = c.rank == kDim
                                        ? RandomFloats(rng, c.n * kDim)
                                        : faast_test::LowRankFloats(rng, c.n, kDim, c.rank);
    std::vector<std::string> labels;
    std::vector<double> targets;
    for (int r = 0; r < c.n; ++r) {
      const int l = r % static_cast<int>(kLabels.size());
      labels.push_back(kLabels[l]);
      targets.insert(targets.end(), embeddings_.begin() + l * kDim,
                     embeddings_.begin() + (l + 1) * kDim);
    }
    ExampleBatch batch = faast_test::LabelBatch(keys, kDim, labels);
    batch.targets.assign(targets.begin(), targets.end());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {batch}).ok());
    auto compiled = CompileNow(*store);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const double r = c.n / (kPrior + c.n);
    EXPECT_NEAR(compiled->faast().fast_weight_share(), r, 1e-15);

    const std::vector<double> s = faast_test::PinvReference(faast_test::ToDoubles(keys), c.n, kDim,
                                                            targets, kDim, {}, 1.0 / c.n);
    std::vector<double> want(kDim * kDim);
    for (int i = 0; i < kDim * kDim; ++i) want[i] = r * s[i];
    for (int i = 0; i < kDim; ++i) want[i * kDim + i] += 1 - r;
    EXPECT_LT(faast_test::RelError(store->published()->s, want), 1e-9);
    ExpectDecodes(*store, want, kDim);
  }
}

// Huge and tiny key norms: the zero-shot decode is a cosine, so it does not depend on them.
TEST_F(FaastZeroShotTest, ZeroShotIgnoresTheKeyScale) {
  auto store = MakeStore(ZeroShotSpec(4), backend_.get());
  ASSERT_TRUE(store->SeedDeclaredLabels(kLabels, embeddings_).ok());
  auto base = store->Predict(probes_.data(), 8, kDim, 1);
  ASSERT_TRUE(base.ok());
  for (float scale : {1e-20f, 1e20f}) {
    std::vector<float> scaled(probes_.begin(), probes_.begin() + 8 * kDim);
    for (float& x : scaled) x *= scale;
    auto p = store->Predict(scaled.data(), 8, kDim, 1);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->label_ids, base->label_ids) << scale;
    for (int r = 0; r < 8; ++r) EXPECT_NEAR(p->scores[r], base->scores[r], 1e-5);
  }
}

// Forgetting every example returns the store to its zero-shot read-out; N₀ = 0 turns the
// interpolation off (declared labels then only fix the label order, and nothing is published
// before a compile of examples).
TEST_F(FaastZeroShotTest, ForgettingEverythingReturnsToZeroShotAndPriorZeroTurnsItOff) {
  std::mt19937_64 rng(60);
  const std::vector<float> keys = RandomFloats(rng, 10 * kDim);
  std::vector<std::string> labels;
  std::vector<float> targets;
  for (int r = 0; r < 10; ++r) {
    labels.push_back(kLabels[r % 5]);
    targets.insert(targets.end(), embeddings_.begin() + (r % 5) * kDim,
                   embeddings_.begin() + (r % 5 + 1) * kDim);
  }
  ExampleBatch batch = faast_test::LabelBatch(keys, kDim, labels);
  batch.targets = targets;

  auto store = MakeStore(ZeroShotSpec(3), backend_.get());
  ASSERT_TRUE(store->SeedDeclaredLabels(kLabels, embeddings_).ok());
  const std::vector<double> zero_shot = store->published()->s;
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {batch}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  EXPECT_NE(store->published()->s, zero_shot);
  ASSERT_TRUE(Apply(*store, TxnKind::kForget, {batch}).ok());
  auto again = CompileNow(*store);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->faast().solver(), "zero_shot");
  EXPECT_EQ(store->published()->s, zero_shot);

  auto off = MakeStore(ZeroShotSpec(0), backend_.get());
  ASSERT_TRUE(off->SeedDeclaredLabels(kLabels, embeddings_).ok());
  EXPECT_EQ(off->published(), nullptr);
  ASSERT_TRUE(Apply(*off, TxnKind::kAdapt, {batch}).ok());
  auto compiled = CompileNow(*off);
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(compiled->faast().fast_weight_share(), 1.0);
  const std::vector<double> s = faast_test::PinvReference(
      faast_test::ToDoubles(keys), 10, kDim, faast_test::ToDoubles(targets), kDim, {}, 0.1);
  EXPECT_LT(faast_test::RelError(off->published()->s, s), 1e-9);
}

TEST_F(FaastZeroShotTest, SpecErrorsNameTheField) {
  struct Case {
    adapt::v1::StoreSpec spec;
    std::string prefix;
  };
  std::vector<Case> cases;
  adapt::v1::StoreSpec no_encoder = faast_test::LabelSpec(kDim);
  no_encoder.mutable_faast()->set_prior_examples(5);
  cases.push_back({no_encoder, "spec.faast.prior_examples: interpolates"});
  adapt::v1::StoreSpec other_width = ZeroShotSpec(5);
  other_width.mutable_output()->set_label_dim(kDim + 1);
  cases.push_back({other_width, "spec.faast.prior_examples: needs keys and label embeddings"});
  adapt::v1::StoreSpec no_dim = ZeroShotSpec(5, 0);
  no_dim.mutable_output()->set_label_dim(kDim);
  cases.push_back({no_dim, "spec.faast.prior_examples: needs the key dimension"});
  adapt::v1::StoreSpec negative = ZeroShotSpec(-1);
  cases.push_back({negative, "spec.faast.prior_examples: must be finite"});
  adapt::v1::StoreSpec twice = ZeroShotSpec(5);
  twice.mutable_output()->add_labels("bee");
  cases.push_back({twice, "spec.output.labels[5]: 'bee' is declared twice"});
  adapt::v1::StoreSpec empty_name = ZeroShotSpec(5);
  empty_name.mutable_output()->set_labels(2, "");
  cases.push_back({empty_name, "spec.output.labels[2]: must have 1 to 256 bytes"});
  adapt::v1::StoreSpec one_hot = faast_test::LabelSpec(kDim);
  one_hot.mutable_output()->add_labels("ant");
  cases.push_back({one_hot, "spec.output.labels: declared labels are embedded"});
  adapt::v1::StoreSpec too_many = ZeroShotSpec(5);
  too_many.mutable_faast()->set_max_labels(4);
  cases.push_back({too_many, "spec.output.labels: 5 labels, more than max_labels 4"});
  adapt::v1::StoreSpec falcon;
  falcon.set_kind(adapt::v1::STORE_KIND_FALCON);
  falcon.set_dim(kDim);
  falcon.mutable_output()->add_labels("ant");
  cases.push_back({falcon, "spec.output.labels: declared labels are for faast stores"});
  for (const Case& c : cases) {
    absl::Status s = CreateStore(c.spec, backend_.get()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.prefix;
    EXPECT_EQ(s.message().substr(0, c.prefix.size()), c.prefix) << s;
  }
}

// Unset, N₀ is 64 where keys and label embeddings share a space and 0 elsewhere.
TEST_F(FaastZeroShotTest, DefaultPriorAppliesOnlyWhereKeysAndLabelsShareASpace) {
  adapt::v1::StoreSpec shared = ZeroShotSpec(0);
  shared.mutable_faast()->clear_prior_examples();
  adapt::v1::StoreSpec other_width = shared;
  other_width.mutable_output()->set_label_dim(kDim + 2);
  adapt::v1::StoreSpec one_hot = faast_test::LabelSpec(kDim);
  for (const auto& [spec, want] : std::vector<std::pair<adapt::v1::StoreSpec, double>>{
           {shared, 64.0}, {other_width, 0.0}, {one_hot, 0.0}}) {
    absl::StatusOr<adapt::v1::StoreSpec> normalized = NormalizeFaastSpec(spec);
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    EXPECT_EQ(normalized->faast().prior_examples(), want) << spec.ShortDebugString();
  }
}

TEST_F(FaastZeroShotTest, LabelsAreSeededOnlyIntoANewStoreAndOnlyAsDeclared) {
  auto store = MakeStore(ZeroShotSpec(5), backend_.get());
  EXPECT_EQ(store->SeedDeclaredLabels({"ant"}, std::vector<float>(kDim)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SeedDeclaredLabels(kLabels, std::vector<float>(kDim)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->published(), nullptr);
  ASSERT_TRUE(store->SeedDeclaredLabels(kLabels, embeddings_).ok());
  EXPECT_EQ(store->SeedDeclaredLabels(kLabels, embeddings_).code(),
            absl::StatusCode::kFailedPrecondition);
  auto one_hot = MakeStore(faast_test::LabelSpec(kDim), backend_.get());
  EXPECT_EQ(one_hot->SeedDeclaredLabels({}, {}).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace adaptd
