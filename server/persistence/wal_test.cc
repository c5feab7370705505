#include "server/persistence/wal.h"

#include <atomic>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "server/persistence/env.h"
#include "server/persistence/log_format.h"

namespace adaptd {
namespace {

std::string TempDir(const std::string& name) {
  std::random_device rd;
  const std::string dir = ::testing::TempDir() + "/adaptd-wal-" + name + "-" + std::to_string(rd());
  std::filesystem::remove_all(dir);
  return dir;
}

std::vector<LogFrame> ReadAll(const std::string& dir, std::vector<std::string>* keep) {
  std::vector<LogFrame> frames;
  const auto segments = ListSegments(Env::Default(), dir).value();
  for (const auto& [first, path] : segments) {
    keep->push_back(Env::Default()->ReadFile(path).value());
    ParsedSegment parsed = ParseSegment(keep->back());
    EXPECT_FALSE(parsed.torn_tail) << path;
    for (auto& f : parsed.frames) frames.push_back(f);
  }
  return frames;
}

TEST(WalTest, GroupCommitSyncsLessOftenThanRecordsAndLosesNone) {
  const std::string dir = TempDir("group");
  std::atomic<int> synced_callbacks{0};
  WalOptions options;
  options.dir = dir;
  options.on_sync = [&](double seconds) {
    EXPECT_GE(seconds, 0.0);
    ++synced_callbacks;
  };
  auto wal = Wal::Open(options, 1);
  ASSERT_TRUE(wal.ok()) << wal.status();
  constexpr int kThreads = 8, kPerThread = 150;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t lsn =
            (*wal)->Append("t/s" + std::to_string(t), std::to_string(t * kPerThread + i));
        if (!(*wal)->WaitDurable(lsn).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  const uint64_t records = (*wal)->records();
  EXPECT_EQ(records, uint64_t{kThreads * kPerThread});
  EXPECT_LT((*wal)->syncs(), records);  // concurrent appends shared syncs
  EXPECT_EQ(synced_callbacks.load(), static_cast<int>((*wal)->syncs()));
  (*wal)->Close();
  std::vector<std::string> keep;
  const auto frames = ReadAll(dir, &keep);
  ASSERT_EQ(frames.size(), records);
  std::set<std::string> payloads;
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].lsn, i + 1);  // written in LSN order
    payloads.insert(std::string(frames[i].payload));
  }
  EXPECT_EQ(payloads.size(), records);
  std::filesystem::remove_all(dir);
}

TEST(WalTest, RotateAndRemoveCoveredSegments) {
  const std::string dir = TempDir("rotate");
  auto wal = Wal::Open({dir, true, nullptr}, 10);
  ASSERT_TRUE(wal.ok());
  EXPECT_EQ((*wal)->Append("t/a", "one"), 10u);
  EXPECT_EQ((*wal)->Append("t/a", "two"), 11u);
  auto first = (*wal)->Rotate();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 12u);
  EXPECT_EQ((*wal)->segment_bytes(), 0u);
  const uint64_t lsn = (*wal)->Append("t/a", "three");
  ASSERT_TRUE((*wal)->WaitDurable(lsn).ok());
  EXPECT_EQ(ListSegments(Env::Default(), dir).value().size(), 2u);
  ASSERT_TRUE((*wal)->RemoveSegmentsBefore(11).ok());  // segment 10 still holds LSN 11
  EXPECT_EQ(ListSegments(Env::Default(), dir).value().size(), 2u);
  ASSERT_TRUE((*wal)->RemoveSegmentsBefore(12).ok());
  const auto left = ListSegments(Env::Default(), dir).value();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].first, 12u);
  (*wal)->Close();
  EXPECT_FALSE((*wal)->WaitDurable(lsn + 1).ok());  // closed: never durable
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace adaptd
