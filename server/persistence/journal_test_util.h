// JournalFixture: drives a Journal the way the engine does, over real faast stores of
// dimension 4 in a fresh directory, for the persistence tests. Not thread-safe (one test's
// main thread; Adapt may also be called from the test's own threads on different stores).
#ifndef ADAPTD_SERVER_PERSISTENCE_JOURNAL_TEST_UTIL_H_
#define ADAPTD_SERVER_PERSISTENCE_JOURNAL_TEST_UTIL_H_

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/persistence/journal.h"
#include "server/stores/store_factory.h"

namespace adaptd {

class JournalFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ = ::testing::TempDir() + "/adaptd-journal-" + std::to_string(rd());
    std::filesystem::remove_all(dir_);
    backend_ = kernels::MakeCpuBackend();
  }
  void TearDown() override {
    journal_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::map<std::string, std::shared_ptr<Store>> Open(uint64_t snapshot_log_bytes = 1 << 30) {
    journal_.reset();
    JournalOptions options;
    options.data_dir = dir_;
    options.snapshot_log_bytes = snapshot_log_bytes;
    options.env = env_;
    options.after_state_commit = after_state_commit_;
    options.on_checkpoint = [this](uint64_t written, uint64_t failed) {
      checkpoints_.push_back({written, failed});
    };
    checkpoints_.clear();
    recovered_incarnations_.clear();
    std::vector<RecoveredStore> recovered;
    auto journal = Journal::Open(options, backend_.get(), &recovered);
    EXPECT_TRUE(journal.ok()) << journal.status();
    journal_ = *std::move(journal);
    std::map<std::string, std::shared_ptr<Store>> stores;
    // Start-up leaves stored stores cold: load each, as its first call would.
    for (auto& r : recovered) {
      if (r.store == nullptr) {
        auto loaded = journal_->Load(r.tenant, r.name);
        EXPECT_TRUE(loaded.ok()) << loaded.status();
        if (loaded.ok()) r.store = *loaded;
      }
      stores[StoreKey(r.tenant, r.name)] = r.store;
      recovered_incarnations_[StoreKey(r.tenant, r.name)] = r.incarnation;
    }
    return stores;
  }

  // What Create makes: a faast label store of dimension 4.
  static adapt::v1::StoreSpec Spec() {
    adapt::v1::StoreSpec spec;
    spec.set_kind(adapt::v1::STORE_KIND_FAAST);
    spec.set_encoder("identity");
    spec.set_dim(4);
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    return spec;
  }

  // `wrap`, when given, wraps the created store (a test's fault-injecting Store).
  std::shared_ptr<Store> Create(
      const std::string& name,
      const std::function<std::shared_ptr<Store>(std::shared_ptr<Store>)>& wrap = nullptr) {
    const adapt::v1::StoreSpec spec = Spec();
    auto created = CreateStore(spec, backend_.get());
    EXPECT_TRUE(created.ok()) << created.status();
    std::shared_ptr<Store> store = *std::move(created);
    if (wrap) store = wrap(std::move(store));
    EXPECT_TRUE(journal_->WaitDurable(journal_->AppendCreate("t", name, store, spec, false)).ok());
    return store;
  }

  // `rows` random keys labelled "even" and "odd" in turn.
  static ExampleBatch Batch(int rows, uint32_t seed) {
    ExampleBatch batch;
    batch.rows = rows;
    batch.dim = 4;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    for (int i = 0; i < rows * 4; ++i) batch.keys.push_back(normal(rng));
    for (int i = 0; i < rows; ++i) batch.labels.push_back(i % 2 ? "odd" : "even");
    return batch;
  }

  // Adapts `store` on `batch` directly, as a committed write does.
  static absl::StatusOr<CommitResult> ApplyBatch(Store* store, const ExampleBatch& batch) {
    auto txn = store->Begin(TxnKind::kAdapt);
    absl::Status added = txn->Add(batch);
    if (!added.ok()) return added;
    return store->Commit(*txn);
  }

  absl::Status Adapt(const std::string& name, Store* store, int rows, uint32_t seed,
                     std::vector<std::string> ids = {}) {
    const ExampleBatch batch = Batch(rows, seed);
    adapt::v1::WalWrite write;
    *write.add_batches() = ToWalBatch(batch);
    for (auto& id : ids) write.add_ids(id);
    return journal_->Commit("t", name, store, write, [&] { return ApplyBatch(store, batch); })
        .status();
  }

  // Opens the state database (the journal must be closed) and reads `key`'s catalog entry.
  void OpenStored(const std::string& key, std::unique_ptr<StateDb>* db,
                  adapt::v1::CatalogEntry* entry) {
    StateDbOptions options;
    options.dir = dir_ + "/state";
    auto opened = StateDb::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    *db = *std::move(opened);
    ASSERT_TRUE((*db)
                    ->ScanCatalog([&](std::string_view k, adapt::v1::CatalogEntry e) {
                      if (k == key) *entry = std::move(e);
                      return absl::OkStatus();
                    })
                    .ok());
  }

  // Rewrites `key`'s stored state and read-out (empty: none) through `change` (the journal
  // must be closed: one process opens the state database once).
  void RewriteStored(const std::string& key,
                     const std::function<void(std::string* state, std::string* readout)>& change) {
    std::unique_ptr<StateDb> db;
    adapt::v1::CatalogEntry entry;
    ASSERT_NO_FATAL_FAILURE(OpenStored(key, &db, &entry));
    std::string state = db->ReadState(key, entry).value();
    std::string readout;
    if (entry.readout_bytes() > 0) readout = db->ReadReadout(key, entry).value();
    change(&state, &readout);
    auto writer = db->BeginWrite();
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->PutStore(key, &entry, state, readout).ok());
    ASSERT_TRUE(writer->Commit().ok());
  }

  // Flips one bit near the end of `key`'s stored state, as a failing disk would (the journal
  // must be closed: one process opens the state database once). The read-out goes with it.
  void FlipStoredStateBit(const std::string& key) {
    RewriteStored(key, [](std::string* state, std::string* readout) {
      (*state)[state->size() - 7] ^= 0x01;
      readout->clear();
    });
  }

  static adapt::v1::StoreInfo Info(const Store& store) {
    adapt::v1::StoreInfo info;
    store.Describe(&info);
    return info;
  }

  std::string dir_;
  Env* env_ = nullptr;                        // what Open gives the journal (null: the POSIX Env)
  std::function<void()> after_state_commit_;  // what Open gives the journal
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Journal> journal_;
  // What each checkpoint reported (on_checkpoint): stores written and stores failed.
  std::vector<std::pair<uint64_t, uint64_t>> checkpoints_;
  // The last Open's recovered stores' incarnations, by key.
  std::map<std::string, uint64_t> recovered_incarnations_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_JOURNAL_TEST_UTIL_H_
