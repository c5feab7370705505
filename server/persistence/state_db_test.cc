// StateDb: states round-trip through chunks of any size, replacing a state drops its old
// chunks, a delete spares a later incarnation, an uncommitted write leaves nothing, a full
// map is ResourceExhausted and changes nothing, everything survives a reopen, and the pages a
// read maps do not stay in the reader's resident set.
#include "server/persistence/state_db.h"

#include <lmdb.h>

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
    options.between_commits = [this] { return between_commits_; };
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

  uint64_t Records() {
    absl::StatusOr<uint64_t> n = db_->StateRecords();
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : 0;
  }

  std::string dir_;
  std::unique_ptr<StateDb> db_;
  absl::Status between_commits_ = absl::OkStatus();  // an error: a crash between the commits
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

TEST_F(StateDbTest, ReadCatalogFindsOneEntry) {
  ASSERT_TRUE(Put("t/a", Entry(5, 9), Bytes(10, 1)).ok());
  ASSERT_TRUE(Put("t/b", Entry(6, 3), Bytes(10, 2)).ok());
  absl::StatusOr<adapt::v1::CatalogEntry> a = db_->ReadCatalog("t/a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->incarnation(), 5u);
  EXPECT_EQ(a->lsn(), 9u);
  EXPECT_EQ(a->state_bytes(), 10u);
  EXPECT_EQ(db_->ReadCatalog("t/c").status().code(), absl::StatusCode::kNotFound);
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

// Incarnations are ids, in no order: which store is the later is its create LSN's to say.
TEST_F(StateDbTest, DeleteComparesCreateLsnsNotIncarnations) {
  adapt::v1::CatalogEntry later = Entry(/*incarnation=*/3, /*lsn=*/40);
  later.set_create_lsn(30);
  ASSERT_TRUE(Put("t/a", later, Bytes(2500, 1)).ok());
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Delete("t/a", 20).ok());  // a store created at LSN 20, incarnation 9
    ASSERT_TRUE(writer->Commit().ok());
  }
  EXPECT_EQ(ReadBack("t/a"), Bytes(2500, 1));
  adapt::v1::CatalogEntry earlier = Entry(/*incarnation=*/uint64_t{1} << 63, /*lsn=*/15);
  earlier.set_create_lsn(10);
  ASSERT_TRUE(Put("t/b", earlier, Bytes(100, 2)).ok());
  {
    auto writer = db_->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->Delete("t/b", 10).ok());
    ASSERT_TRUE(writer->Delete("t/a", 30).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  EXPECT_TRUE(Catalog().empty());
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

TEST_F(StateDbTest, TheCatalogHasItsOwnFile) {
  ASSERT_TRUE(Put("t/a", Entry(1, 1), Bytes(5000, 1)).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/data.mdb"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/catalog/data.mdb"));
  // The catalog's file holds no state: far smaller than the states'.
  EXPECT_LT(std::filesystem::file_size(dir_ + "/catalog/data.mdb"),
            std::filesystem::file_size(dir_ + "/data.mdb"));
}

// A state is written under a new generation and the catalog switched to it after: the
// superseded generation stays readable until a later write removes it, and a crash between
// the two commits leaves the catalog on the earlier state, whole.
TEST_F(StateDbTest, ACrashBetweenTheCommitsKeepsTheEarlierStateWhole) {
  ASSERT_TRUE(Put("t/a", Entry(1, 1), Bytes(2500, 1)).ok());  // 3 chunks
  EXPECT_EQ(Records(), 3u);
  ASSERT_TRUE(Put("t/a", Entry(1, 2), Bytes(1500, 2)).ok());  // 2 chunks
  EXPECT_EQ(ReadBack("t/a"), Bytes(1500, 2));
  EXPECT_EQ(Records(), 5u);  // the superseded generation waits for the next write
  ASSERT_TRUE(Put("u/b", Entry(2, 3), "b").ok());
  EXPECT_EQ(Records(), 3u);  // it went with that write

  between_commits_ = absl::UnavailableError("crash");
  EXPECT_EQ(Put("t/a", Entry(1, 4), Bytes(3500, 3)).code(), absl::StatusCode::kUnavailable);
  between_commits_ = absl::OkStatus();
  Open();
  EXPECT_EQ(Catalog()["t/a"].lsn(), 2u);
  EXPECT_EQ(ReadBack("t/a"), Bytes(1500, 2));  // the earlier state, whole
  EXPECT_EQ(Records(), 3u + 4u);               // and the new one's chunks, orphaned
  // The store's next write removes them; the one after, the state it replaced.
  ASSERT_TRUE(Put("t/a", Entry(1, 5), Bytes(10, 4)).ok());
  EXPECT_EQ(ReadBack("t/a"), Bytes(10, 4));
  ASSERT_TRUE(Put("u/b", Entry(2, 6), "b").ok());
  EXPECT_EQ(Records(), 3u);  // t/a's and u/b's, and u/b's superseded one, for the next write
  // Generations go on rising across reopens: a new one never meets an old one's chunks.
  const uint64_t before = Catalog()["t/a"].state_generation();
  Open();
  ASSERT_TRUE(Put("t/a", Entry(1, 7), Bytes(20, 5)).ok());
  EXPECT_GT(Catalog()["t/a"].state_generation(), before);
  EXPECT_EQ(ReadBack("t/a"), Bytes(20, 5));
}

// A data directory of the one-environment layout (the catalog a table beside the states,
// chunk keys without a generation) opens with its catalog moved into its own file; its
// states read as they are until rewritten, and then leave nothing behind.
TEST_F(StateDbTest, TheOneEnvironmentLayoutIsMovedOver) {
  db_.reset();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  adapt::v1::CatalogEntry a = Entry(1, 3), b = Entry(2, 4);
  const std::string a_state = Bytes(2100, 7);  // 3 chunks of 1000
  a.set_state_bytes(a_state.size());
  a.set_state_chunks(3);
  a.set_readout_bytes(5);
  b.set_state_bytes(1);
  b.set_state_chunks(1);
  {
    MDB_env* env = nullptr;
    ASSERT_EQ(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 2);
    ASSERT_EQ(mdb_env_open(env, dir_.c_str(), MDB_NOTLS, 0640), 0);
    MDB_txn* txn = nullptr;
    ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
    MDB_dbi catalog = 0, state = 0;
    ASSERT_EQ(mdb_dbi_open(txn, "catalog", MDB_CREATE, &catalog), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "state", MDB_CREATE, &state), 0);
    auto put = [&](MDB_dbi dbi, const std::string& key, const std::string& value) {
      MDB_val k{key.size(), const_cast<char*>(key.data())};
      MDB_val v{value.size(), const_cast<char*>(value.data())};
      ASSERT_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
    };
    const auto chunk = [](const std::string& key, uint32_t n) {
      std::string out = key;
      out.push_back('\0');
      for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
      return out;
    };
    put(catalog, "t/a", a.SerializeAsString());
    put(catalog, "t/b", b.SerializeAsString());
    for (uint32_t i = 0; i < 3; ++i) put(state, chunk("t/a", i), a_state.substr(i * 1000, 1000));
    put(state, chunk("t/a", 0xFFFFFFFFu), "ro-ut");
    put(state, chunk("t/b", 0), "B");
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
  }
  Open();
  auto catalog = Catalog();
  ASSERT_EQ(catalog.size(), 2u);
  EXPECT_EQ(catalog["t/a"].lsn(), 3u);
  EXPECT_EQ(catalog["t/a"].state_generation(), 0u);
  EXPECT_EQ(ReadBack("t/a"), a_state);
  EXPECT_EQ(db_->ReadReadout("t/a", catalog["t/a"]).value(), "ro-ut");
  EXPECT_EQ(ReadBack("t/b"), "B");
  EXPECT_EQ(Records(), 5u);
  Open();  // moved once: a second open finds it in place
  EXPECT_EQ(Catalog().size(), 2u);
  // Rewritten, a state takes a generation; the old chunks go with the next write.
  ASSERT_TRUE(Put("t/a", Entry(1, 8), "new").ok());
  EXPECT_EQ(ReadBack("t/a"), "new");
  ASSERT_TRUE(Put("t/c", Entry(3, 9), "c").ok());
  EXPECT_EQ(Records(), 3u);  // t/a, t/b, t/c
  EXPECT_EQ(ReadBack("t/b"), "B");
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

TEST_F(StateDbTest, ASecondPutOfAKeyInOneWriteIsRefusedAndChangesNothing) {
  ASSERT_TRUE(Put("t/a", Entry(1, 1), "before").ok());
  auto writer = db_->BeginWrite();
  ASSERT_TRUE(writer.ok());
  adapt::v1::CatalogEntry first = Entry(1, 5), second = Entry(1, 9);
  ASSERT_TRUE(writer->PutStore("t/a", &first, "first").ok());
  const absl::Status again = writer->PutStore("t/a", &second, "second");
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  EXPECT_NE(again.message().find("t/a is put twice in one write"), std::string::npos) << again;
  ASSERT_TRUE(writer->Commit().ok());
  auto catalog = Catalog();
  EXPECT_EQ(catalog["t/a"].lsn(), 5u);
  EXPECT_EQ(ReadBack("t/a"), "first");
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
