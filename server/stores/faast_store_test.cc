// FaastStore end to end: weights against float64 references, batching and transaction
// invariance, exact forgetting, late labels, decay.
#include "server/stores/faast_store.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"

namespace adaptd {
namespace {

using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::LabelBatch;
using faast_test::LabelSpec;
using faast_test::MakeStore;
using faast_test::PinvReference;
using faast_test::RelError;
using faast_test::VectorBatch;
using faast_test::VectorSpec;

// Same bound as the solver tests (well-conditioned keys, G in float64).
constexpr double kTol = 1e-8;
// Different batchings sum the same terms in different orders: only rounding differs.
constexpr double kSameSumTol = 1e-10;

std::vector<double> Weights(const FaastStore& store) {
  std::shared_ptr<const FaastWeights> w = store.published();
  EXPECT_NE(w, nullptr);
  return w == nullptr ? std::vector<double>() : w->s;
}

std::vector<std::string> RandomLabels(std::mt19937_64& rng, int64_t n, int classes) {
  std::uniform_int_distribution<int> pick(0, classes - 1);
  std::vector<std::string> out(n);
  for (auto& l : out) l = "c" + std::to_string(pick(rng));
  return out;
}

// One-hot targets in first-seen label order, as the store lays its columns out.
std::vector<double> FirstSeenOneHot(const std::vector<std::string>& labels,
                                    std::vector<std::string>* order) {
  std::vector<int> ids;
  for (const std::string& l : labels) {
    auto it = std::find(order->begin(), order->end(), l);
    if (it == order->end()) {
      order->push_back(l);
      it = order->end() - 1;
    }
    ids.push_back(static_cast<int>(it - order->begin()));
  }
  return faast_test::OneHot(ids, static_cast<int64_t>(order->size()));
}

TEST(FaastStoreTest, LabelWeightsMatchSvdReference) {
  const int64_t n = 100, d = 20;
  std::mt19937_64 rng(1);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<std::string> labels = RandomLabels(rng, n, 5);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  absl::StatusOr<adapt::v1::CompileResponse> compiled = CompileNow(*store);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ(compiled->version(), 1u);
  EXPECT_EQ(compiled->faast().solver(), "spectral");
  EXPECT_EQ(compiled->faast().effective_rank(), d);
  EXPECT_DOUBLE_EQ(compiled->faast().compiled_examples(), n);

  std::vector<std::string> order;
  const std::vector<double> v = FirstSeenOneHot(labels, &order);
  const int64_t m = static_cast<int64_t>(order.size());
  const std::vector<double> want = PinvReference(faast_test::ToDoubles(keys), n, d, v, m, {}, 0.01);
  EXPECT_LT(RelError(Weights(*store), want), kTol);

  // Predict: top-k ids and scores follow keys · S.
  absl::StatusOr<Predictions> p = store->Predict(keys.data(), 3, d, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->version, 1u);
  EXPECT_EQ(p->top_k, 2);
  ASSERT_NE(p->label_names, nullptr);
  EXPECT_EQ(*p->label_names, order);
  for (int64_t r = 0; r < 3; ++r) {
    std::vector<double> score(m, 0.0);
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < d; ++i) score[j] += keys[r * d + i] * want[i * m + j];
    }
    const int best = static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
    EXPECT_EQ(p->label_ids[r * 2], best);
    EXPECT_NEAR(p->scores[r * 2], score[best], 1e-5);
    EXPECT_GE(p->scores[r * 2], p->scores[r * 2 + 1]);
  }
}

TEST(FaastStoreTest, FewShotAndGramPathsAgreeBelowDim) {
  const int64_t n = 15, d = 40, m = 3;
  std::mt19937_64 rng(2);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<float> targets = faast_test::RandomFloats(rng, n * m);
  auto backend = kernels::MakeCpuBackend();
  std::vector<std::vector<double>> weights;
  for (bool few_shot : {true, false}) {
    adapt::v1::StoreSpec spec = VectorSpec(m);
    spec.mutable_faast()->set_few_shot(few_shot);
    auto store = MakeStore(spec, backend.get());
    // Two transactions so the raw pairs cross a commit.
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, 6)}).ok());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 6, 9)}).ok());
    absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->faast().solver(), few_shot ? "few_shot" : "spectral");
    EXPECT_EQ(c->faast().effective_rank(), n);
    weights.push_back(Weights(*store));
  }
  const std::vector<double> want = PinvReference(faast_test::ToDoubles(keys), n, d,
                                                 faast_test::ToDoubles(targets), m, {}, 1.0 / n);
  EXPECT_LT(RelError(weights[0], want), kTol);
  EXPECT_LT(RelError(weights[1], want), kTol);
  EXPECT_LT(RelError(weights[0], weights[1]), kTol);
}

TEST(FaastStoreTest, ManySmallBatchesAndTxnsEqualOneLarge) {
  const int64_t n = 96, d = 16;
  std::mt19937_64 rng(3);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  // Labels that first appear late: c5..c7 only in the last third.
  std::vector<std::string> labels = RandomLabels(rng, n, 5);
  for (int64_t r = 2 * n / 3; r < n; r += 3) labels[r] = "c" + std::to_string(5 + r % 3);
  auto backend = kernels::MakeCpuBackend();
  auto one = MakeStore(LabelSpec(), backend.get());
  auto many = MakeStore(LabelSpec(), backend.get());
  ASSERT_TRUE(Apply(*one, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  std::mt19937_64 sizes(4);
  std::uniform_int_distribution<int64_t> batch_size(1, 7), batches_per_txn(1, 4);
  int64_t row = 0, txns = 0;
  while (row < n) {
    std::unique_ptr<Txn> txn = many->Begin(TxnKind::kAdapt);
    for (int64_t b = batches_per_txn(sizes); b > 0 && row < n; --b) {
      const int64_t rows = std::min(batch_size(sizes), n - row);
      ASSERT_TRUE(txn->Add(LabelBatch(keys, d, labels, row, rows)).ok());
      row += rows;
    }
    ASSERT_TRUE(many->Commit(*txn).ok());
    ++txns;
  }
  EXPECT_GT(txns, 5);
  ASSERT_TRUE(CompileNow(*one).ok());
  ASSERT_TRUE(CompileNow(*many).ok());
  EXPECT_EQ(*one->published()->label_names, *many->published()->label_names);
  EXPECT_LT(RelError(Weights(*many), Weights(*one)), kSameSumTol);
  adapt::v1::StoreInfo a, b;
  one->Describe(&a);
  many->Describe(&b);
  EXPECT_EQ(a.examples(), b.examples());
  EXPECT_DOUBLE_EQ(a.weighted_examples(), b.weighted_examples());
}

void CheckForgetUndoesAdapt(int64_t n_a, int64_t n_b, int64_t d, const std::string& solver) {
  const int64_t m = 2;
  std::mt19937_64 rng(5 + n_a);
  const int64_t n = n_a + n_b;
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<float> targets = faast_test::RandomFloats(rng, n * m);
  auto backend = kernels::MakeCpuBackend();
  auto both = MakeStore(VectorSpec(m), backend.get());
  auto only_a = MakeStore(VectorSpec(m), backend.get());
  // Rows [0, n_a) are A, the rest B; adapt B in the middle of A.
  const int64_t half = n_a / 2;
  ASSERT_TRUE(
      Apply(*both, TxnKind::kAdapt,
            {VectorBatch(keys, d, targets, m, 0, half), VectorBatch(keys, d, targets, m, n_a, n_b),
             VectorBatch(keys, d, targets, m, half, n_a - half)})
          .ok());
  ASSERT_TRUE(Apply(*only_a, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, n_a)}).ok());
  // Forget B in two transactions, in a different order.
  const int64_t cut = n_b / 3;
  ASSERT_TRUE(
      Apply(*both, TxnKind::kForget, {VectorBatch(keys, d, targets, m, n_a + cut, n_b - cut)})
          .ok());
  absl::StatusOr<CommitResult> r =
      Apply(*both, TxnKind::kForget, {VectorBatch(keys, d, targets, m, n_a, cut)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples, static_cast<uint64_t>(cut));
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*both);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->faast().solver(), solver);
  ASSERT_TRUE(CompileNow(*only_a).ok());
  EXPECT_LT(RelError(Weights(*both), Weights(*only_a)), kTol);
  adapt::v1::StoreInfo info;
  both->Describe(&info);
  EXPECT_EQ(info.examples(), static_cast<uint64_t>(n_a));
  EXPECT_DOUBLE_EQ(info.weighted_examples(), static_cast<double>(n_a));
}

TEST(FaastStoreTest, ForgetUndoesAdaptOnGramPath) {
  CheckForgetUndoesAdapt(60, 30, 16, "spectral");
}

TEST(FaastStoreTest, ForgetUndoesAdaptOnFewShotPath) {
  CheckForgetUndoesAdapt(10, 6, 40, "few_shot");
}

TEST(FaastStoreTest, ForgetWithoutExactPairDropsRawPairsForGood) {
  const int64_t d = 30;
  std::mt19937_64 rng(6);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 8 * d);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt,
                    {LabelBatch(keys, d, {"a", "b", "a", "b", "a", "b", "a", "b"})})
                  .ok());
  ASSERT_TRUE(store->Snapshot()->faast().raw_kept());
  // A key that was never adapted, under a known label.
  std::vector<float> other = faast_test::RandomFloats(rng, d);
  ASSERT_TRUE(Apply(*store, TxnKind::kForget, {LabelBatch(other, d, {"a"})}).ok());
  EXPECT_FALSE(store->Snapshot()->faast().raw_kept());
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->faast().solver(), "spectral");
  // Adapting again below dim does not bring the raw pairs back.
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, {"a"})}).ok());
  EXPECT_FALSE(store->Snapshot()->faast().raw_kept());
}

TEST(FaastStoreTest, LateLabelAddsColumnAndKeepsOlderVersionIntact) {
  const int64_t d = 12;
  std::mt19937_64 rng(7);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 60 * d);
  std::vector<std::string> labels(60);
  for (int r = 0; r < 60; ++r) labels[r] = r < 40 ? (r % 2 ? "b" : "a") : (r % 3 ? "c" : "a");
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  std::shared_ptr<const FaastWeights> v1 = store->published();
  const std::vector<double> v1_weights = v1->s;
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels, 40, 20)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  std::shared_ptr<const FaastWeights> v2 = store->published();
  EXPECT_EQ(v1->columns, 2);
  EXPECT_EQ(*v1->label_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(v1->s, v1_weights);
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->columns, 3);
  EXPECT_EQ(*v2->label_names, (std::vector<std::string>{"a", "b", "c"}));
  std::vector<std::string> order;
  const std::vector<double> v = FirstSeenOneHot(labels, &order);
  EXPECT_LT(RelError(v2->s, PinvReference(faast_test::ToDoubles(keys), 60, d, v, 3, {}, 1.0 / 60)),
            kTol);
  // Predictions from the new version name three labels.
  absl::StatusOr<Predictions> p = store->Predict(keys.data(), 1, d, 10);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 3);
  EXPECT_EQ(p->label_names->size(), 3u);
}

TEST(FaastStoreTest, TwoTxnsCommittingTheSameNewLabelShareOneColumn) {
  const int64_t d = 6;
  std::mt19937_64 rng(8);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 20 * d);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  std::unique_ptr<Txn> t1 = store->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> t2 = store->Begin(TxnKind::kAdapt);
  std::vector<std::string> l1(10, "x"), l2(10, "y");
  l1[3] = "z";
  l2[0] = "x";
  ASSERT_TRUE(t1->Add(LabelBatch(keys, d, l1)).ok());
  ASSERT_TRUE(
      t2->Add(LabelBatch(std::vector<float>(keys.begin() + 10 * d, keys.end()), d, l2)).ok());
  ASSERT_TRUE(store->Commit(*t2).ok());
  ASSERT_TRUE(store->Commit(*t1).ok());
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(std::vector<std::string>(info.labels().begin(), info.labels().end()),
            (std::vector<std::string>{"x", "y", "z"}));
  ASSERT_TRUE(CompileNow(*store).ok());
  std::vector<std::string> all = l2, order = {"x", "y", "z"};
  all.insert(all.end(), l1.begin(), l1.end());
  std::vector<float> ordered(keys.begin() + 10 * d, keys.end());
  ordered.insert(ordered.end(), keys.begin(), keys.begin() + 10 * d);
  const std::vector<double> v = FirstSeenOneHot(all, &order);
  EXPECT_LT(RelError(Weights(*store),
                     PinvReference(faast_test::ToDoubles(ordered), 20, d, v, 3, {}, 1.0 / 20)),
            kTol);
}

// Decay per example: the k-th of n examples (from 0) weighs γ^(n−1−k), however the stream is
// cut into batches and transactions.
void CheckDecay(int64_t d, bool expect_few_shot) {
  const int64_t m = 2;
  const double gamma = 0.7;
  const std::vector<int64_t> batch_rows = {3, 4, 2, 5, 3};  // 17 rows
  const int64_t n = 17;
  std::mt19937_64 rng(9 + d);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<float> targets = faast_test::RandomFloats(rng, n * m);
  adapt::v1::StoreSpec spec = VectorSpec(m);
  spec.mutable_faast()->set_decay(gamma);
  spec.mutable_faast()->set_alpha(0.9);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(spec, backend.get());
  std::vector<double> w;
  int64_t row = 0;
  // Transactions: {b1, b2}, {b3}, {b4, b5}.
  for (std::vector<int> group : {std::vector<int>{0, 1}, {2}, {3, 4}}) {
    std::vector<ExampleBatch> txn;
    for (int t : group) {
      txn.push_back(VectorBatch(keys, d, targets, m, row, batch_rows[t]));
      for (int64_t r = 0; r < batch_rows[t]; ++r) {
        w.push_back(std::pow(gamma, static_cast<double>(n - 1 - (row + r))));
      }
      row += batch_rows[t];
    }
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, txn).ok());
  }
  double weighted = 0;
  for (double x : w) weighted += x;
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_NEAR(info.weighted_examples(), weighted, 1e-12);
  EXPECT_EQ(info.examples(), static_cast<uint64_t>(n));
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->faast().solver(), expect_few_shot ? "few_shot" : "spectral");
  const std::vector<double> want =
      PinvReference(faast_test::ToDoubles(keys), n, d, faast_test::ToDoubles(targets), m, w,
                    std::pow(weighted, -0.9));
  EXPECT_LT(RelError(Weights(*store), want), kTol);

  // The same stream in one batch, and one example per batch and per transaction: the same
  // weights.
  for (bool one_by_one : {false, true}) {
    auto other = MakeStore(spec, backend.get());
    if (one_by_one) {
      for (int64_t r = 0; r < n; ++r) {
        ASSERT_TRUE(Apply(*other, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, r, 1)}).ok());
      }
    } else {
      ASSERT_TRUE(Apply(*other, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, n)}).ok());
    }
    ASSERT_TRUE(CompileNow(*other).ok());
    EXPECT_LT(RelError(Weights(*other), want), kTol) << (one_by_one ? "one by one" : "one batch");
    adapt::v1::StoreInfo described;
    other->Describe(&described);
    EXPECT_NEAR(described.weighted_examples(), weighted, 1e-12);
  }
}

// Label stores take the one-hot path for C: each example's key is added with its weight.
// Forget is refused on a decaying store, and changes nothing.
TEST(FaastStoreTest, DecayPerExampleOnALabelStoreAndForgetRefused) {
  const int64_t n = 40, d = 6;
  const double gamma = 0.9;
  std::mt19937_64 rng(21);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<std::string> labels = RandomLabels(rng, n, 3);
  adapt::v1::StoreSpec spec = LabelSpec();
  spec.mutable_faast()->set_decay(gamma);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(spec, backend.get());
  for (int64_t from = 0; from < n; from += 7) {
    const int64_t rows = std::min<int64_t>(7, n - from);
    const std::vector<float> k(keys.begin() + from * d, keys.begin() + (from + rows) * d);
    const std::vector<std::string> l(labels.begin() + from, labels.begin() + from + rows);
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(k, d, l)}).ok());
  }
  std::vector<double> w;
  double weighted = 0;
  for (int64_t k = 0; k < n; ++k) {
    w.push_back(std::pow(gamma, static_cast<double>(n - 1 - k)));
    weighted += w.back();
  }
  ASSERT_TRUE(CompileNow(*store).ok());
  std::vector<std::string> order;
  const std::vector<double> v = FirstSeenOneHot(labels, &order);
  const std::vector<double> want = PinvReference(
      faast_test::ToDoubles(keys), n, d, v, static_cast<int64_t>(order.size()), w, 1.0 / weighted);
  EXPECT_LT(RelError(Weights(*store), want), kTol);

  const std::string before = store->Snapshot()->SerializeAsString();
  const std::vector<float> first(keys.begin(), keys.begin() + 2 * d);
  const absl::Status forgot =
      Apply(*store, TxnKind::kForget, {LabelBatch(first, d, {labels[0], labels[1]})}).status();
  EXPECT_EQ(forgot.code(), absl::StatusCode::kFailedPrecondition) << forgot;
  EXPECT_NE(forgot.message().find("spec.faast.decay = 0.9"), std::string::npos) << forgot;
  EXPECT_EQ(store->Snapshot()->SerializeAsString(), before);
}

TEST(FaastStoreTest, DecayMatchesWeightedReferenceOnGramPath) { CheckDecay(8, false); }
TEST(FaastStoreTest, DecayMatchesWeightedReferenceOnFewShotPath) { CheckDecay(30, true); }

TEST(FaastStoreTest, RidgeOverrideMatchesDirectSolveAndPersists) {
  const int64_t n = 50, d = 10;
  std::mt19937_64 rng(10);
  const std::vector<float> keys = faast_test::RandomFloats(rng, n * d);
  const std::vector<float> targets = faast_test::RandomFloats(rng, n);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(VectorSpec(1), backend.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, 1, 0, n)}).ok());
  adapt::v1::FaastParams overrides;
  overrides.set_ridge(2.5);
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store, overrides);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->faast().solver(), "ridge");
  EXPECT_LT(RelError(Weights(*store),
                     faast_test::RidgeReference(faast_test::ToDoubles(keys), n, d,
                                                faast_test::ToDoubles(targets), 1, {}, 2.5)),
            kTol);
  EXPECT_DOUBLE_EQ(store->spec().faast().ridge(), 2.5);
  ASSERT_TRUE(CompileNow(*store).ok());  // later compiles keep the override
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.faast().solver(), "ridge");
  EXPECT_EQ(info.version(), 2u);
}

TEST(FaastStoreTest, ChangedSinceCompileFollowsAdaptsForgetsAndCompiles) {
  const int64_t d = 4;
  std::mt19937_64 rng(5);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 6 * d);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  const std::vector<std::string> labels = {"a", "b", "a", "b", "a", "b"};
  EXPECT_FALSE(store->ChangedSinceCompile());  // empty
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  EXPECT_TRUE(store->ChangedSinceCompile());
  ASSERT_TRUE(CompileNow(*store).ok());
  EXPECT_FALSE(store->ChangedSinceCompile());
  ASSERT_TRUE(Apply(*store, TxnKind::kForget, {LabelBatch(keys, d, labels)}).ok());
  EXPECT_TRUE(store->ChangedSinceCompile());
  ASSERT_TRUE(CompileNow(*store).ok());
  EXPECT_FALSE(store->ChangedSinceCompile());
}

TEST(FaastStoreTest, ForgettingEverythingPublishesZeroWeights) {
  const int64_t d = 5;
  std::mt19937_64 rng(11);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 10 * d);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  std::vector<std::string> labels(10, "p");
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  ASSERT_TRUE(Apply(*store, TxnKind::kForget, {LabelBatch(keys, d, labels)}).ok());
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->version(), 2u);
  EXPECT_EQ(Weights(*store), std::vector<double>(d, 0.0));
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.examples(), 0u);
  EXPECT_EQ(info.weighted_examples(), 0.0);
}

}  // namespace
}  // namespace adaptd
