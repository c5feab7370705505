// FwpkmStore caller errors: each names its field and leaves the store unchanged.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/fwpkm_test_util.h"

namespace adaptd {
namespace {

using absl::StatusCode;
using adapt::v1::OutputSpec;
using fwpkm_test::Fingerprint;
using fwpkm_test::Gaussian;
using fwpkm_test::LabelBatch;
using testing_util::StartsWithField;

class FwpkmErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_LABELS, 0, 0);
    spec.mutable_fwpkm()->set_sub_keys(16);
    spec.mutable_fwpkm()->set_chunk(3);
    spec.mutable_fwpkm()->set_max_labels(3);
    store_ = fwpkm_test::Make(spec);
    keys_ = Gaussian(rng_, 40 * kDim);
    ASSERT_TRUE(fwpkm_test::Apply(*store_, Batch(4, {"a", "b", "a", "b"})).ok());
    before_ = Fingerprint(*store_);
  }
  ExampleBatch Batch(int rows, std::vector<std::string> labels, int64_t dim = kDim) {
    return LabelBatch(std::vector<float>(keys_.begin(), keys_.begin() + rows * dim), dim,
                      std::move(labels));
  }
  void ExpectUnchanged() { EXPECT_EQ(Fingerprint(*store_), before_); }

  static constexpr int64_t kDim = 6;
  std::mt19937_64 rng_{16};
  std::vector<float> keys_;
  std::unique_ptr<FwpkmStore> store_;
  std::string before_;
};

TEST_F(FwpkmErrorsTest, BadBatchesAreRefusedAtAdd) {
  std::unique_ptr<Txn> txn = store_->Begin(TxnKind::kAdapt);
  absl::Status s = txn->Add(Batch(2, {"a", "b"}, 5));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input: dimension 5 does not match the store's dimension 6");
  ExampleBatch nan = Batch(2, {"a", "b"});
  nan.keys[7] = NAN;
  s = txn->Add(nan);
  EXPECT_EQ(s.message(), "examples[1].input: value 1 is not finite");
  s = txn->Add(Batch(2, {"a", ""}));
  EXPECT_EQ(s.message(), "examples[1].label: is empty");
  s = txn->Add(Batch(2, {"c", "d"}));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(StartsWithField(s.message(), "spec.fwpkm.max_labels"));
  ExampleBatch seq = Batch(2, {});
  seq.sequence = true;
  EXPECT_EQ(txn->Add(seq).code(), StatusCode::kInvalidArgument);
  ExampleBatch zero_passes = Batch(1, {"a"});
  zero_passes.passes = 0;
  EXPECT_EQ(txn->Add(zero_passes).message(), "passes: must be at least 1, got 0");
  EXPECT_EQ(txn->staged(), 0u);
  ASSERT_TRUE(store_->Commit(*txn).ok());
  ExpectUnchanged();
  std::unique_ptr<Txn> forget = store_->Begin(TxnKind::kForget);
  EXPECT_EQ(forget->Add(Batch(1, {"a"})).code(), StatusCode::kFailedPrecondition);
}

TEST_F(FwpkmErrorsTest, ConflictsFoundAtCommitLeaveTheStoreUnchanged) {
  std::unique_ptr<Txn> first = store_->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> second = store_->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(first->Add(Batch(2, {"c", "c"})).ok());
  ASSERT_TRUE(second->Add(Batch(1, {"d"})).ok());
  ASSERT_TRUE(store_->Commit(*first).ok());
  before_ = Fingerprint(*store_);
  absl::StatusOr<CommitResult> r = store_->Commit(*second);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  ExpectUnchanged();
  EXPECT_EQ(store_->Commit(*first).status().code(), StatusCode::kFailedPrecondition);
  ExpectUnchanged();
}

TEST_F(FwpkmErrorsTest, DimensionFixedByAnotherCommit) {
  adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_VECTOR, 2, 0);
  std::unique_ptr<FwpkmStore> fresh = fwpkm_test::Make(spec);
  std::unique_ptr<Txn> a = fresh->Begin(TxnKind::kAdapt), b = fresh->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(a->Add(fwpkm_test::VectorBatch(Gaussian(rng_, 4), 4, Gaussian(rng_, 2))).ok());
  ASSERT_TRUE(b->Add(fwpkm_test::VectorBatch(Gaussian(rng_, 5), 5, Gaussian(rng_, 2))).ok());
  ASSERT_TRUE(fresh->Commit(*a).ok());
  const std::string before = Fingerprint(*fresh);
  EXPECT_EQ(fresh->Commit(*b).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fingerprint(*fresh), before);
  EXPECT_EQ(fresh->dim(), 4);
}

TEST_F(FwpkmErrorsTest, ReadsAndCompilesCheckTheirInput) {
  auto wrong = store_->Predict(keys_.data(), 1, 5, 1);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  adapt::v1::CompileRequest request;
  request.mutable_faast()->set_rcond(0.1);
  EXPECT_EQ(store_->Compile(request).status().code(), StatusCode::kInvalidArgument);
  ExpectUnchanged();
  std::unique_ptr<FwpkmStore> other =
      fwpkm_test::Make(fwpkm_test::Spec(OutputSpec::KIND_LABELS, 0, 0));
  std::unique_ptr<Txn> foreign = other->Begin(TxnKind::kAdapt);
  EXPECT_EQ(store_->Commit(*foreign).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(other->Compile(adapt::v1::CompileRequest()).status().code(),
            StatusCode::kFailedPrecondition);
  ExpectUnchanged();
}

}  // namespace
}  // namespace adaptd
