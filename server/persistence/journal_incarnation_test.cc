// Incarnations: each new store gets an id of its own, not a log position, recorded in its
// create record and catalog entry and kept across restarts; a data directory written when a
// store's incarnation was its create record's LSN opens unchanged, its stores keeping theirs.
#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/persistence/file_util.h"
#include "server/persistence/journal.h"
#include "server/persistence/journal_test_util.h"
#include "server/persistence/log_format.h"
#include "server/persistence/wal.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

class JournalIncarnationTest : public JournalFixture {
 protected:
  // The WalRecord logged at `lsn` (the journal must be closed).
  adapt::v1::WalRecord LoggedRecord(uint64_t lsn) {
    adapt::v1::WalRecord record;
    const auto segments = ListSegments(Env::Default(), dir_ + "/wal").value();
    for (const auto& [first, path] : segments) {
      const std::string data = Env::Default()->ReadFile(path).value();
      for (const LogFrame& frame : ParseSegment(data).frames) {
        if (frame.lsn == lsn) {
          EXPECT_TRUE(
              record.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size())));
        }
      }
    }
    return record;
  }
};

TEST_F(JournalIncarnationTest, NewStoresGetIdsOfTheirOwnThatRestartsKeep) {
  Open();
  auto a = Create("a");  // LSN 1
  auto b = Create("b");  // LSN 2
  const uint64_t first = journal_->Incarnation("t", "a");
  const uint64_t of_b = journal_->Incarnation("t", "b");
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, 1u);  // not its create record's LSN
  EXPECT_NE(first, of_b);
  EXPECT_EQ(journal_->Incarnation("t", "never"), 0u);
  ASSERT_TRUE(Adapt("a", a.get(), 4, 1).ok());  // LSN 3
  journal_->Close();
  EXPECT_EQ(LoggedRecord(1).incarnation(), first);  // the create record carries it
  EXPECT_TRUE(LoggedRecord(1).has_create());
  EXPECT_EQ(LoggedRecord(3).incarnation(), first);

  auto stores = Open();  // from the log (the start-up checkpoint then stores both)
  EXPECT_EQ(journal_->Incarnation("t", "a"), first);
  EXPECT_EQ(journal_->Incarnation("t", "b"), of_b);
  EXPECT_EQ(recovered_incarnations_["t/a"], first);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 4u);
  stores = Open();  // from the state database
  EXPECT_EQ(recovered_incarnations_["t/a"], first);
  EXPECT_EQ(recovered_incarnations_["t/b"], of_b);
  EXPECT_EQ(journal_->Incarnation("t", "a"), first);

  // A delete and a create of the name: another incarnation, kept in turn.
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());
  EXPECT_EQ(journal_->Incarnation("t", "a"), 0u);
  auto again = Create("a");
  const uint64_t second = journal_->Incarnation("t", "a");
  EXPECT_NE(second, 0u);
  EXPECT_NE(second, first);
  ASSERT_TRUE(Adapt("a", again.get(), 2, 2).ok());
  stores = Open();
  EXPECT_EQ(recovered_incarnations_["t/a"], second);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 2u);
  journal_.reset();
  std::unique_ptr<StateDb> db;
  adapt::v1::CatalogEntry entry;
  ASSERT_NO_FATAL_FAILURE(OpenStored("t/a", &db, &entry));
  EXPECT_EQ(entry.incarnation(), second);
  EXPECT_EQ(entry.create_lsn(), 5u);  // after the first three records and the delete
}

// The delete of a store and the create of its name's next one may both wait for a checkpoint
// while the new store's state is stored first (its eviction): the delete spares it, by their
// create LSNs.
TEST_F(JournalIncarnationTest, ADeleteSparesTheNextStoreOfItsNameStoredBeforeIt) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 3, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());
  auto again = Create("a");
  ASSERT_TRUE(Adapt("a", again.get(), 5, 2).ok());
  const uint64_t incarnation = journal_->Incarnation("t", "a");
  auto unloaded = journal_->Unload("t", "a", again.get());
  ASSERT_TRUE(unloaded.ok()) << unloaded.status();
  ASSERT_TRUE(*unloaded);
  ASSERT_TRUE(journal_->Checkpoint().ok());  // removes the deleted store's state
  auto stores = Open();
  ASSERT_EQ(stores.count("t/a"), 1u);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 5u);
  EXPECT_EQ(recovered_incarnations_["t/a"], incarnation);
}

// A corrupt create record leaves its store failed with no incarnation known: the store's next
// record names it, so the store's delete still reaches it.
TEST_F(JournalIncarnationTest, AStoreWhoseCreateRecordIsCorruptTakesItsNextRecordsIncarnation) {
  Open();
  auto a = Create("a");                                                       // LSN 1
  ASSERT_TRUE(Adapt("a", a.get(), 2, 1).ok());                                // LSN 2
  auto b = Create("b");                                                       // LSN 3
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());  // LSN 4
  auto c = Create("c");                                                       // LSN 5
  journal_->Close();
  const std::string path = ListSegments(Env::Default(), dir_ + "/wal").value().back().second;
  std::string data = Env::Default()->ReadFile(path).value();
  const ParsedSegment parsed = ParseSegment(data);
  ASSERT_EQ(parsed.frames.front().lsn, 1u);
  data[static_cast<size_t>(parsed.frames.front().payload.data() - data.data()) + 2] ^= 0x20;
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, data, false).ok());
  journal_.reset();

  auto stores = Open();
  EXPECT_EQ(stores.count("t/a"), 0u);  // deleted, as acknowledged
  EXPECT_EQ(stores.size(), 2u);
}

// A data directory as servers wrote it when a store's incarnation was its create record's
// LSN: create records carry no incarnation, every other record names that LSN, and the
// catalog entries and stored states name it too, without a create_lsn.
TEST_F(JournalIncarnationTest, TodaysDataDirectoriesKeepTheirCreateLsnsAsIncarnations) {
  const adapt::v1::StoreSpec spec = Spec();
  // t/a: created at LSN 1, its write at LSN 2 stored by a checkpoint, another at LSN 3 in the
  // log after it.
  std::shared_ptr<Store> a = CreateStore(spec, backend_.get()).value();
  ASSERT_TRUE(ApplyBatch(a.get(), Batch(5, 1)).ok());
  {
    StateDbOptions options;
    options.dir = dir_ + "/state";
    std::unique_ptr<StateDb> db = StateDb::Open(options).value();
    adapt::v1::CatalogEntry entry;
    const std::string state = EncodeStoreFile(*a, [&](adapt::v1::StoreSnapshot& header) {
                                *entry.mutable_spec() = header.spec();
                                adapt::v1::DurableMark* mark = header.mutable_durable();
                                mark->set_tenant("t");
                                mark->set_store("a");
                                mark->set_incarnation(1);
                                mark->set_lsn(2);
                              }).value();
    entry.set_incarnation(1);
    entry.set_lsn(2);
    a->Describe(entry.mutable_info());
    auto writer = db->BeginWrite();
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(writer->PutStore("t/a", &entry, state).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  // The log from LSN 3: t/a's write; t/b created at 4, written, deleted, created again at 7.
  {
    std::filesystem::create_directories(dir_ + "/wal");
    WalOptions options;
    options.dir = dir_ + "/wal";
    std::unique_ptr<Wal> wal = Wal::Open(options, 3).value();
    const auto log = [&](const std::string& key, uint64_t incarnation, auto set) {
      adapt::v1::WalRecord record;
      record.set_incarnation(incarnation);
      set(record);
      return wal->Append(key, record.SerializeAsString());
    };
    const auto write = [](uint32_t rows, uint32_t seed) {
      return [=](adapt::v1::WalRecord& r) {
        *r.mutable_write()->add_batches() = ToWalBatch(Batch(static_cast<int>(rows), seed));
      };
    };
    const auto create = [&](adapt::v1::WalRecord& r) { *r.mutable_create() = spec; };
    EXPECT_EQ(log("t/a", 1, write(3, 2)), 3u);
    EXPECT_EQ(log("t/b", 0, create), 4u);
    EXPECT_EQ(log("t/b", 4, write(6, 3)), 5u);
    EXPECT_EQ(log("t/b", 4, [](adapt::v1::WalRecord& r) { r.mutable_delete_(); }), 6u);
    EXPECT_EQ(log("t/b", 0, create), 7u);
    EXPECT_EQ(log("t/b", 7, write(2, 4)), 8u);
    ASSERT_TRUE(wal->WaitDurable(8).ok());
    wal->Close();
  }

  auto stores = Open();
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 8u);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 2u);
  EXPECT_EQ(journal_->Incarnation("t", "a"), 1u);
  EXPECT_EQ(journal_->Incarnation("t", "b"), 7u);
  EXPECT_EQ(recovered_incarnations_["t/a"], 1u);
  EXPECT_EQ(recovered_incarnations_["t/b"], 7u);
  // Written on: a later record names the same incarnation, and a restart keeps both.
  ASSERT_TRUE(Adapt("b", stores["t/b"].get(), 1, 5).ok());
  stores = Open();
  EXPECT_EQ(recovered_incarnations_["t/a"], 1u);
  EXPECT_EQ(recovered_incarnations_["t/b"], 7u);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 3u);
  // The start-up checkpoints stored both under their incarnations, with their create LSNs.
  journal_.reset();
  std::unique_ptr<StateDb> db;
  adapt::v1::CatalogEntry entry;
  ASSERT_NO_FATAL_FAILURE(OpenStored("t/b", &db, &entry));
  EXPECT_EQ(entry.incarnation(), 7u);
  EXPECT_EQ(entry.create_lsn(), 7u);
  db.reset();
  ASSERT_NO_FATAL_FAILURE(OpenStored("t/a", &db, &entry));
  EXPECT_EQ(entry.incarnation(), 1u);
  EXPECT_EQ(entry.create_lsn(), 1u);
  db.reset();

  // The name's next store gets an id of its own.
  stores = Open();
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "b")).ok());
  Create("b");
  const uint64_t next = journal_->Incarnation("t", "b");
  EXPECT_NE(next, 0u);
  EXPECT_NE(next, 7u);
  stores = Open();
  EXPECT_EQ(recovered_incarnations_["t/b"], next);
  EXPECT_EQ(Info(*stores["t/b"]).examples(), 0u);
  EXPECT_EQ(recovered_incarnations_["t/a"], 1u);
}

}  // namespace
}  // namespace adaptd
