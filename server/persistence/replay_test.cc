// Replay of write records with and without the prequential figures the call counted as it
// staged (WalWrite.prequential): a record without them (written before the field, or by a kind
// that counts at commit) replays as it always did, evaluating against the version the call
// met; one with them commits exactly those figures, evaluating nothing.
#include "server/persistence/replay.h"

#include <memory>

#include "gtest/gtest.h"
#include "server/persistence/journal.h"
#include "server/persistence/journal_test_util.h"
#include "server/stores/faast_store.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

// Over JournalFixture for its stores and batches; the journal itself is not opened.
class ReplayTest : public JournalFixture {
 protected:
  std::unique_ptr<Store> NewStore(adapt::v1::StoreKind kind = adapt::v1::STORE_KIND_FAAST) {
    adapt::v1::StoreSpec spec = Spec();
    spec.set_kind(kind);
    absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend_.get());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // An Adapt record of Batch(rows, seed), without figures.
  static adapt::v1::WalWrite AdaptRecord(int rows, uint32_t seed) {
    adapt::v1::WalWrite write;
    *write.add_batches() = ToWalBatch(Batch(rows, seed));
    return write;
  }

  // The log a faast store wrote: an adapt, a compile, an adapt evaluated against that
  // compile (`second`, with the figures it counted when `with_figures`). live_ ran it.
  void WriteFaastLog(bool with_figures) {
    live_ = NewStore();
    first_ = AdaptRecord(8, 1);
    second_ = AdaptRecord(6, 2);
    ASSERT_TRUE(ReplayWrite(*live_, first_).ok());
    adapt::v1::CompileRequest request;
    ASSERT_TRUE(live_->Compile(request).ok());
    compile_ = CompileRecord(1, request, nullptr);
    std::unique_ptr<Txn> txn = live_->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(txn->Add(Batch(6, 2)).ok());
    if (with_figures) *second_.mutable_prequential() = ToWalPrequential(*txn->StagedPrequential());
    ASSERT_TRUE(live_->Commit(*txn).ok());
  }

  // A new store that replayed the log, `second` in place of second_, not yet finished.
  std::unique_ptr<FaastStore> Replay(const adapt::v1::WalWrite& second) {
    std::unique_ptr<Store> replayed = NewStore();
    EXPECT_TRUE(ReplayWrite(*replayed, first_).ok());
    EXPECT_TRUE(ReplayCompile(*replayed, compile_));
    EXPECT_TRUE(ReplayWrite(*replayed, second).ok());
    return std::unique_ptr<FaastStore>(dynamic_cast<FaastStore*>(replayed.release()));
  }

  static PrequentialStats PrequentialOf(const Store& store) {
    adapt::v1::StoreInfo info;
    store.Describe(&info);
    return {info.prequential_evaluated(), info.prequential_correct(), info.prequential_loss_sum()};
  }

  std::unique_ptr<Store> live_;
  adapt::v1::WalWrite first_, second_;
  adapt::v1::WalRecord compile_;
};

TEST_F(ReplayTest, AWriteRecordWithoutFiguresEvaluatesAgainstTheCompileBeforeIt) {
  ASSERT_NO_FATAL_FAILURE(WriteFaastLog(/*with_figures=*/false));
  ASSERT_FALSE(second_.has_prequential());
  std::unique_ptr<FaastStore> replayed = Replay(second_);
  ASSERT_NE(replayed, nullptr);
  EXPECT_EQ(replayed->solves(), 1u);  // the compile, solved before the write read it
  ASSERT_TRUE(FinishReplay(*replayed).ok());
  EXPECT_EQ(replayed->solves(), 1u);
  const PrequentialStats live = PrequentialOf(*live_), got = PrequentialOf(*replayed);
  EXPECT_EQ(got.evaluated, 6u);
  EXPECT_EQ(got.evaluated, live.evaluated);
  EXPECT_EQ(got.correct, live.correct);
  EXPECT_EQ(got.loss_sum, live.loss_sum);
}

TEST_F(ReplayTest, AWriteRecordWithFiguresCommitsThemAndSolvesNothingBeforeIt) {
  ASSERT_NO_FATAL_FAILURE(WriteFaastLog(/*with_figures=*/true));
  ASSERT_TRUE(second_.has_prequential());
  EXPECT_EQ(second_.prequential().evaluated(), 6u);
  std::unique_ptr<FaastStore> replayed = Replay(second_);
  ASSERT_NE(replayed, nullptr);
  EXPECT_EQ(replayed->solves(), 0u);
  ASSERT_TRUE(FinishReplay(*replayed).ok());
  EXPECT_EQ(replayed->solves(), 1u);
  EXPECT_EQ(replayed->published()->s, dynamic_cast<FaastStore&>(*live_).published()->s);
  const PrequentialStats live = PrequentialOf(*live_), got = PrequentialOf(*replayed);
  EXPECT_EQ(got.evaluated, live.evaluated);
  EXPECT_EQ(got.correct, live.correct);
  EXPECT_EQ(got.loss_sum, live.loss_sum);

  // The recorded figures are what the commit counts: replay does not evaluate them again.
  adapt::v1::WalWrite edited = second_;
  edited.mutable_prequential()->set_correct(5);
  edited.mutable_prequential()->set_loss_sum(0.5);
  const PrequentialStats taken = PrequentialOf(*Replay(edited));
  EXPECT_EQ(taken.evaluated, 6u);
  EXPECT_EQ(taken.correct, 5u);
  EXPECT_EQ(taken.loss_sum, 0.5);
}

// falcon evaluates at commit, in log order: its transactions report no figures, and figures
// in a record (none are written for it) are not taken.
TEST_F(ReplayTest, FalconCountsAtCommitAndTakesNoFigures) {
  std::unique_ptr<Store> live = NewStore(adapt::v1::STORE_KIND_FALCON);
  std::unique_ptr<Txn> txn = live->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(txn->Add(Batch(6, 3)).ok());
  EXPECT_FALSE(txn->StagedPrequential().has_value());

  adapt::v1::WalWrite write = AdaptRecord(6, 3);
  std::unique_ptr<Store> plain = NewStore(adapt::v1::STORE_KIND_FALCON);
  ASSERT_TRUE(ReplayWrite(*plain, write).ok());
  write.mutable_prequential()->set_evaluated(1000);
  std::unique_ptr<Store> with_figures = NewStore(adapt::v1::STORE_KIND_FALCON);
  ASSERT_TRUE(ReplayWrite(*with_figures, write).ok());
  const PrequentialStats a = PrequentialOf(*plain), b = PrequentialOf(*with_figures);
  EXPECT_EQ(b.evaluated, 6u);
  EXPECT_EQ(b.evaluated, a.evaluated);
  EXPECT_EQ(b.loss_sum, a.loss_sum);
}

// fwpkm counts as it stages, against the state the call met: two calls staged before either
// commits each count against the state before both, which replay, applying them one after the
// other, would not meet again. Their records carry the figures, and replay commits exactly those.
TEST_F(ReplayTest, FwpkmRecordsCarryWhatConcurrentCallsCounted) {
  std::unique_ptr<Store> live = NewStore(adapt::v1::STORE_KIND_FWPKM);
  ASSERT_NE(live, nullptr);
  adapt::v1::WalWrite first = AdaptRecord(8, 4);
  ASSERT_TRUE(ReplayWrite(*live, first).ok());
  std::unique_ptr<Txn> a = live->Begin(TxnKind::kAdapt);
  std::unique_ptr<Txn> b = live->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(a->Add(Batch(8, 4)).ok());  // the examples the store holds already
  ASSERT_TRUE(b->Add(Batch(8, 4)).ok());
  ASSERT_TRUE(a->StagedPrequential().has_value());
  adapt::v1::WalWrite second = AdaptRecord(8, 4), third = AdaptRecord(8, 4);
  *second.mutable_prequential() = ToWalPrequential(*a->StagedPrequential());
  *third.mutable_prequential() = ToWalPrequential(*b->StagedPrequential());
  ASSERT_TRUE(live->Commit(*a).ok());
  ASSERT_TRUE(live->Commit(*b).ok());

  std::unique_ptr<Store> replayed = NewStore(adapt::v1::STORE_KIND_FWPKM);
  for (const adapt::v1::WalWrite* write : {&first, &second, &third}) {
    ASSERT_TRUE(ReplayWrite(*replayed, *write).ok());
  }
  const PrequentialStats want = PrequentialOf(*live), got = PrequentialOf(*replayed);
  EXPECT_EQ(got.evaluated, 16u);  // the first call met an empty store: nothing to evaluate
  EXPECT_EQ(got.evaluated, want.evaluated);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_EQ(got.loss_sum, want.loss_sum);

  // Taken as recorded, not evaluated again.
  adapt::v1::WalWrite edited = second;
  edited.mutable_prequential()->set_correct(3);
  edited.mutable_prequential()->set_evaluated(8);
  std::unique_ptr<Store> edited_store = NewStore(adapt::v1::STORE_KIND_FWPKM);
  ASSERT_TRUE(ReplayWrite(*edited_store, edited).ok());
  EXPECT_EQ(PrequentialOf(*edited_store).correct, 3u);
}

}  // namespace
}  // namespace adaptd
