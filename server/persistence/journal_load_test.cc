// Lazy start: a stored store stays on disk (cold) after a restart until a call loads it; only
// stores the log tail touches are read at start-up; a load is exact, and a damaged state found
// at load time fails its store for good, as it would at start-up.
#include <algorithm>
#include <cstring>

#include "gtest/gtest.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/journal.h"
#include "server/persistence/journal_test_util.h"

namespace adaptd {
namespace {

class JournalLoadTest : public JournalFixture {
 protected:
  // Reopens without loading anything: what start-up recovered, by key.
  std::map<std::string, RecoveredStore> Restart() {
    journal_.reset();
    JournalOptions options;
    options.data_dir = dir_;
    options.snapshot_log_bytes = 1 << 30;
    std::vector<RecoveredStore> recovered;
    auto journal = Journal::Open(options, backend_.get(), &recovered);
    EXPECT_TRUE(journal.ok()) << journal.status();
    journal_ = *std::move(journal);
    std::map<std::string, RecoveredStore> out;
    for (auto& r : recovered) out[StoreKey(r.tenant, r.name)] = std::move(r);
    return out;
  }
};

TEST_F(JournalLoadTest, StoredStoresStartColdAndLoadExactly) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 6, 1, {"x1"}).ok());
  ASSERT_TRUE(Adapt("b", b.get(), 4, 2).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  const std::string a_state = a->Snapshot()->SerializeAsString();
  ASSERT_TRUE(Adapt("b", b.get(), 2, 3).ok());  // only in the log

  auto recovered = Restart();
  ASSERT_EQ(recovered.size(), 2u);
  // t/a is cold, described from its catalog entry; t/b was read to replay its last write.
  EXPECT_EQ(recovered["t/a"].store, nullptr);
  EXPECT_EQ(recovered["t/a"].Info().examples(), 6u);
  EXPECT_EQ(recovered["t/a"].Info().spec().dim(), 4u);
  EXPECT_EQ(recovered["t/a"].Info().labels_size(), 2);
  EXPECT_EQ(recovered["t/a"].kind, adapt::v1::STORE_KIND_FAAST);
  ASSERT_NE(recovered["t/b"].store, nullptr);
  EXPECT_EQ(Info(*recovered["t/b"].store).examples(), 6u);

  auto loaded = journal_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->Snapshot()->SerializeAsString(), a_state);
  EXPECT_TRUE(journal_->Applied("t", "a", loaded->get(), "x1"));
  auto again = journal_->Load("t", "a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), loaded->get());  // loaded once
  // Writes to the loaded store are logged and survive the next restart.
  ASSERT_TRUE(Adapt("a", loaded->get(), 2, 4).ok());
  auto stores = Open();
  EXPECT_EQ(Info(*stores["t/a"]).examples(), 8u);
}

// Start-up reads catalog entries at the wire level (catalog_row.h); an entry in another form
// (here one without its description) is parsed whole instead and starts cold all the same.
TEST_F(JournalLoadTest, AnEntryWithoutItsDescriptionStartsColdAndLoads) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 6, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  const std::string a_state = a->Snapshot()->SerializeAsString();
  a.reset();
  journal_.reset();
  {
    std::unique_ptr<StateDb> db;
    adapt::v1::CatalogEntry entry;
    ASSERT_NO_FATAL_FAILURE(OpenStored("t/a", &db, &entry));
    ASSERT_TRUE(entry.has_info());
    entry.clear_info();
    auto writer = db->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->PutCatalog("t/a", entry).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }
  auto recovered = Restart();
  ASSERT_EQ(recovered.count("t/a"), 1u);
  EXPECT_EQ(recovered["t/a"].store, nullptr);
  EXPECT_EQ(recovered["t/a"].kind, adapt::v1::STORE_KIND_FAAST);
  EXPECT_EQ(recovered["t/a"].Info().spec().dim(), 4u);  // the description is the spec alone
  EXPECT_EQ(recovered["t/a"].Info().examples(), 0u);
  auto loaded = journal_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->Snapshot()->SerializeAsString(), a_state);
}

TEST_F(JournalLoadTest, LoadOfADeletedOrUnknownStoreIsNotFound) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 2, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  Restart();
  ASSERT_TRUE(journal_->WaitDurable(journal_->AppendDelete("t", "a")).ok());
  EXPECT_EQ(journal_->Load("t", "a").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(journal_->Load("t", "zz").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JournalLoadTest, ADamagedStateFoundAtLoadFailsItsStoreForGood) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 5, 1).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  journal_.reset();
  ASSERT_NO_FATAL_FAILURE(FlipStoredStateBit("t/a"));
  Restart();  // start-up reads only the catalog: the damage is not seen yet
  auto loaded = journal_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::string reason =
      "the store failed to recover and serves nothing until deleted: the stored state of t/a: "
      "data: snapshot checksum mismatch (corrupt file)";
  EXPECT_EQ(StoreFailure(**loaded).message(), reason);
  auto recovered = Restart();
  ASSERT_NE(recovered["t/a"].store, nullptr);  // failed stores are never cold
  EXPECT_EQ(StoreFailure(*recovered["t/a"].store).message(), reason);
}

// A cold store's published read-out is stored beside its state and read alone, exactly as
// it was published; the state is not read for it (a damaged state does not stop it).
TEST_F(JournalLoadTest, AColdStoresReadOutLoadsAloneExactly) {
  Open();
  auto a = Create("a");
  auto b = Create("b");
  ASSERT_TRUE(Adapt("a", a.get(), 8, 1).ok());
  ASSERT_TRUE(a->Compile(adapt::v1::CompileRequest()).ok());
  ASSERT_TRUE(Adapt("a", a.get(), 3, 2).ok());  // pending: not in the read-out
  ASSERT_TRUE(Adapt("b", b.get(), 4, 3).ok());  // never compiled: no read-out
  ASSERT_TRUE(journal_->Checkpoint().ok());
  const std::shared_ptr<const LinearReadout> want = a->Readout();
  ASSERT_NE(want, nullptr);
  ASSERT_EQ(b->Readout(), nullptr);
  a.reset();
  b.reset();
  journal_.reset();
  ASSERT_NO_FATAL_FAILURE(RewriteStored("t/a", [](std::string* state, std::string* readout) {
    EXPECT_FALSE(readout->empty());
    (*state)[state->size() - 7] ^= 0x01;  // the state is damaged; the read-out is intact
  }));
  Restart();

  auto read = journal_->LoadReadout("t", "a");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_NE(*read, nullptr);
  const LinearReadout& got = **read;
  EXPECT_EQ(got.version, want->version);
  EXPECT_EQ(got.dim, want->dim);
  EXPECT_EQ(got.columns, want->columns);
  EXPECT_EQ(got.labels, want->labels);
  ASSERT_NE(got.label_names, nullptr);
  EXPECT_EQ(*got.label_names, *want->label_names);
  ASSERT_EQ(got.weights.size(), want->weights.size());
  EXPECT_EQ(
      std::memcmp(got.weights.data(), want->weights.data(), got.weights.size() * sizeof(float)), 0);
  // The state was not read for it: read whole, it fails the store.
  auto whole = journal_->Load("t", "a");
  ASSERT_TRUE(whole.ok());
  EXPECT_FALSE(StoreFailure(**whole).ok());
  // Once loaded (here: failed), the store answers for itself.
  EXPECT_EQ(journal_->LoadReadout("t", "a").value(), nullptr);
  EXPECT_EQ(journal_->LoadReadout("t", "b").value(), nullptr);
  EXPECT_EQ(journal_->LoadReadout("t", "zz").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JournalLoadTest, ADamagedReadOutFallsBackToTheState) {
  Open();
  auto a = Create("a");
  ASSERT_TRUE(Adapt("a", a.get(), 8, 1).ok());
  ASSERT_TRUE(a->Compile(adapt::v1::CompileRequest()).ok());
  ASSERT_TRUE(journal_->Checkpoint().ok());
  a.reset();
  journal_.reset();
  ASSERT_NO_FATAL_FAILURE(RewriteStored("t/a", [](std::string*, std::string* readout) {
    ASSERT_FALSE(readout->empty());
    std::fill(readout->begin(), readout->end(), '\xff');  // same size, does not parse
  }));
  Restart();
  auto read = journal_->LoadReadout("t", "a");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, nullptr);  // not a store failure: the state is read instead
  auto whole = journal_->Load("t", "a");
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(StoreFailure(**whole).ok());
  EXPECT_NE((*whole)->Readout(), nullptr);
}

}  // namespace
}  // namespace adaptd
