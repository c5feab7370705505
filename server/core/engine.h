// Engine: the core of adaptd behind the gRPC edge. It takes API messages, validates them
// (errors are absl::Status with codes chosen by their gRPC meaning and messages naming the
// field), encodes inputs, and runs store operations. It never includes a gRPC header; the
// edge maps its statuses one to one.
//
// Thread safety: every method may be called concurrently. Calls block only for their own
// compute; Compile hands its work to the compile pool and answers through a callback.
#ifndef ADAPTD_SERVER_CORE_ENGINE_H_
#define ADAPTD_SERVER_CORE_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/core/compile_pool.h"
#include "server/core/predictor.h"
#include "server/core/registry.h"
#include "server/core/remote_bases.h"
#include "server/core/residency.h"
#include "server/core/write_fence.h"
#include "server/core/write_session.h"
#include "server/durability/durability.h"
#include "server/encoders/encoder_set.h"
#include "server/metrics/metrics.h"
#include "server/persistence/env.h"
#include "server/quota/tenant_quotas.h"
#include "server/stores/store.h"
#include "server/stores/store_kind.h"

namespace adaptd {

class Engine : private WriteTargets, private ReadTargets {
 public:
  // `backend`, `metrics` (nullable) and `env` (the files and clock of the durable state
  // under config.data_dir; null: Env::Default()) must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const adapt::v1::ServerConfig& config,
                                                        kernels::Backend* backend, Metrics* metrics,
                                                        Env* env = nullptr);
  // Opens a Durability, filling `recovered` with the stores it holds (start-up).
  using DurabilityOpener = std::function<absl::StatusOr<std::unique_ptr<Durability>>(
      std::vector<RecoveredStore>* recovered)>;
  // As Create, over the durability `open` gives (null: nothing is durable) instead of the
  // local data directory of config.data_dir.
  static absl::StatusOr<std::unique_ptr<Engine>> CreateOver(const adapt::v1::ServerConfig& config,
                                                            kernels::Backend* backend,
                                                            Metrics* metrics,
                                                            DurabilityOpener open);
  // The opener of config.data_dir's local durability (the write-ahead log and state
  // database), reporting to `metrics` (nullable); null without a data directory.
  static DurabilityOpener LocalDurabilityOf(const adapt::v1::ServerConfig& config,
                                            kernels::Backend* backend, Metrics* metrics, Env* env);
  ~Engine();

  absl::StatusOr<adapt::v1::StoreInfo> CreateStore(const adapt::v1::CreateStoreRequest& request);
  absl::StatusOr<adapt::v1::StoreInfo> GetStore(const adapt::v1::GetStoreRequest& request) const;
  absl::StatusOr<adapt::v1::ListStoresResponse> ListStores(
      const adapt::v1::ListStoresRequest& request) const;
  absl::Status DeleteStore(const adapt::v1::DeleteStoreRequest& request);
  // Pins or unpins a store (docs/RESIDENCY.md), durably; loads it first.
  absl::StatusOr<adapt::v1::StoreInfo> PinStore(const adapt::v1::PinStoreRequest& request);

  std::unique_ptr<WriteSession> StartWrite(TxnKind kind);

  // Predict and PredictBatch: the engine's Predictor (predictor.h).
  absl::StatusOr<adapt::v1::PredictResponse> Predict(
      const adapt::v1::PredictRequest& request) const {
    return predictor_.Predict(request);
  }
  std::vector<absl::StatusOr<adapt::v1::PredictResponse>> PredictBatch(
      const std::vector<const adapt::v1::PredictRequest*>& requests) const {
    return predictor_.PredictBatch(requests);
  }

  // Runs on the compile pool; `done` is called there (or at once on a validation error).
  void Compile(const adapt::v1::CompileRequest& request, CompilePool::Done done);

  // The store's snapshot file (see snapshot_file.h).
  absl::StatusOr<std::string> Export(const adapt::v1::ExportStoreRequest& request) const;
  // Creates tenant/store from a snapshot file; the store must not exist. `applied_ids`
  // (oldest first) are remembered as applied, so resends of them are skipped. An imported
  // store starts unpinned, except one `moved` here from another member of the cluster
  // (docs/CLUSTER.md, "Hand-off"): it keeps its pin (when the pin budget allows) and counts
  // in no quota check (it is a store the tenant has already).
  absl::StatusOr<adapt::v1::StoreInfo> Import(const std::string& tenant, const std::string& store,
                                              std::string_view file,
                                              const std::vector<std::string>& applied_ids = {},
                                              bool moved = false);

  // Base stores across a cluster (docs/CLUSTER.md, "Base stores"): where bases another
  // member holds come from (set before serving; null: every base is read here).
  void SetRemoteBases(RemoteBases* remote) { remote_bases_ = remote; }
  // How long a base read for another member's create is kept from deletion here.
  static constexpr absl::Duration kBaseLease = absl::Seconds(10);
  // Base tenant/store as held here, for another member (NotFound when not held here);
  // `for_create` starts its lease.
  absl::StatusOr<ExportedBase> ReadBaseHere(const std::string& tenant, const std::string& store,
                                            bool for_create) ABSL_LOCKS_EXCLUDED(base_mu_);
  // The stores held here created from `base` ("tenant/store"): at most `max` names, and how
  // many.
  std::pair<std::vector<std::string>, size_t> DependantsHere(const std::string& base,
                                                             size_t max) const
      ABSL_LOCKS_EXCLUDED(base_mu_);

  // Cluster quotas (docs/CLUSTER.md, "Quotas"): the tenants' limits and buckets, the names
  // of a tenant's stores held here, and what each tenant's stores here hold when loaded.
  TenantQuotas& quotas() const { return *quotas_; }
  std::vector<std::string> TenantStoreNames(const std::string& tenant) const;
  std::map<std::string, uint64_t> MemoryByTenant() const;

  // Cluster hand-off (docs/CLUSTER.md, "Hand-off").
  // Whether this server holds tenant/store (in any tier).
  bool Holds(const std::string& tenant, const std::string& store) const;
  // The stores held, as (tenant, store) in name order; `keep` (optional, quick: it runs
  // under the registry's lock) filters.
  std::vector<std::pair<std::string, std::string>> HeldStores(
      const std::function<bool(const std::string&, const std::string&)>& keep = nullptr) const;
  struct Outgoing {
    std::string file;                      // the snapshot file (Export's)
    std::vector<std::string> applied_ids;  // the ids the store remembers, oldest first
  };
  // Closes tenant/store's fence (its changes get UNAVAILABLE from now on; waits for those in
  // flight), then reads what a move sends. The fence stays closed until Unfence or DropMoved.
  absl::StatusOr<Outgoing> ExportForMove(const std::string& tenant, const std::string& store);
  void Unfence(const std::string& tenant, const std::string& store);
  // Deletes the copy of a store another member now holds, durably: as DeleteStore, but a
  // base others here use goes too (their refresh_base finds it no more).
  absl::Status DropMoved(const std::string& tenant, const std::string& store);

  adapt::v1::ListEncodersResponse ListEncoders() const { return encoders_->List(); }

  // Stops the compile pool (queued explicit compiles finish; pending auto compiles drop).
  void Shutdown();

  // Makes every acknowledged change part of a store snapshot and drops the log they cover
  // (graceful shutdown; engine_journal.cc). A no-op without a data directory.
  absl::Status Flush();
  // What start-up recovery did, and how long each step took ("recovered N stores in ...";
  // empty without a data directory).
  const std::string& recovery_report() const { return recovery_report_; }

 private:
  Engine(const adapt::v1::ServerConfig& config, kernels::Backend* backend, Metrics* metrics,
         std::unique_ptr<EncoderSet> encoders);

  // The whole store (loaded first when warm or cold): for writes, compiles and exports.
  absl::StatusOr<std::shared_ptr<Store>> Find(const std::string& tenant,
                                              const std::string& store) const;
  // What a predict needs: the hot store, or its warm form (a WarmStore, loaded first when
  // cold; the whole store for kinds without one).
  absl::StatusOr<std::shared_ptr<Store>> FindForRead(const std::string& tenant,
                                                     const std::string& store) const override;
  absl::StatusOr<std::shared_ptr<Store>> Lookup(const std::string& tenant, const std::string& store,
                                                bool read) const;
  // The store's encoder, checked against the fingerprint the store recorded
  // (FailedPrecondition naming both when it changed or is no longer hosted).
  absl::StatusOr<const Encoder*> EncoderOf(const Store& store) const override;
  adapt::v1::StoreInfo Describe(const std::string& tenant, const std::string& name,
                                const Store& store) const;
  // Without loading it (a cold store's last description).
  adapt::v1::StoreInfo Describe(const std::string& tenant, const std::string& name,
                                const StoreSlot& slot) const;
  // What follows a load from the state database: metrics, and the automatic compile of
  // examples that no compile covered (engine_journal.cc).
  void AfterLoad(const std::string& tenant, const std::string& name,
                 const std::shared_ptr<Store>& store);
  void AfterCommit(StoreSlot& slot, const std::shared_ptr<Store>& store, const CommitResult& result,
                   TxnKind kind) override;
  // The rest of WriteTargets: what a write session needs of the stores (engine.cc).
  absl::StatusOr<Target> FindForWrite(const std::string& tenant, const std::string& store) override;
  bool StillHolds(const std::string& tenant, const std::string& store,
                  const StoreSlot& slot) const override;
  absl::Status CheckRoomToWrite(const std::string& tenant, const StoreSlot& slot) const override;
  // Adds a created or imported store: its log record durable first (an imported store's state
  // stored too; the name reserved, invisible meanwhile), then visible; on a failure the name
  // is free again.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddDurably(
      const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
      const adapt::v1::StoreSpec& spec, bool imported,
      const std::vector<std::string>& applied_ids = {});
  // Enters tenant/store's fence for one change (UNAVAILABLE while it moves).
  absl::StatusOr<FenceHold> EnterFence(const std::string& tenant,
                                       const std::string& store) override;
  absl::Status RemoveStore(const std::string& tenant, const std::string& store,
                           bool keep_dependants) ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  // A new store, pinned or not (CreateStore): AddDurably, under the pin budget when pinned.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddCreated(const std::string& tenant,
                                                        const std::string& name,
                                                        const std::shared_ptr<Store>& store,
                                                        const adapt::v1::StoreSpec& spec,
                                                        bool seeded) ABSL_LOCKS_EXCLUDED(pin_mu_);
  // RESOURCE_EXHAUSTED naming the budget when pinning `adding` more bytes would pin more than
  // the whole memory budget.
  absl::Status CheckPinBudget(uint64_t adding) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);
  // Opens the durability and makes a slot of each store it recovered (engine_journal.cc).
  absl::Status OpenDurability(const DurabilityOpener& open);
  // The compile pool's log step (CompilePool::Log): a solved compile's record, explicit or
  // automatic, appended durably before the compile is published, so replay reproduces it and a
  // crash never serves a version the log lacks; an automatic one's size is noted once published.
  absl::StatusOr<CompilePool::Published> LogCompile(const Store& store,
                                                    const adapt::v1::CompileRequest& request,
                                                    const BaseReadout* base, bool automatic);
  // Notes what tenant/name's slot holds (its hot store's memory_bytes in `info` plus the
  // journal's remembered ids) for the budget, when `store` is its hot store, and lets the
  // residency thread look.
  void NoteSize(const std::string& tenant, const std::string& name, const Store& store,
                const adapt::v1::StoreInfo& info) const;
  void NoteSize(StoreSlot& slot, const adapt::v1::StoreInfo& info) const;
  // `done`, after an explicit compile was logged and published (or failed): notes its size.
  CompilePool::Done NoteCompileThen(const adapt::v1::CompileRequest& request, const Store* store,
                                    CompilePool::Done done);
  // The base a new store of `spec` (of `tenant`, named `name`) starts from, checked against
  // the spec, which gains the base's full name, dim and (falcon, when unset) key_norm.
  absl::StatusOr<ExportedBase> ResolveBase(const std::string& tenant, const std::string& name,
                                           adapt::v1::StoreSpec* spec);
  // Base tenant/store, read here or from the member that holds it (remote_bases_).
  absl::StatusOr<ExportedBase> ReadBase(const std::string& tenant, const std::string& store,
                                        bool for_create);
  // Records that `dependant` was created from `base` (full names).
  void AddDependantLocked(const std::string& base, const std::string& dependant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  void RemoveDependantLocked(const std::string& dependant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  // The tenant's quotas before `adding` joins its stores (a create or import), or before a
  // write (adding == nullptr): RESOURCE_EXHAUSTED naming the limit, else OK.
  absl::Status CheckQuota(const std::string& tenant, const Store* adding) const;
  // RESOURCE_EXHAUSTED naming the memory budget when `store` alone holds more than all of it.
  absl::Status CheckBudget(const Store& store) const;
  absl::Status CheckBudget(uint64_t store_bytes) const;  // a size already known
  // The loader of a slot: the store read back from the state database (engine_journal.cc).
  StoreSlot::Loader LoaderOf(const std::string& tenant, const std::string& name);
  // The warm loader of a slot of `kind`: the read-out of the stored state; null for a kind
  // without a warm tier (engine_journal.cc).
  StoreSlot::WarmLoader WarmLoaderOf(const std::string& tenant, const std::string& name,
                                     adapt::v1::StoreKind kind);
  // Keeps adaptd_stores{kind, tier} in step with the slot's tier.
  void WatchTier(StoreSlot& slot);
  // Takes `slot`'s store a tier down (Residency's callback): hot to warm when its kind has a
  // warm tier and it has a read-out, otherwise to cold; warm to cold. True when it moved.
  bool Evict(const std::shared_ptr<StoreSlot>& slot);

  const int64_t max_dim_;
  kernels::Backend* backend_;
  Metrics* metrics_;
  std::unique_ptr<EncoderSet> encoders_;
  const Predictor predictor_;               // reads through this engine (ReadTargets)
  std::unique_ptr<Durability> durability_;  // null: nothing is durable (no data directory)
  Registry registry_;
  std::unique_ptr<TenantQuotas> quotas_;
  CompilePool compile_pool_;
  absl::Mutex pin_mu_;  // pin changes, one at a time, so the pinned total holds
  WriteFences fences_;  // keys "tenant/store"; closed while the store moves
  // Base stores (docs/BASE_STORES.md): for each store named as a base ("tenant/store"), the
  // stores created from it, and each such store's base, so a base in use is never deleted.
  // Creates with a base and deletes hold it from their check to their registry change.
  mutable absl::Mutex base_mu_ ABSL_ACQUIRED_BEFORE(pin_mu_);
  std::map<std::string, std::set<std::string>> dependants_ ABSL_GUARDED_BY(base_mu_);
  std::map<std::string, std::string> base_of_ ABSL_GUARDED_BY(base_mu_);
  // Bases read here for creates on other members, until when they are kept from deletion.
  std::map<std::string, absl::Time> base_leases_ ABSL_GUARDED_BY(base_mu_);
  RemoteBases* remote_bases_ = nullptr;
  // Null without a memory budget. Declared last: stopped first (its thread calls Evict).
  std::unique_ptr<Residency> residency_;
  std::string recovery_report_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_ENGINE_H_
