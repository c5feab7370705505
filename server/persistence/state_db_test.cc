// StateDb: states round-trip through chunks of any size, replacing a state drops its old
// chunks, a delete spares a later incarnation, an uncommitted write leaves nothing, a full
// map is ResourceExhausted and changes nothing, everything survives a reopen, and the pages a
// read maps do not stay in the reader's resident set.
#include "server/persistence/state_db.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

class StateDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name())
               .string();
    std::filesystem::remove_all(dir_);
    Open();
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open(uint64_t map_bytes = uint64_t{1} << 30, size_t chunk_bytes = 1000) {
    db_.reset();
    StateDbOptions options;
    options.dir = dir_;
    options.map_bytes = map_bytes;
    options.chunk_bytes = chunk_bytes;
    auto opened = StateDb::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    db_ = *std::move(opened);
  }
  static adapt::v1::CatalogEntry Entry(uint64_t incarnation, uint64_t lsn) {
    adapt::v1::CatalogEntry entry;
    entry.set_incarnation(incarnation);
    entry.set_lsn(lsn);
    entry.mutable_spec()->set_dim(7);
    return entry;
  }
  static std::string Bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (char& c : out) c = static_cast<char>(rng());
    return out;
  }
  absl::Status Put(const std::string& key, const adapt::v1::CatalogEntry& entry,
                   const std::string& state) {
    auto writer = db_->BeginWrite();
    if (!writer.ok()) return writer.status();
    adapt::v1::CatalogEntry copy = entry;
    if (absl::Status put = writer->PutStore(key, &copy, state); !put.ok()) return put;
    return writer->Commit();
  }
  // key → entry, from a full scan.
  std::map<std::string, adapt::v1::CatalogEntry> Catalog() {
    std::map<std::string, adapt::v1::CatalogEntry> out;
    absl::Status scanned = db_->ScanCatalog([&](std::string_view key, adapt::v1::CatalogEntry e) {
      out[std::string(key)] = std::move(e);
      return absl::OkStatus();
    });
    EXPECT_TRUE(scanned.ok()) << scanned;
    return out;
  }
  std::string ReadBack(const std::string& key) {
    auto catalog = Catalog();
    EXPECT_TRUE(catalog.count(key)) << key;
    auto state = db_->ReadState(key, catalog[key]);
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *state : std::string();
  }

  std::string dir_;
  std::unique_ptr<StateDb> db_;
};

TEST_F(StateDbTest, StatesRoundTripInChunksOfAnySize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{999}, size_t{1000}, size_t{1001}, size_t{25000}}) {
    const std::string key = "t/s" + std::to_string(n);
    const std::string state = Bytes(n, static_cast<uint32_t>(n));
    ASSERT_TRUE(Put(key, Entry(1, 2), state).ok());
    EXPECT_EQ(ReadBack(key), state) << n;
    const auto entry = Catalog()[key];
    EXPECT_EQ(entry.state_bytes(), n);
    EXPECT_EQ(entry.state_chunks(), (n + 999) / 1000);
    EXPECT_EQ(entry.spec().dim(), 7u);
    EXPECT_EQ(entry.lsn(), 2u);
  }
}

TEST_F(StateDbTest, ReplacingAStateDropsItsOldChunksAndSparesItsNeighbours) {
  // "t/a" and "t/a0" share a prefix: the chunk keys' separator keeps them apart.
  ASSERT_TRUE(Put("t/a", Entry(1, 1), Bytes(5500, 1)).ok());
  ASSERT_TRUE(Put("t/a0", Entry(2, 2), Bytes(3500, 2)).ok());
  const std::string smaller = Bytes(1200, 3);
  ASSERT_TRUE(Put("t/a", Entry(1, 3), smaller).ok());
  EXPECT_EQ(ReadBack("t/a"), smaller);
  EXPECT_EQ(ReadBack("t/a0"), Bytes(3500, 2));
  // A catalog entry that claims more chunks than remain finds the old ones gone.
  adapt::v1::CatalogEntry stale = Catalog()["t/a"];
  stale.set_state_chunks(6);
  stale.set_state_bytes(5500);
  auto read = db_->ReadState("t/a", stale);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << read.status();
}

// The mapped pages this process holds resident (RssFile in /proc/self/status), in KiB.
uint64_t ResidentFileKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoull(line.substr(8));
  }
  return 0;
}

TEST_F(StateDbTest, AReadLeavesTheStatesPagesOutOfTheResidentSet) {
  Open(uint64_t{1} << 30, /*chunk_bytes=*/size_t{8} << 20);
  const std::string state = Bytes(size_t{48} << 20, 5);
  ASSERT_TRUE(Put("t/big", Entry(1, 1), state).ok());
  const uint64_t before = ResidentFileKib();
  EXPECT_EQ(ReadBack("t/big"), state);
  EXPECT_EQ(ReadBack("t/big"), state);  // read again after the pages were dropped
  // Without dropping them, reading 48 MiB through the map would add about 48 MiB.
  EXPECT_LT(ResidentFileKib(), before + (8 << 10)) << before;
}

TEST_F(StateDbTest, DeleteSparesALaterIncarnation) {
  ASSERT_TRUE(Put("t/a", Entry(10, 12), Bytes(2500, 1)).ok());
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Delete("t/a", 9).ok());  // an older store of that name
    ASSERT_TRUE(writer->Commit().ok());
  }
  EXPECT_EQ(ReadBack("t/a"), Bytes(2500, 1));
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Delete("t/a", 10).ok());
    ASSERT_TRUE(writer->Delete("t/never", 10).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  EXPECT_TRUE(Catalog().empty());
  // No orphan chunk remains: a new store of that name with one chunk reads back exactly.
  ASSERT_TRUE(Put("t/a", Entry(20, 20), "x").ok());
  EXPECT_EQ(ReadBack("t/a"), "x");
}

TEST_F(StateDbTest, AReadOutIsStoredBesideTheStateAndGoesWithIt) {
  auto put = [&](const std::string& key, uint64_t lsn, const std::string& state,
                 const std::string& readout) {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    adapt::v1::CatalogEntry entry = Entry(1, lsn);
    ASSERT_TRUE(writer->PutStore(key, &entry, state, readout).ok());
    EXPECT_EQ(entry.readout_bytes(), readout.size());
    ASSERT_TRUE(writer->Commit().ok());
  };
  // A state of several chunks: the read-out is none of them.
  ASSERT_NO_FATAL_FAILURE(put("t/a", 1, Bytes(2500, 1), Bytes(300, 2)));
  adapt::v1::CatalogEntry entry = Catalog()["t/a"];
  EXPECT_EQ(entry.readout_bytes(), 300u);
  EXPECT_EQ(db_->ReadReadout("t/a", entry).value(), Bytes(300, 2));
  EXPECT_EQ(ReadBack("t/a"), Bytes(2500, 1));
  // An entry whose size disagrees: DataLoss naming the store.
  adapt::v1::CatalogEntry wrong = entry;
  wrong.set_readout_bytes(301);
  const absl::Status mismatch = db_->ReadReadout("t/a", wrong).status();
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kDataLoss) << mismatch;
  EXPECT_NE(mismatch.message().find("t/a"), std::string::npos) << mismatch;
  // Written again without one: none is stored.
  ASSERT_NO_FATAL_FAILURE(put("t/a", 2, Bytes(10, 3), ""));
  entry = Catalog()["t/a"];
  EXPECT_EQ(entry.readout_bytes(), 0u);
  EXPECT_EQ(db_->ReadReadout("t/a", entry).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(db_->ReadReadout("t/a", wrong).status().code(), absl::StatusCode::kDataLoss);
  // A delete takes it too.
  ASSERT_NO_FATAL_FAILURE(put("t/a", 3, Bytes(10, 3), Bytes(50, 4)));
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Delete("t/a", 1).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  adapt::v1::CatalogEntry gone = Entry(1, 3);
  gone.set_readout_bytes(50);
  EXPECT_EQ(db_->ReadReadout("t/a", gone).status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StateDbTest, AnUncommittedWriteLeavesNothing) {
  ASSERT_TRUE(Put("t/a", Entry(1, 1), "before").ok());
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    adapt::v1::CatalogEntry after = Entry(1, 5), fresh = Entry(2, 2);
    ASSERT_TRUE(writer->PutStore("t/a", &after, "after").ok());
    ASSERT_TRUE(writer->PutStore("t/b", &fresh, "new").ok());
  }
  auto catalog = Catalog();
  EXPECT_EQ(catalog.size(), 1u);
  EXPECT_EQ(catalog["t/a"].lsn(), 1u);
  EXPECT_EQ(ReadBack("t/a"), "before");
}

TEST_F(StateDbTest, AFullMapIsResourceExhaustedAndChangesNothing) {
  Open(/*map_bytes=*/uint64_t{1} << 20, /*chunk_bytes=*/64 << 10);
  ASSERT_TRUE(Put("t/a", Entry(1, 1), Bytes(100 << 10, 1)).ok());
  const absl::Status full = Put("t/b", Entry(2, 2), Bytes(4 << 20, 2));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(full.message().rfind("state database " + dir_ + ": ", 0), 0u) << full;
  EXPECT_NE(full.message().find("--state-map-bytes"), std::string::npos) << full;
  auto catalog = Catalog();
  EXPECT_EQ(catalog.size(), 1u);
  EXPECT_EQ(ReadBack("t/a"), Bytes(100 << 10, 1));
  // Writes that fit still go through.
  EXPECT_TRUE(Put("t/c", Entry(3, 3), Bytes(10 << 10, 3)).ok());
}

TEST_F(StateDbTest, EverythingSurvivesAReopen) {
  ASSERT_TRUE(Put("t/a", Entry(1, 4), Bytes(4321, 1)).ok());
  ASSERT_TRUE(Put("u/b", Entry(2, 5), Bytes(10, 2)).ok());
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    adapt::v1::CatalogEntry failed = Entry(3, 3);
    failed.set_failure("why");
    ASSERT_TRUE(writer->PutCatalog("u/c", failed).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  Open();
  auto catalog = Catalog();
  ASSERT_EQ(catalog.size(), 3u);
  EXPECT_EQ(catalog.begin()->first, "t/a");  // key order
  EXPECT_EQ(ReadBack("t/a"), Bytes(4321, 1));
  EXPECT_EQ(ReadBack("u/b"), Bytes(10, 2));
  EXPECT_EQ(catalog["u/c"].failure(), "why");
  EXPECT_EQ(catalog["u/c"].state_chunks(), 0u);
}

TEST_F(StateDbTest, AnUnusableDirectoryIsFailedPreconditionNamingIt) {
  db_.reset();
  const std::string file = dir_ + "-file";
  ASSERT_TRUE(std::filesystem::create_directories(dir_) || std::filesystem::exists(dir_));
  { std::ofstream(file) << "not a directory"; }
  StateDbOptions options;
  options.dir = file + "/state";
  auto opened = StateDb::Open(options);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition) << opened.status();
  EXPECT_NE(opened.status().message().find(options.dir), std::string::npos) << opened.status();
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace adaptd
