// Incremental checkpoints: only changed stores are written; a store whose state cannot be
// written is reported and holds back only its own log; a deleted store's state leaves the
// state database; a data directory of snapshot files (the layout before the state database)
// moves into it at start-up with nothing lost.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/journal.h"
#include "server/persistence/journal_test_util.h"
#include "server/persistence/log_format.h"
#include "server/stores/snapshot_file.h"

namespace adaptd {
namespace {

// A real store whose Snapshot fails while `fail` is set (a test's stand-in for a store too
// large to snapshot); everything else goes to the wrapped store.
class SnapshotFailingStore final : public Store {
 public:
  explicit SnapshotFailingStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {}
  adapt::v1::StoreSpec spec() const override { return inner_->spec(); }
  int64_t dim() const override { return inner_->dim(); }
  std::unique_ptr<Txn> Begin(TxnKind kind) override { return inner_->Begin(kind); }
  absl::StatusOr<CommitResult> Commit(Txn& txn) override { return inner_->Commit(txn); }
  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override {
    return inner_->Predict(keys, rows, dim, top_k);
  }
  absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) override {
    return inner_->Compile(request);
  }
  void Describe(adapt::v1::StoreInfo* info) const override { inner_->Describe(info); }
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override {
    if (fail) return absl::ResourceExhaustedError("the state is too large to snapshot");
    return inner_->Snapshot();
  }

  std::atomic<bool> fail{true};

 private:
  std::shared_ptr<Store> inner_;
};

class JournalCheckpointTest : public JournalFixture {
 protected:
  uint64_t OldestSegment() {
    return ListSegments(Env::Default(), dir_ + "/wal").value().front().first;
  }
};

TEST_F(JournalCheckpointTest, OnlyStoresChangedSinceTheirLastCheckpointAreWritten) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 4, 1).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 4, 2).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_TRUE(Adapt("a", a.get(), 2, 3).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_EQ(checkpoints_.size(), 3u);
  EXPECT_EQ(checkpoints_[0], std::make_pair(uint64_t{2}, uint64_t{0}));
  EXPECT_EQ(checkpoints_[1], std::make_pair(uint64_t{1}, uint64_t{0}));
  EXPECT_EQ(checkpoints_[2], std::make_pair(uint64_t{0}, uint64_t{0}));
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 6u);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 4u);
}

TEST_F(JournalCheckpointTest, AStoreThatCannotBeWrittenIsReportedAndHoldsBackOnlyItsOwnLog) {
  Open();
  std::shared_ptr<SnapshotFailingStore> failing;
  auto a = Create("a", [&](std::shared_ptr<Store> inner) {
    failing = std::make_shared<SnapshotFailingStore>(std::move(inner));
    return failing;
  });
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 4, 1).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 4, 2).ok());

  const absl::Status first = journal_->Checkpoint();
  EXPECT_EQ(first.code(), absl::StatusCode::kInternal) << first;
  EXPECT_TRUE(absl::StrContains(first.message(), "t/a: the state is too large to snapshot"))
      << first;
  EXPECT_FALSE(absl::StrContains(first.message(), "t/b")) << first;
  EXPECT_EQ(journal_->CheckpointError("t", "a"), "checkpoint: the state is too large to snapshot");
  EXPECT_EQ(journal_->CheckpointError("t", "b"), "");
  EXPECT_EQ(checkpoints_.back(), std::make_pair(uint64_t{1}, uint64_t{1}));
  // t/a was created at LSN 1: its records stay in the log.
  EXPECT_EQ(OldestSegment(), 1u);

  // Writes to both go on; once t/a's state can be written, the log goes too.
  ASSERT_TRUE(Adapt("a", a.get(), 2, 3).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 2, 4).ok());
  failing->fail = false;
  ASSERT_TRUE(journal_->Checkpoint().ok());
  EXPECT_EQ(journal_->CheckpointError("t", "a"), "");
  EXPECT_EQ(checkpoints_.back(), std::make_pair(uint64_t{2}, uint64_t{0}));
  EXPECT_GT(OldestSegment(), 1u);
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 6u);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 6u);
}

TEST_F(JournalCheckpointTest, TheLogIsKeptFromTheOldestChangeNotYetWritten) {
  Open();
  std::shared_ptr<SnapshotFailingStore> failing;
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 4, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());  // t/a is stored up to here
  auto b = Create("b", [&](std::shared_ptr<Store> inner) {
    failing = std::make_shared<SnapshotFailingStore>(std::move(inner));
    return failing;
  });
  const uint64_t b_created = journal_->wal().next_lsn() - 1;
  ASSERT_TRUE(Adapt("b", b.get(), 4, 2).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 4, 3).ok());
  EXPECT_FALSE(journal_->Checkpoint().ok());
  // Everything from t/b's creation on is kept (t/a's later write is stored, but its segment
  // also holds t/b's records); nothing before it.
  EXPECT_LE(OldestSegment(), b_created);
  EXPECT_GT(OldestSegment(), 1u);
  auto stores = Open();  // replays t/b from its creation
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 8u);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 4u);
}

TEST_F(JournalCheckpointTest, ADeletedStoreLeavesTheStateDatabaseAndStaysDeleted) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  // The log holds nothing of t/a any more: only the state database could bring it back.
  const auto segments = ListSegments(Env::Default(), dir_ + "/wal").value();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(std::filesystem::file_size(segments[0].second), 0u);
  auto stores = Open();
  EXPECT_TRUE(stores.empty());
}

// Writes the layout of data directories before the state database: one snapshot file per
// store under data_dir/snapshots/<tenant>/<store>~<incarnation>.snap, and .failed markers.
TEST_F(JournalCheckpointTest, SnapshotFilesOfAnEarlierLayoutMoveIntoTheStateDatabase) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 6, 1, {"x1"}).ok());
  adapt::v1::StoreSnapshot snapshot = a->Snapshot().value();
  adapt::v1::StoreInfo before = Info(*a);
  journal_.reset();
  std::filesystem::remove_all(dir_);

  adapt::v1::DurableMark* mark = snapshot.mutable_durable();
  mark->set_tenant("t");
  mark->set_store("a");
  mark->set_incarnation(1);
  mark->set_lsn(2);
  mark->add_applied_ids("x1");
  std::filesystem::create_directories(dir_ + "/snapshots/t");
  std::ofstream(dir_ + "/snapshots/t/a~1.snap", std::ios::binary)
      << EncodeSnapshotFile(snapshot).value();
  std::ofstream(dir_ + "/snapshots/t/b~3.failed") << "damaged before the upgrade";

  auto stores = Open();
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), before.examples());
  EXPECT_EQ(Info(*stores["t/a"]).version(), before.version());
  EXPECT_TRUE(journal_->Applied("t", "a", stores["t/a"].get(), "x1"));
  EXPECT_EQ(Info(*stores["t/b"]).failure(), "damaged before the upgrade");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/snapshots"));

  // Later starts read the state database alone.
  ASSERT_TRUE(Adapt("a", stores["t/a"].get(), 2, 2).ok());
  stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), before.examples() + 2);
  EXPECT_EQ(Info(*stores["t/b"]).failure(), "damaged before the upgrade");
}

// The background checkpoint and an eviction's one-store checkpoint may write one store in turn
// and then mark it clean in the other order: what the journal remembers (and a later load
// reads) is the later write's record, never the earlier one's.
TEST_F(JournalCheckpointTest, ACheckpointThatFinishesLastDoesNotHideALaterWrite) {
  absl::Notification committed, release;
  std::atomic<int> commits{0};
  after_state_commit_ = [&] {
    if (commits.fetch_add(1) != 0) return;  // only the background checkpoint's first commit
    committed.Notify();
    release.WaitForNotification();
  };
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 4, 1, {"x1"}).ok());
  absl::Status background;
  std::thread checkpoint([&] { background = journal_->Checkpoint(); });
  committed.WaitForNotification();  // its state of t/a is stored, t/a not yet marked clean
  ASSERT_TRUE(Adapt("a", a.get(), 3, 2, {"x2"}).ok());
  const std::string latest = a->Snapshot()->SerializeAsString();
  auto unloaded = journal_->Unload("t", "a", a.get());  // writes the larger state, then drops it
  ASSERT_TRUE(unloaded.ok()) << unloaded.status();
  EXPECT_TRUE(*unloaded);
  release.Notify();
  checkpoint.join();
  ASSERT_TRUE(background.ok()) << background;

  auto loaded = journal_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(StoreFailure(**loaded).ok()) << StoreFailure(**loaded);
  EXPECT_EQ((*loaded)->Snapshot()->SerializeAsString(), latest);
  EXPECT_TRUE(journal_->Applied("t", "a", loaded->get(), "x2"));
  // Nothing is dirty, so a checkpoint lets the whole log go and a restart finds the same.
  ASSERT_TRUE(journal_->Checkpoint().ok());
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 7u);
}

}  // namespace
}  // namespace adaptd
