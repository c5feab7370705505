// The contract every Durability implementation passes (durability.h): a typed gtest suite over
// a harness that opens the implementation on its durable state, restarts it (the previous
// server dropped without a checkpoint, as a crash leaves it), and fails an append before it
// is durable. An implementation's test instantiates it:
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(Local, DurabilityContract, LocalHarness);
//
// Test-only.
#ifndef ADAPTD_SERVER_DURABILITY_DURABILITY_CONTRACT_H_
#define ADAPTD_SERVER_DURABILITY_DURABILITY_CONTRACT_H_

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/base/status_macros.h"
#include "server/durability/durability.h"
#include "server/persistence/journal.h"
#include "server/persistence/replay.h"
#include "server/stores/faast_store.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"
#include "server/stores/timings_test_util.h"

namespace adaptd {

// What a harness provides (each implementation's test defines one):
//   explicit Harness(kernels::Backend* backend);
//   // Opens a server on the durable state; the caller has dropped the previous one.
//   absl::StatusOr<std::unique_ptr<Durability>> Open(std::vector<RecoveredStore>* recovered);
//   // The next append fails before it is durable, as a crash between the two would leave it.
//   void FailNextAppend();
template <typename Harness>
class DurabilityContract : public ::testing::Test {
 protected:
  static constexpr uint32_t kDim = 4;

  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    harness_ = std::make_unique<Harness>(backend_.get());
    Restart();
  }
  void TearDown() override {
    stores_.clear();
    if (durability_ != nullptr) durability_->Close();
    durability_.reset();
    harness_.reset();
  }

  // Drops the server (no checkpoint) and opens another on the same durable state; stores_
  // holds what it recovered, loaded.
  void Restart() {
    stores_.clear();
    if (durability_ != nullptr) durability_->Close();
    durability_.reset();
    std::vector<RecoveredStore> recovered;
    absl::StatusOr<std::unique_ptr<Durability>> opened = harness_->Open(&recovered);
    ASSERT_TRUE(opened.ok()) << opened.status();
    durability_ = *std::move(opened);
    pinned_.clear();
    incarnations_.clear();
    for (RecoveredStore& r : recovered) {
      if (r.store == nullptr) {
        absl::StatusOr<std::shared_ptr<Store>> loaded = durability_->Load(r.tenant, r.name);
        ASSERT_TRUE(loaded.ok()) << loaded.status();
        r.store = *loaded;
      }
      stores_[r.name] = r.store;
      pinned_[r.name] = r.pinned;
      incarnations_[r.name] = r.incarnation;
    }
  }

  static adapt::v1::StoreSpec Spec(const std::string& kind_name) {
    const StoreKind* kind = StoreKinds::Global().Find(kind_name);
    EXPECT_NE(kind, nullptr) << kind_name;
    adapt::v1::OutputSpec labels;
    labels.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    absl::StatusOr<adapt::v1::StoreSpec> spec = SmallSpec(*kind, kDim, labels);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : adapt::v1::StoreSpec();
  }

  Fence FenceOf(const std::string& name) const { return durability_->CurrentFence("t", name); }

  // Creates t/`name` of `kind`, durably.
  std::shared_ptr<Store> Create(const std::string& name, const std::string& kind = "faast") {
    const adapt::v1::StoreSpec spec = Spec(kind);
    absl::StatusOr<std::unique_ptr<Store>> created = CreateStore(spec, backend_.get());
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return nullptr;
    std::shared_ptr<Store> store = *std::move(created);
    absl::StatusOr<Position> position =
        durability_->AppendCreate("t", name, store, spec, /*imported=*/false, FenceOf(name));
    EXPECT_TRUE(position.ok()) << position.status();
    if (position.ok()) {
      EXPECT_TRUE(durability_->WaitDurable(*position).ok());
    }
    stores_[name] = store;
    return store;
  }

  // `rows` random keys, labelled "even" and "odd" in turn.
  static ExampleBatch Batch(int rows, uint32_t seed) {
    ExampleBatch batch;
    batch.rows = rows;
    batch.dim = kDim;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    for (int i = 0; i < rows * static_cast<int>(kDim); ++i) batch.keys.push_back(normal(rng));
    for (int i = 0; i < rows; ++i) batch.labels.push_back(i % 2 ? "odd" : "even");
    return batch;
  }

  // An Adapt (or Forget) call of `batch` on t/`name`, through the durability; `applied`
  // (optional) counts the times its application ran.
  absl::StatusOr<CommitResult> Write(const std::string& name, const ExampleBatch& batch,
                                     std::vector<std::string> ids = {}, bool forget = false,
                                     const Fence* fence = nullptr,
                                     std::atomic<int>* applied = nullptr) {
    std::shared_ptr<Store> store = stores_[name];
    if (store == nullptr) return absl::NotFoundError(name);
    adapt::v1::WalWrite write;
    write.set_forget(forget);
    *write.add_batches() = ToWalBatch(batch);
    for (auto& id : ids) write.add_ids(id);
    return CommitWrite(*durability_, "t", name, store.get(), std::move(write),
                       fence != nullptr ? *fence : FenceOf(name),
                       [store, batch, forget, applied]() -> absl::StatusOr<CommitResult> {
                         if (applied != nullptr) ++*applied;
                         std::unique_ptr<Txn> txn =
                             store->Begin(forget ? TxnKind::kForget : TxnKind::kAdapt);
                         if (absl::Status added = txn->Add(batch); !added.ok()) return added;
                         return store->Commit(*txn);
                       });
  }

  // An Adapt call of `batch` on t/`name` as the write session makes one: staged first, its
  // record carrying the figures the transaction counted as it staged (Txn::StagedPrequential),
  // applied once durable.
  absl::StatusOr<CommitResult> AdaptStaged(const std::string& name, const ExampleBatch& batch) {
    std::shared_ptr<Store> store = stores_[name];
    if (store == nullptr) return absl::NotFoundError(name);
    std::shared_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    RETURN_IF_ERROR(txn->Add(batch));
    adapt::v1::WalWrite write;
    *write.add_batches() = ToWalBatch(batch);
    if (std::optional<PrequentialStats> counted = txn->StagedPrequential()) {
      *write.mutable_prequential() = ToWalPrequential(*counted);
    }
    return CommitWrite(*durability_, "t", name, store.get(), std::move(write), FenceOf(name),
                       [store, txn] { return store->Commit(*txn); });
  }

  // A compile of t/`name`, published, then its record appended.
  absl::Status CompileLogged(const std::string& name, const adapt::v1::CompileRequest& request) {
    Store* store = stores_[name].get();
    RETURN_IF_ERROR(store->Compile(request).status());
    return durability_->AppendCompile("t", name, store, request, nullptr, FenceOf(name));
  }

  // A store's whole state as the export format writes it, less the timings of its last
  // compile (replay takes its own time): equal states, equal stores.
  static std::string StateOf(const Store& store) {
    absl::StatusOr<std::string> file = EncodeStoreFile(store);
    EXPECT_TRUE(file.ok()) << file.status();
    if (!file.ok()) return "";
    absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = DecodeSnapshotFile(*file);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    if (!snapshot.ok()) return "";
    ClearTimings(&*snapshot);
    return snapshot->SerializeAsString();
  }
  std::map<std::string, std::string> States() const {
    std::map<std::string, std::string> states;
    for (const auto& [name, store] : stores_) states[name] = StateOf(*store);
    return states;
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Harness> harness_;
  std::unique_ptr<Durability> durability_;
  std::map<std::string, std::shared_ptr<Store>> stores_;  // by name, tenant "t"
  std::map<std::string, bool> pinned_;                    // as recovered
  std::map<std::string, uint64_t> incarnations_;          // as recovered
};

TYPED_TEST_SUITE_P(DurabilityContract);

// Replay equality: every kind's stores, written, forgotten, compiled, pinned and checkpointed
// part way, come back from a restart equal bit for bit to the stores as acknowledged.
TYPED_TEST_P(DurabilityContract, RecoveredStoresEqualTheAcknowledgedOnes) {
  uint32_t seed = 1;
  for (const std::string kind : {"faast", "falcon", "fwpkm"}) {
    ASSERT_NE(this->Create(kind, kind), nullptr);
    ASSERT_TRUE(this->Write(kind, this->Batch(6, seed++)).ok());
  }
  ASSERT_TRUE(this->durability_->Checkpoint().ok());
  for (const std::string kind : {"faast", "falcon", "fwpkm"}) {
    ASSERT_TRUE(this->Write(kind, this->Batch(5, seed++), {"x", "y"}).ok());
  }
  // A compile with a parameter override (faast: the only kind that compiles), then more.
  Store* faast = this->stores_["faast"].get();
  adapt::v1::CompileRequest compile;
  compile.mutable_faast()->set_ridge(0.25);
  absl::StatusOr<adapt::v1::CompileResponse> compiled = faast->Compile(compile);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(this->durability_
                  ->AppendCompile("t", "faast", faast, compile, nullptr, this->FenceOf("faast"))
                  .ok());
  for (const std::string kind : {"faast", "falcon", "fwpkm"}) {
    ASSERT_TRUE(this->Write(kind, this->Batch(3, seed++)).ok());
  }
  const ExampleBatch first = this->Batch(6, 1);  // faast's first write, forgotten
  ASSERT_TRUE(this->Write("faast", first, {}, /*forget=*/true).ok());
  ASSERT_TRUE(
      this->durability_
          ->AppendPin("t", "falcon", this->stores_["falcon"].get(), true, this->FenceOf("falcon"))
          .ok());
  const std::map<std::string, std::string> acknowledged = this->States();

  this->Restart();
  EXPECT_EQ(this->States(), acknowledged);
  EXPECT_TRUE(this->pinned_["falcon"]);
  EXPECT_FALSE(this->pinned_["faast"]);
  // Once more, from the stored states alone.
  ASSERT_TRUE(this->durability_->Checkpoint().ok());
  this->Restart();
  EXPECT_EQ(this->States(), acknowledged);
  EXPECT_TRUE(this->pinned_["falcon"]);
}

// Crash points: a write whose record could not be made durable is not acknowledged, its
// application never ran, and a restart does not have it; the write acknowledged before it is
// kept.
TYPED_TEST_P(DurabilityContract, AWriteNotDurableIsNeitherAppliedNorRecovered) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(4, 1), {"kept"}).ok());
  const std::string acknowledged = this->StateOf(*this->stores_["a"]);
  this->harness_->FailNextAppend();
  std::atomic<int> applied{0};
  absl::StatusOr<CommitResult> lost =
      this->Write("a", this->Batch(4, 2), {"lost"}, false, nullptr, &applied);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable) << lost.status();
  EXPECT_FALSE(IsOwnershipLost(lost.status()));
  EXPECT_EQ(applied.load(), 0);
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), acknowledged);

  this->Restart();
  ASSERT_NE(this->stores_["a"], nullptr);
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), acknowledged);
  Store* a = this->stores_["a"].get();
  EXPECT_TRUE(this->durability_->Applied("t", "a", a, "kept"));
  EXPECT_FALSE(this->durability_->Applied("t", "a", a, "lost"));
}

// Fencing: an append with a fence that is not the store's fails with ownership lost,
// changes nothing (now or after a restart), and leaves other stores' appends alone.
TYPED_TEST_P(DurabilityContract, AStaleFenceFailsWithOwnershipLostAndChangesNothing) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_NE(this->Create("b"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(4, 1)).ok());
  const std::string before = this->StateOf(*this->stores_["a"]);
  const Fence stale{"a-fence-of-another-holder"};
  ASSERT_NE(stale, this->FenceOf("a"));
  std::atomic<int> applied{0};
  absl::StatusOr<CommitResult> write =
      this->Write("a", this->Batch(4, 2), {"id"}, false, &stale, &applied);
  EXPECT_TRUE(IsOwnershipLost(write.status())) << write.status();
  EXPECT_EQ(write.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(applied.load(), 0);
  Store* a = this->stores_["a"].get();
  EXPECT_TRUE(IsOwnershipLost(this->durability_->AppendPin("t", "a", a, true, stale)));
  EXPECT_TRUE(IsOwnershipLost(
      this->durability_->AppendCompile("t", "a", a, adapt::v1::CompileRequest(), nullptr, stale)));
  EXPECT_TRUE(IsOwnershipLost(this->durability_->AppendDelete("t", "a", stale).status()));
  EXPECT_FALSE(this->durability_->Applied("t", "a", a, "id"));
  EXPECT_EQ(this->StateOf(*a), before);
  ASSERT_TRUE(this->Write("b", this->Batch(4, 3)).ok());  // another store is unaffected

  this->Restart();
  ASSERT_NE(this->stores_["a"], nullptr) << "a stale delete removed the store";
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), before);
  EXPECT_FALSE(this->pinned_["a"]);
  EXPECT_FALSE(this->durability_->Applied("t", "a", this->stores_["a"].get(), "id"));
}

// Ordering: writes of one store from several threads apply one at a time in the order they
// were logged, so the store replay rebuilds equals the store as acknowledged (falcon's
// updates depend on their order; a different order gives different bits).
TYPED_TEST_P(DurabilityContract, ConcurrentWritesApplyInLogOrder) {
  for (const std::string name : {"p", "q"}) ASSERT_NE(this->Create(name, "falcon"), nullptr);
  constexpr int kThreads = 4, kWrites = 12;
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, &failed] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string name = (i + t) % 2 ? "p" : "q";
        if (!this->Write(name, this->Batch(2, static_cast<uint32_t>(100 * t + i))).ok()) ++failed;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(failed.load(), 0);
  const std::map<std::string, std::string> acknowledged = this->States();
  this->Restart();
  EXPECT_EQ(this->States(), acknowledged);
}

// Idempotent ids: an id applied by an acknowledged write is applied after a restart (from the
// log, and from a stored state), a write repeating it is refused whole before anything is
// logged, and an id never sent is not applied.
TYPED_TEST_P(DurabilityContract, AppliedIdsSurviveRestarts) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(2, 1), {"one", "two"}).ok());
  this->Restart();
  Store* a = this->stores_["a"].get();
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(this->durability_->Applied("t", "a", a, "one"));
  EXPECT_TRUE(this->durability_->Applied("t", "a", a, "two"));
  EXPECT_FALSE(this->durability_->Applied("t", "a", a, "three"));
  EXPECT_EQ(this->durability_->RememberedIds("t", "a", a),
            (std::vector<std::string>{"one", "two"}));
  const std::string before = this->StateOf(*a);
  std::atomic<int> applied{0};
  EXPECT_EQ(this->Write("a", this->Batch(2, 2), {"three", "two"}, false, nullptr, &applied)
                .status()
                .code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(applied.load(), 0);
  EXPECT_EQ(this->StateOf(*a), before);
  ASSERT_TRUE(this->Write("a", this->Batch(2, 3), {"three"}).ok());
  ASSERT_TRUE(this->durability_->Checkpoint().ok());
  this->Restart();
  a = this->stores_["a"].get();
  EXPECT_EQ(this->durability_->RememberedIds("t", "a", a),
            (std::vector<std::string>{"one", "two", "three"}));
}

// Deletes and imports: a deleted store is gone after a restart and refuses writes; an import
// is recovered with its ids only once its state was stored.
TYPED_TEST_P(DurabilityContract, DeletesAndImportsRecoverAsAcknowledged) {
  ASSERT_NE(this->Create("gone"), nullptr);
  ASSERT_NE(this->Create("source"), nullptr);
  ASSERT_TRUE(this->Write("source", this->Batch(5, 1)).ok());
  std::shared_ptr<Store> gone = this->stores_["gone"];
  absl::StatusOr<Position> deleted =
      this->durability_->AppendDelete("t", "gone", this->FenceOf("gone"));
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  ASSERT_TRUE(this->durability_->WaitDurable(*deleted).ok());
  EXPECT_EQ(this->Write("gone", this->Batch(1, 2)).status().code(), absl::StatusCode::kNotFound);

  // An import: the source's state under a new name, with ids it applied elsewhere.
  const std::string file = EncodeStoreFile(*this->stores_["source"]).value();
  const std::string state = this->StateOf(*this->stores_["source"]);
  absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(file);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<std::unique_ptr<Store>> restored =
      RestoreStore(decoded->header, decoded->arrays, this->backend_.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  std::shared_ptr<Store> imported = *std::move(restored);
  absl::StatusOr<Position> created = this->durability_->AppendCreate(
      "t", "imported", imported, imported->spec(), /*imported=*/true, this->FenceOf("imported"));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(this->durability_->WaitDurable(*created).ok());
  ASSERT_TRUE(this->durability_->StoreImported("t", "imported", imported.get(), {"sent"}).ok());
  this->stores_["imported"] = imported;
  // An import whose state was never stored (the call failed before): not acknowledged.
  absl::StatusOr<std::unique_ptr<Store>> copy =
      RestoreStore(decoded->header, decoded->arrays, this->backend_.get());
  ASSERT_TRUE(copy.ok()) << copy.status();
  absl::StatusOr<Position> half =
      this->durability_->AppendCreate("t", "half", *std::move(copy), decoded->header.spec(),
                                      /*imported=*/true, this->FenceOf("half"));
  ASSERT_TRUE(half.ok()) << half.status();
  ASSERT_TRUE(this->durability_->WaitDurable(*half).ok());

  this->Restart();
  EXPECT_EQ(this->stores_.count("gone"), 0u);
  EXPECT_EQ(this->stores_.count("half"), 0u);
  ASSERT_NE(this->stores_["imported"], nullptr);
  EXPECT_EQ(this->StateOf(*this->stores_["imported"]), state);
  EXPECT_TRUE(this->durability_->Applied("t", "imported", this->stores_["imported"].get(), "sent"));
}

// Cold stores: a store let go cold (its state stored) loads back equal, with its ids.
TYPED_TEST_P(DurabilityContract, AnUnloadedStoreLoadsBackEqual) {
  ASSERT_NE(this->Create("a", "falcon"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(4, 1), {"id"}).ok());
  std::shared_ptr<Store> a = this->stores_["a"];
  const std::string before = this->StateOf(*a);
  absl::StatusOr<bool> unloaded = this->durability_->Unload("t", "a", a.get());
  ASSERT_TRUE(unloaded.ok()) << unloaded.status();
  ASSERT_TRUE(*unloaded);
  EXPECT_EQ(this->durability_->RememberedBytes("t", "a"), 0u);
  absl::StatusOr<std::shared_ptr<Store>> loaded = this->durability_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_NE(loaded->get(), a.get());
  EXPECT_EQ(this->StateOf(**loaded), before);
  EXPECT_TRUE(this->durability_->Applied("t", "a", loaded->get(), "id"));
  // The old object is no longer the store: a write through it is refused.
  EXPECT_EQ(this->Write("a", this->Batch(1, 2)).status().code(), absl::StatusCode::kNotFound);
}

// The compile order: a compile is solved, its record made durable, then published. One whose
// record could not be made durable publishes nothing (the previous version serves, now and
// after a restart); one whose record is durable serves its version after a restart.
TYPED_TEST_P(DurabilityContract, ACompileIsPublishedOnlyOnceItsRecordIsDurable) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(6, 1)).ok());
  Store* a = this->stores_["a"].get();
  const auto compile = [&]() -> absl::StatusOr<adapt::v1::CompileResponse> {
    adapt::v1::CompileRequest request;
    absl::StatusOr<std::unique_ptr<StagedCompile>> staged = a->SolveCompile(request);
    if (!staged.ok()) return staged.status();
    RETURN_IF_ERROR(
        this->durability_->AppendCompile("t", "a", a, request, nullptr, this->FenceOf("a")));
    return a->PublishCompile(*std::move(staged));
  };
  absl::StatusOr<adapt::v1::CompileResponse> first = compile();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(this->Write("a", this->Batch(4, 2)).ok());
  const std::string published = this->StateOf(*a);

  this->harness_->FailNextAppend();
  EXPECT_FALSE(compile().ok());
  EXPECT_EQ(this->StateOf(*a), published);  // version 1 serves, the examples still pending
  adapt::v1::StoreInfo info;
  a->Describe(&info);
  EXPECT_EQ(info.version(), 1u);

  this->Restart();
  ASSERT_NE(this->stores_["a"], nullptr);
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), published);
  a = this->stores_["a"].get();
  absl::StatusOr<adapt::v1::CompileResponse> second = compile();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->version(), 2u);
  const std::string acknowledged = this->StateOf(*a);
  this->Restart();
  ASSERT_NE(this->stores_["a"], nullptr);
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), acknowledged);
}

// Replay solves once: a store whose log holds many compiles (forgets between them) recovers
// equal to the acknowledged store, its last compile solved once.
TYPED_TEST_P(DurabilityContract, ManyCompilesRecoverEqualAndSolveOnce) {
  ASSERT_NE(this->Create("a"), nullptr);
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    ASSERT_TRUE(this->Write("a", this->Batch(6, seed)).ok());
  }
  Store* a = this->stores_["a"].get();
  for (int i = 0; i < 12; ++i) {
    adapt::v1::CompileRequest request;
    if (i % 5 == 2) request.mutable_faast()->set_ridge(0.05 * i);
    ASSERT_TRUE(a->Compile(request).ok());
    ASSERT_TRUE(
        this->durability_->AppendCompile("t", "a", a, request, nullptr, this->FenceOf("a")).ok());
    if (i % 4 == 3) {
      ASSERT_TRUE(
          this->Write("a", this->Batch(6, static_cast<uint32_t>(i / 4 + 1)), {}, true).ok());
    }
  }
  const std::string acknowledged = this->StateOf(*a);

  this->Restart();
  ASSERT_NE(this->stores_["a"], nullptr);
  EXPECT_EQ(this->StateOf(*this->stores_["a"]), acknowledged);
  auto* recovered = dynamic_cast<FaastStore*>(this->stores_["a"].get());
  ASSERT_NE(recovered, nullptr);
  EXPECT_EQ(recovered->solves(), 1u);
}

// Replay solves once even when adapts follow the compiles: each adapt's record carries the
// prequential figures it counted, so replay evaluates none of them against a compile, and the
// store, its prequential statistics and its predictions recover as acknowledged.
TYPED_TEST_P(DurabilityContract, CompileAdaptPairsRecoverEqualAndSolveOnce) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_TRUE(this->Write("a", this->Batch(8, 1)).ok());
  Store* a = this->stores_["a"].get();
  for (int i = 0; i < 6; ++i) {
    adapt::v1::CompileRequest request;
    if (i % 3 == 1) request.mutable_faast()->set_ridge(0.1 * i);
    ASSERT_TRUE(this->CompileLogged("a", request).ok());
    absl::StatusOr<CommitResult> adapted =
        this->AdaptStaged("a", this->Batch(5, static_cast<uint32_t>(i + 2)));
    ASSERT_TRUE(adapted.ok()) << adapted.status();
    EXPECT_EQ(adapted->prequential.evaluated, 5u);
  }
  const std::string acknowledged = this->StateOf(*a);
  adapt::v1::StoreInfo before;
  a->Describe(&before);
  const ExampleBatch probe = this->Batch(7, 99);
  absl::StatusOr<Predictions> predicted = a->Predict(probe.keys.data(), probe.rows, probe.dim, 2);
  ASSERT_TRUE(predicted.ok()) << predicted.status();

  this->Restart();
  auto* recovered = dynamic_cast<FaastStore*>(this->stores_["a"].get());
  ASSERT_NE(recovered, nullptr);
  EXPECT_EQ(recovered->solves(), 1u);
  EXPECT_EQ(this->StateOf(*recovered), acknowledged);
  adapt::v1::StoreInfo after;
  recovered->Describe(&after);
  EXPECT_EQ(after.version(), before.version());
  EXPECT_EQ(after.prequential_evaluated(), 30u);
  EXPECT_EQ(after.prequential_evaluated(), before.prequential_evaluated());
  EXPECT_EQ(after.prequential_correct(), before.prequential_correct());
  EXPECT_EQ(after.prequential_loss_sum(), before.prequential_loss_sum());
  absl::StatusOr<Predictions> again =
      recovered->Predict(probe.keys.data(), probe.rows, probe.dim, 2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->version, predicted->version);
  EXPECT_EQ(again->label_ids, predicted->label_ids);
  EXPECT_EQ(again->scores, predicted->scores);
}

// Incarnations are the stores' own: a delete and a create of a name give its next store another,
// and restarts keep each, from the log and from stored states.
TYPED_TEST_P(DurabilityContract, ARecreatedStoreHasAnotherIncarnationAndRestartsKeepEach) {
  ASSERT_NE(this->Create("a"), nullptr);
  ASSERT_NE(this->Create("b"), nullptr);
  const uint64_t first = this->durability_->Incarnation("t", "a");
  const uint64_t of_b = this->durability_->Incarnation("t", "b");
  EXPECT_NE(first, 0u);
  EXPECT_NE(of_b, 0u);
  EXPECT_EQ(this->durability_->Incarnation("t", "never"), 0u);
  ASSERT_TRUE(this->Write("a", this->Batch(4, 1)).ok());
  this->Restart();
  EXPECT_EQ(this->incarnations_["a"], first);
  EXPECT_EQ(this->durability_->Incarnation("t", "a"), first);
  EXPECT_EQ(this->durability_->Incarnation("t", "b"), of_b);

  absl::StatusOr<Position> deleted = this->durability_->AppendDelete("t", "a", this->FenceOf("a"));
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  ASSERT_TRUE(this->durability_->WaitDurable(*deleted).ok());
  EXPECT_EQ(this->durability_->Incarnation("t", "a"), 0u);
  ASSERT_NE(this->Create("a"), nullptr);
  const uint64_t second = this->durability_->Incarnation("t", "a");
  EXPECT_NE(second, 0u);
  EXPECT_NE(second, first);
  this->Restart();
  EXPECT_EQ(this->incarnations_["a"], second);
  EXPECT_EQ(this->incarnations_["b"], of_b);
  ASSERT_TRUE(this->durability_->Checkpoint().ok());
  this->Restart();
  EXPECT_EQ(this->incarnations_["a"], second);
  EXPECT_EQ(this->incarnations_["b"], of_b);
  EXPECT_EQ(this->durability_->Incarnation("t", "a"), second);
}

REGISTER_TYPED_TEST_SUITE_P(DurabilityContract, RecoveredStoresEqualTheAcknowledgedOnes,
                            AWriteNotDurableIsNeitherAppliedNorRecovered,
                            AStaleFenceFailsWithOwnershipLostAndChangesNothing,
                            ConcurrentWritesApplyInLogOrder, AppliedIdsSurviveRestarts,
                            DeletesAndImportsRecoverAsAcknowledged, AnUnloadedStoreLoadsBackEqual,
                            ACompileIsPublishedOnlyOnceItsRecordIsDurable,
                            ManyCompilesRecoverEqualAndSolveOnce,
                            CompileAdaptPairsRecoverEqualAndSolveOnce,
                            ARecreatedStoreHasAnotherIncarnationAndRestartsKeepEach);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_DURABILITY_CONTRACT_H_
