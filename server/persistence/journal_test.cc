#include "server/persistence/journal.h"

#include <filesystem>
#include <random>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/file_util.h"
#include "server/persistence/journal_test_util.h"
#include "server/persistence/log_format.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

class JournalTest : public JournalFixture {};

TEST_F(JournalTest, ReplaysTheLogIntoTheSameStatistics) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 3, 2).ok());
  auto expected = a->Snapshot();
  ASSERT_TRUE(expected.ok());
  auto stores = Open();  // no checkpoint: everything comes from the log
  ASSERT_EQ(stores.count("t/a"), 1u);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 8u);
  auto got = stores["t/a"]->Snapshot();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->faast().g_upper_size(), expected->faast().g_upper_size());
  for (int i = 0; i < got->faast().g_upper_size(); ++i) {
    EXPECT_EQ(got->faast().g_upper(i), expected->faast().g_upper(i));
  }
}

// An import's record holds only its spec; its state is stored before the import is
// acknowledged. Replay keeps an import whose state was stored, with what it held and the
// writes after it, and drops one whose state never was (it was never acknowledged).
TEST_F(JournalTest, AnImportIsKeptOnlyWithItsStoredState) {
  Open();
  auto source = Create("source");
  ASSERT_TRUE(Adapt("source", source.get(), 5, 1).ok());
  auto state = source->Snapshot();
  ASSERT_TRUE(state.ok());
  auto restored = RestoreStore(*state, backend_.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  std::shared_ptr<Store> kept = *std::move(restored);
  ASSERT_TRUE(journal_
                  ->WaitDurable(journal_->AppendCreate("t", "kept", kept, kept->spec(),
                                                       /*imported=*/true))
                  .ok());
  ASSERT_TRUE(journal_->StoreImported("t", "kept", kept.get()).ok());
  ASSERT_TRUE(Adapt("kept", kept.get(), 3, 2).ok());  // logged after the stored state
  auto expected = kept->Snapshot();
  ASSERT_TRUE(expected.ok());
  // An import cut short: its record is durable, its state never stored.
  restored = RestoreStore(*state, backend_.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  std::shared_ptr<Store> lost = *std::move(restored);
  ASSERT_TRUE(journal_
                  ->WaitDurable(journal_->AppendCreate("t", "lost", lost, lost->spec(),
                                                       /*imported=*/true))
                  .ok());
  EXPECT_EQ(journal_->StoreImported("t", "other", lost.get()).code(), absl::StatusCode::kInternal);

  auto stores = Open();  // as after a crash: no checkpoint
  EXPECT_EQ(stores.count("t/lost"), 0u);
  ASSERT_EQ(stores.count("t/kept"), 1u);
  EXPECT_EQ(Info(*stores["t/kept"]).examples(), 8u);
  auto got = stores["t/kept"]->Snapshot();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->SerializeAsString(), expected->SerializeAsString());
  ASSERT_EQ(stores.count("t/source"), 1u);
}

TEST_F(JournalTest, AutomaticCompilesReplayToTheSameVersion) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  // Two automatic compiles of "a" (as the compile pool runs them) around more examples.
  ASSERT_TRUE(a->Compile(adapt::v1::CompileRequest()).ok());
  ASSERT_TRUE(journal_->LogAutoCompile(a.get()).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 3, 2).ok());
  ASSERT_TRUE(a->Compile(adapt::v1::CompileRequest()).ok());
  ASSERT_TRUE(journal_->LogAutoCompile(a.get()).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 2, 3).ok());
  const adapt::v1::StoreInfo before = Info(*a);
  ASSERT_GE(before.version(), 2u);
  // A store the journal does not know (deleted meanwhile): nothing is logged, no error.
  auto stray = CreateStore(a->spec(), backend_.get());
  ASSERT_TRUE(stray.ok());
  EXPECT_TRUE(journal_->LogAutoCompile(stray->get()).ok());

  auto stores = Open();  // no checkpoint: everything comes from the log
  const adapt::v1::StoreInfo after = Info(*stores["t/a"]);
  EXPECT_EQ(after.version(), before.version());
  EXPECT_EQ(after.examples(), 10u);
  EXPECT_EQ(after.faast().pending_examples(), before.faast().pending_examples());
  EXPECT_EQ(Info(*stores["t/b"]).version(), Info(*b).version());
}

TEST_F(JournalTest, TornLastRecordIsDroppedAndTruncated) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  journal_->Close();
  const auto segments = ListSegments(Env::Default(), dir_ + "/wal").value();
  ASSERT_FALSE(segments.empty());
  const std::string path = segments.back().second;
  const uint64_t good = std::filesystem::file_size(path);
  {
    std::string torn;
    AppendFrame(99, "t/a", std::string(100, 'x'), &torn);
    torn.resize(torn.size() / 2);
    FILE* f = std::fopen(path.c_str(), "ab");
    std::fwrite(torn.data(), 1, torn.size(), f);
    std::fclose(f);
  }
  journal_.reset();
  // Recovery truncates before anything else can append; read the size from a fresh process
  // view by recovering without a checkpoint afterwards touching this segment's prefix.
  auto stores = Open();
  ASSERT_EQ(stores.count("t/a"), 1u);
  EXPECT_TRUE(Info(*stores["t/a"]).failure().empty());
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 5u);
  // The checkpoint after recovery removed the old segment, or it was truncated to `good`.
  if (std::filesystem::exists(path)) {
    EXPECT_EQ(std::filesystem::file_size(path), good);
  }
}

TEST_F(JournalTest, CorruptRecordFailsOnlyItsStore) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 4, 2).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 2, 3).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 1, 4).ok());
  journal_->Close();
  const std::string path = ListSegments(Env::Default(), dir_ + "/wal").value().back().second;
  std::string data = Env::Default()->ReadFile(path).value();
  ParsedSegment parsed = ParseSegment(data);
  // Flip a byte inside the payload of a's first write (not the last record).
  size_t target = 0;
  int seen_a = 0;
  for (const auto& frame : parsed.frames) {
    if (frame.key == "t/a" && ++seen_a == 2) {
      target = static_cast<size_t>(frame.payload.data() - data.data()) + 10;
    }
  }
  ASSERT_GT(target, 0u);
  data[target] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, data, false).ok());
  journal_.reset();

  auto stores = Open();
  ASSERT_EQ(stores.size(), 2u);
  const adapt::v1::StoreInfo info_a = Info(*stores["t/a"]);
  EXPECT_EQ(info_a.failure(), "log record LSN 3 is corrupt (checksum mismatch)");
  EXPECT_EQ(info_a.spec().kind(), adapt::v1::STORE_KIND_FAAST);
  EXPECT_EQ(StoreFailure(*stores["t/a"]).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(stores["t/a"]->Predict(nullptr, 0, 4, 1).ok());
  const adapt::v1::StoreInfo info_b = Info(*stores["t/b"]);
  EXPECT_TRUE(info_b.failure().empty());
  EXPECT_EQ(info_b.examples(), 5u);
  // b keeps serving writes; a stays failed across restarts (the log it failed on is gone).
  ASSERT_TRUE(Adapt("b", stores["t/b"].get(), 3, 5).ok());
  stores = Open();
  EXPECT_FALSE(Info(*stores["t/a"]).failure().empty());
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 8u);
}

TEST_F(JournalTest, CheckpointTruncatesTheLogAndRecoveryCombinesSnapshotAndLog) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 6, 1, {"x1", "x2"}).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  const auto segments = ListSegments(Env::Default(), dir_ + "/wal").value();
  ASSERT_EQ(segments.size(), 1u);  // only the current one
  EXPECT_EQ(std::filesystem::file_size(segments[0].second), 0u);
  ASSERT_TRUE(Adapt("a", a.get(), 3, 2, {"x3"}).ok());
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 9u);
  EXPECT_TRUE(journal_->Applied("t", "a", stores["t/a"].get(), "x1"));
  EXPECT_TRUE(journal_->Applied("t", "a", stores["t/a"].get(), "x3"));
  EXPECT_FALSE(journal_->Applied("t", "a", stores["t/a"].get(), "x4"));
  // A resend of an applied id is refused as a concurrent duplicate, nothing committed.
  EXPECT_EQ(Adapt("a", stores["t/a"].get(), 1, 3, {"x3"}).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 9u);
}

TEST_F(JournalTest, SizeTriggerCheckpointsInTheBackground) {
  Open(/*snapshot_log_bytes=*/2048);
  auto a = Create("a");
  for (uint32_t i = 0; i < 40; ++i) ASSERT_TRUE(Adapt("a", a.get(), 4, i).ok());
  // Bounded wait for a background checkpoint: it stores the state and drops the first segment.
  bool truncated = false;
  for (int i = 0; i < 500 && !truncated; ++i) {
    const auto segments = ListSegments(Env::Default(), dir_ + "/wal").value();
    truncated = !segments.empty() && segments.front().first > 1;
    if (!truncated) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(truncated);
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 160u);
}

TEST_F(JournalTest, DeletedStoreStaysDeletedAndItsNameIsReusable) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());
  EXPECT_EQ(Adapt("a", a.get(), 1, 2).code(), absl::StatusCode::kNotFound);
  auto again = Create("a");
  ASSERT_TRUE(Adapt("a", again.get(), 2, 3).ok());
  auto stores = Open();
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 2u);
}

TEST_F(JournalTest, CorruptSnapshotFailsItsStoreOnly) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 5, 2).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  journal_.reset();
  ASSERT_NO_FATAL_FAILURE(FlipStoredStateBit("t/a"));
  auto stores = Open();
  const std::string failure = Info(*stores["t/a"]).failure();
  EXPECT_EQ(failure, "the stored state of t/a: data: snapshot checksum mismatch (corrupt file)");
  EXPECT_TRUE(Info(*stores["t/b"]).failure().empty());
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 5u);
}

}  // namespace
}  // namespace adaptd
