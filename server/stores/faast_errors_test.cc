// FaastStore caller errors (each must leave the store unchanged), predict rules, prequential
// evaluation and auto-compile wishes.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_test_util.h"

namespace adaptd {
namespace {

using absl::StatusCode;
using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::Fingerprint;
using faast_test::LabelBatch;
using faast_test::LabelSpec;
using faast_test::MakeStore;
using faast_test::VectorBatch;
using faast_test::VectorSpec;
using testing_util::StartsWithField;

class FaastErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rng_.seed(42);
    keys_ = faast_test::RandomFloats(rng_, 40 * kDim);
    store_ = MakeStore(LabelSpec(), &backend_);
    std::vector<std::string> labels(20);
    for (int r = 0; r < 20; ++r) labels[r] = r % 2 ? "b" : "a";
    ASSERT_TRUE(Apply(*store_, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels)}).ok());
    ASSERT_TRUE(CompileNow(*store_).ok());
    before_ = Fingerprint(*store_);
  }
  void ExpectUnchanged() { EXPECT_EQ(Fingerprint(*store_), before_); }

  static constexpr int64_t kDim = 8;
  std::mt19937_64 rng_;
  std::vector<float> keys_;
  faast_test::FlakyBackend backend_;
  std::unique_ptr<FaastStore> store_;
  std::string before_;
};

TEST_F(FaastErrorsTest, DimensionMismatchNamesBothDimensions) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kAdapt);
  absl::Status s = txn->Add(LabelBatch(keys_, 5, {"a"}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input: dimension 5 does not match the store's dimension 8");
  EXPECT_EQ(txn->staged(), 0u);
  ASSERT_TRUE(store_->Commit(*txn).ok());  // empty: nothing happens
  ExpectUnchanged();
}

TEST_F(FaastErrorsTest, DimensionFixedByAnotherCommitFailsAtCommit) {
  auto fresh = MakeStore(LabelSpec(), &backend_);
  std::unique_ptr<Txn> t1 = fresh->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> t2 = fresh->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(t1->Add(LabelBatch(keys_, 4, {"a"})).ok());
  ASSERT_TRUE(t2->Add(LabelBatch(keys_, 6, {"a"})).ok());
  ASSERT_TRUE(fresh->Commit(*t1).ok());
  EXPECT_EQ(fresh->dim(), 4);
  EXPECT_EQ(fresh->spec().dim(), 4u);
  const std::string mid = Fingerprint(*fresh);
  absl::StatusOr<CommitResult> r = fresh->Commit(*t2);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "examples[0].input: dimension 6 does not match the store's dimension 4");
  EXPECT_EQ(Fingerprint(*fresh), mid);
}

TEST_F(FaastErrorsTest, SpecDimIsEnforcedFromTheStart) {
  auto fixed = MakeStore(VectorSpec(2, 3), &backend_);
  EXPECT_EQ(fixed->dim(), 3);
  std::unique_ptr<Txn> txn = fixed->Begin(TxnKind::kAdapt);
  std::vector<float> targets = {1, 2};
  absl::Status s = txn->Add(VectorBatch(keys_, 4, targets, 2, 0, 1));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input: dimension 4 does not match the store's dimension 3");
}

TEST_F(FaastErrorsTest, MaxLabelsAtAddAndAtCommit) {
  adapt::v1::StoreSpec spec = LabelSpec();
  spec.mutable_faast()->set_max_labels(3);
  auto small = MakeStore(spec, &backend_);
  ASSERT_TRUE(Apply(*small, TxnKind::kAdapt, {LabelBatch(keys_, kDim, {"a", "b"})}).ok());
  const std::string start = Fingerprint(*small);
  std::unique_ptr<Txn> txn = small->Begin(TxnKind::kAdapt);
  absl::Status s = txn->Add(LabelBatch(keys_, kDim, {"a", "c", "d"}));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "spec.faast.max_labels: the store would hold 4 labels, more than its limit of 3");
  EXPECT_EQ(txn->staged(), 0u);
  // Each under the limit alone, over it together: the second commit fails.
  std::unique_ptr<Txn> t1 = small->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> t2 = small->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(t1->Add(LabelBatch(keys_, kDim, {"c"})).ok());
  ASSERT_TRUE(t2->Add(LabelBatch(keys_, kDim, {"d"})).ok());
  ASSERT_TRUE(small->Commit(*t1).ok());
  const std::string mid = Fingerprint(*small);
  EXPECT_NE(mid, start);
  absl::StatusOr<CommitResult> r = small->Commit(*t2);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Fingerprint(*small), mid);
}

TEST_F(FaastErrorsTest, ForgetUnknownLabelAndTooManyExamples) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kForget);
  absl::Status s = txn->Add(LabelBatch(keys_, kDim, {"a", "never"}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].label: label 'never' was never adapted to this store");
  std::vector<std::string> many(21, "a");
  s = txn->Add(LabelBatch(keys_, kDim, many));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "examples: cannot forget 21 examples, the store holds 20");
  EXPECT_EQ(txn->staged(), 0u);
  // Two forget transactions that fit alone but not together.
  std::unique_ptr<Txn> t1 = store_->Begin(TxnKind::kForget);
  std::unique_ptr<Txn> t2 = store_->Begin(TxnKind::kForget);
  ASSERT_TRUE(t1->Add(LabelBatch(keys_, kDim, std::vector<std::string>(15, "a"))).ok());
  ASSERT_TRUE(t2->Add(LabelBatch(keys_, kDim, std::vector<std::string>(15, "b"))).ok());
  ExpectUnchanged();
  ASSERT_TRUE(store_->Commit(*t1).ok());
  const std::string mid = Fingerprint(*store_);
  EXPECT_EQ(store_->Commit(*t2).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Fingerprint(*store_), mid);
}

TEST_F(FaastErrorsTest, ForgetOnEmptyStoreIsFailedPrecondition) {
  auto empty = MakeStore(VectorSpec(1), &backend_);
  std::unique_ptr<Txn> txn = empty->Begin(TxnKind::kForget);
  std::vector<float> target = {1};
  EXPECT_EQ(txn->Add(VectorBatch(keys_, kDim, target, 1, 0, 1)).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(FaastErrorsTest, CommitTwiceAndForeignTransactions) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(LabelBatch(keys_, kDim, {"a"})).ok());
  ASSERT_TRUE(store_->Commit(*txn).ok());
  const std::string after = Fingerprint(*store_);
  EXPECT_EQ(store_->Commit(*txn).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(txn->Add(LabelBatch(keys_, kDim, {"a"})).code(), StatusCode::kFailedPrecondition);
  auto other = MakeStore(LabelSpec(), &backend_);
  std::unique_ptr<Txn> foreign = other->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(foreign->Add(LabelBatch(keys_, kDim, {"a"})).ok());
  EXPECT_EQ(store_->Commit(*foreign).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fingerprint(*store_), after);
}

TEST_F(FaastErrorsTest, BadBatchShapesAndValues) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kAdapt);
  ExampleBatch b = LabelBatch(keys_, kDim, {"a", "b"});
  b.keys[kDim + 3] = std::nanf("");
  absl::Status s = txn->Add(b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].input: value 3 is not finite");
  b = LabelBatch(keys_, kDim, {"a", ""});
  EXPECT_EQ(txn->Add(b).message(), "examples[1].label: is empty");
  b.labels.pop_back();
  EXPECT_EQ(txn->Add(b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->staged(), 0u);
  ExpectUnchanged();
}

TEST_F(FaastErrorsTest, BackendFailureMidStageBreaksOnlyTheTransaction) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(LabelBatch(keys_, kDim, {"a"})).ok());
  backend_.fail_syrk = true;
  EXPECT_FALSE(txn->Add(LabelBatch(keys_, kDim, {"b"})).ok());
  backend_.fail_syrk = false;
  EXPECT_EQ(store_->Commit(*txn).status().code(), StatusCode::kFailedPrecondition);
  ExpectUnchanged();
}

TEST_F(FaastErrorsTest, FailedCompileKeepsVersionSpecAndPending) {
  ASSERT_TRUE(Apply(*store_, TxnKind::kAdapt, {LabelBatch(keys_, kDim, {"a", "b", "a"})}).ok());
  const std::string start = Fingerprint(*store_);
  backend_.fail_cholesky = true;
  adapt::v1::FaastParams ridge;
  ridge.set_ridge(1e-3);
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store_, ridge);
  backend_.fail_cholesky = false;
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  // Not a caller's field: the solve's own failure, with the remedy.
  EXPECT_TRUE(absl::StartsWith(c.status().message(),
                               "ridge solve failed: G + ridge·I is not positive definite with "
                               "ridge = 0.001 ("))
      << c.status();
  EXPECT_EQ(Fingerprint(*store_), start);
  backend_.fail_eigen = true;
  EXPECT_FALSE(CompileNow(*store_).ok());
  backend_.fail_eigen = false;
  EXPECT_EQ(Fingerprint(*store_), start);
}

TEST_F(FaastErrorsTest, InvalidCompileOverridesNameTheField) {
  adapt::v1::FaastParams bad;
  bad.set_rcond(2);
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store_, bad);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), "faast.rcond: must be in (0, 1), got 2");
  bad.Clear();
  bad.set_decay(0.5);
  EXPECT_TRUE(StartsWithField(CompileNow(*store_, bad).status().message(), "faast.decay"));
  ExpectUnchanged();
}

TEST_F(FaastErrorsTest, CompileWithoutExamplesAndPredictBeforeCompile) {
  auto empty = MakeStore(LabelSpec(), &backend_);
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*empty);
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(), "the store holds no examples: adapt some examples first");
  absl::StatusOr<Predictions> p = empty->Predict(keys_.data(), 1, kDim, 1);
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.status().message(),
            "the store has no compiled version yet: call Compile (or wait for the auto-compile)");
}

TEST_F(FaastErrorsTest, PredictDimensionAndTopK) {
  absl::StatusOr<Predictions> p = store_->Predict(keys_.data(), 2, 3, 1);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "inputs: dimension 3 does not match the store's dimension 8");
  p = store_->Predict(keys_.data(), 2, kDim, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 1);
  EXPECT_EQ(p->label_ids.size(), 2u);
  p = store_->Predict(keys_.data(), 2, kDim, 50);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 2);
  EXPECT_EQ(p->rows, 2);
  p = store_->Predict(keys_.data(), 0, kDim, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->rows, 0);
}

TEST(FaastPrequentialTest, LabelsCountTopOneHitsAndUnknownLabelsAsMisses) {
  const int64_t d = 4;
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  // Two well separated classes along the first two axes.
  std::vector<float> keys = {1, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0};
  std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(LabelBatch(keys, d, {"x", "y", "x", "y"})).ok());
  absl::StatusOr<CommitResult> r = store->Commit(*txn);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prequential.evaluated, 0u);  // nothing published yet
  ASSERT_TRUE(CompileNow(*store).ok());
  r = Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, {"x", "y", "y", "new"})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prequential.evaluated, 4u);
  EXPECT_EQ(r->prequential.correct, 2u);
  EXPECT_DOUBLE_EQ(r->prequential.loss_sum, 2.0);
  EXPECT_EQ(r->version, 1u);
  // Forgets are not evaluated.
  r = Apply(*store, TxnKind::kForget, {LabelBatch(keys, d, {"x"})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prequential.evaluated, 0u);
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.prequential_evaluated(), 4u);
  EXPECT_EQ(info.prequential_correct(), 2u);
}

TEST(FaastPrequentialTest, VectorsSumSquaredErrorOverWidth) {
  const int64_t d = 2, m = 2;
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(VectorSpec(m), backend.get());
  // S = identity from keys e1, e2 with targets e1, e2.
  std::vector<float> keys = {1, 0, 0, 1}, targets = {1, 0, 0, 1};
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, d, targets, m, 0, 2)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  std::vector<float> k2 = {2, 0}, t2 = {0, 1};  // predicted (2, 0): error (4 + 1) / 2
  absl::StatusOr<CommitResult> r =
      Apply(*store, TxnKind::kAdapt, {VectorBatch(k2, d, t2, m, 0, 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prequential.evaluated, 1u);
  EXPECT_NEAR(r->prequential.loss_sum, 2.5, 1e-12);
}

TEST(FaastAutoCompileTest, CountAndIdleTriggers) {
  const int64_t d = 3;
  adapt::v1::StoreSpec spec = LabelSpec();
  spec.mutable_faast()->set_auto_compile_every(10);
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(spec, backend.get());
  std::mt19937_64 rng(5);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 10 * d);
  std::vector<std::string> labels(6, "a");
  absl::StatusOr<CommitResult> r = Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->compile_now);
  EXPECT_EQ(r->compile_after, absl::Milliseconds(200));
  r = Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, std::vector<std::string>(4, "b"))});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->compile_now);
  absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*store);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->faast().pending_examples(), 0u);
  r = Apply(*store, TxnKind::kAdapt, {});  // empty: nothing uncompiled
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->compile_now);
  EXPECT_EQ(r->compile_after, absl::ZeroDuration());
  EXPECT_EQ(r->version, 1u);

  spec.mutable_faast()->set_auto_compile_every(0);
  spec.mutable_faast()->set_auto_compile_delay_ms(0);
  auto quiet = MakeStore(spec, backend.get());
  r = Apply(*quiet, TxnKind::kAdapt, {LabelBatch(keys, d, std::vector<std::string>(10, "a"))});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->compile_now);
  EXPECT_EQ(r->compile_after, absl::ZeroDuration());
}

TEST(FaastDescribeTest, ReportsCountsMemoryAndStats) {
  const int64_t d = 10;
  auto backend = kernels::MakeCpuBackend();
  auto store = MakeStore(LabelSpec(), backend.get());
  std::mt19937_64 rng(6);
  const std::vector<float> keys = faast_test::RandomFloats(rng, 30 * d);
  std::vector<std::string> labels(30);
  for (int r = 0; r < 30; ++r) labels[r] = "l" + std::to_string(r % 4);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.version(), 0u);
  EXPECT_EQ(info.faast().pending_examples(), 30u);
  ASSERT_TRUE(CompileNow(*store).ok());
  store->Describe(&info);
  EXPECT_EQ(info.spec().faast().alpha(), 1.0);
  EXPECT_EQ(info.spec().dim(), static_cast<uint32_t>(d));
  EXPECT_EQ(info.version(), 1u);
  EXPECT_EQ(info.examples(), 30u);
  EXPECT_EQ(info.labels_size(), 4);
  // G (d²) + C (d × 4) + S (d × 4) doubles at least.
  EXPECT_GE(info.memory_bytes(), (d * d + 2 * d * 4) * sizeof(double));
  EXPECT_EQ(info.faast().solver(), "spectral");
  EXPECT_EQ(info.faast().effective_rank(), static_cast<uint32_t>(d));
  EXPECT_NEAR(info.faast().cutoff(), 1.0 / 30, 1e-15);
  EXPECT_GE(info.faast().condition_number(), 1.0);
  EXPECT_GE(info.faast().compile_seconds(), 0.0);
  EXPECT_EQ(info.faast().pending_examples(), 0u);
  // The float read-out built for grouped predicts is held, and counted.
  ASSERT_NE(store->Readout(), nullptr);
  adapt::v1::StoreInfo with_readout;
  store->Describe(&with_readout);
  EXPECT_EQ(with_readout.memory_bytes(), info.memory_bytes() + d * 4 * sizeof(float));
  // A transaction's d × d buffer goes back to the shared pool, not to the store.
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, d, labels)}).ok());
  adapt::v1::StoreInfo after_txn;
  store->Describe(&after_txn);
  EXPECT_EQ(after_txn.memory_bytes(), with_readout.memory_bytes());
}

}  // namespace
}  // namespace adaptd
