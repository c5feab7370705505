// StoreDirectory: where the stores are. Tenant → store → slot (the registry), each name added
// and removed with its durable record, the tiers (the memory budget, eviction, loading back,
// pins), the write fences a move closes, and which stores were created from which base (so a
// base in use is never deleted). It owns the durability the stores are recorded in.
//
// It is what the write session writes through (WriteTargets) and the predictor reads through
// (ReadTargets); StoreAdmin (store_admin.h) runs the calls that add, describe and remove
// stores on it. It schedules no compile itself: what needs one (a commit's wish, a load's
// pending examples) goes to the AutoCompile it was given.
//
// Thread safety: every method may be called concurrently.
#ifndef ADAPTD_SERVER_CORE_STORE_DIRECTORY_H_
#define ADAPTD_SERVER_CORE_STORE_DIRECTORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/core/predictor.h"
#include "server/core/registry.h"
#include "server/core/remembered_predictions.h"
#include "server/core/residency.h"
#include "server/core/write_fence.h"
#include "server/core/write_session.h"
#include "server/durability/durability.h"
#include "server/encoders/encoder_set.h"
#include "server/metrics/metrics.h"
#include "server/quota/tenant_quotas.h"
#include "server/stores/store.h"

namespace adaptd {

class StoreDirectory final : public WriteTargets, public ReadTargets {
 public:
  // Opens a Durability, filling `recovered` with the stores it holds (start-up).
  using DurabilityOpener = std::function<absl::StatusOr<std::unique_ptr<Durability>>(
      std::vector<RecoveredStore>* recovered)>;
  // Schedules an automatic compile of `store` after `delay` (urgent: ahead of idle ones).
  using AutoCompile =
      std::function<void(const std::shared_ptr<Store>& store, absl::Duration delay, bool urgent)>;

  // `backend`, `metrics` (nullable), `encoders` and `quotas` must outlive the directory. With
  // config.memory_budget_bytes, the residency thread starts (InvalidArgument without a
  // durability to keep evicted stores: `durable` false).
  static absl::StatusOr<std::unique_ptr<StoreDirectory>> Create(
      const adapt::v1::ServerConfig& config, bool durable, kernels::Backend* backend,
      Metrics* metrics, const EncoderSet* encoders, const TenantQuotas* quotas,
      AutoCompile auto_compile);
  ~StoreDirectory() override;

  // Opens the durability (null: nothing is durable) and makes a slot of each store it
  // recovered (store_directory_tiers.cc). Once, before serving.
  absl::Status Open(const DurabilityOpener& open);
  // A cluster member's shards (docs/CLUSTER_ETCD.md). AdoptShard makes a slot of each store the
  // durability recovers for the shard, as Open does at start. ReleaseShard closes the write
  // fence of each store `in_shard` names (waiting for the writes in flight), has the
  // durability write them out and forget them, and removes their slots without a durable
  // record (their truth stays where the durability keeps it); how many went.
  absl::Status AdoptShard(int shard);
  absl::StatusOr<size_t> ReleaseShard(
      int shard, const std::function<bool(const std::string&, const std::string&)>& in_shard);
  // Null when nothing is durable.
  Durability* durability() const { return durability_.get(); }
  // Stops the residency thread (eviction); idempotent.
  void Stop();

  // --- Lookups.
  // The whole store (loaded first when warm or cold): for writes, compiles and exports.
  absl::StatusOr<std::shared_ptr<Store>> Find(const std::string& tenant,
                                              const std::string& store) const;
  // ReadTargets: the hot store, or its warm form (a WarmStore, loaded first when cold; the
  // whole store for kinds without one), and what it remembers (RememberedOf): a store
  // without a feedback window answers null from a flag on its slot, copying nothing.
  absl::StatusOr<std::shared_ptr<Store>> FindForRead(
      const std::string& tenant, const std::string& store,
      std::shared_ptr<RememberedPredictions>* remembered = nullptr) const override;
  // The store's encoder, checked against the fingerprint the store recorded
  // (FailedPrecondition naming both when it changed or is no longer hosted).
  absl::StatusOr<const Encoder*> EncoderOf(const Store& store) const override;
  // WriteTargets: the slot's remembered predictions, made at the first predict of a store
  // whose spec has a feedback window, with the store's incarnation (0 when nothing is
  // durable); their bytes are counted in the slot's (StoreSlot::AddRememberedBytes), so in
  // the memory budget and the tenant's quota.
  std::shared_ptr<RememberedPredictions> RememberedOf(const std::string& tenant,
                                                      const std::string& store,
                                                      const Store& found) const override;
  // tenant/store's slot without loading it; NotFound naming it.
  absl::StatusOr<std::shared_ptr<StoreSlot>> Slot(const std::string& tenant,
                                                  const std::string& store) const {
    return registry_.Find(tenant, store);
  }
  bool Holds(const std::string& tenant, const std::string& store) const {
    return registry_.Find(tenant, store).ok();
  }
  Registry::Page ListPage(const std::string& tenant, const std::string& after, size_t limit) const {
    return registry_.ListPage(tenant, after, limit);
  }
  std::vector<std::string> TenantStoreNames(const std::string& tenant) const;
  // When each store `keep` names was last looked up (StoreSlot::last_use_nanos: every call's
  // lookup notes it; 0 when none did since the store was recovered cold), in name order: what
  // a cluster member's hot lists are made from (docs/CLUSTER_ETCD.md, "Failover").
  struct StoreUse {
    std::string tenant, store;
    int64_t last_use_nanos = 0;
  };
  std::vector<StoreUse> LastUses(
      const std::function<bool(const std::string&, const std::string&)>& keep) const;
  // What each tenant's stores hold when loaded.
  std::map<std::string, uint64_t> MemoryByTenant() const;

  // --- Descriptions (names, tier, checkpoint error, remembered ids included).
  adapt::v1::StoreInfo Describe(const std::string& tenant, const std::string& name,
                                const Store& store) const;
  // Without loading it (a cold store's last description), unless the durability says the
  // store's stored state is behind its log (StoredStateBehind): then it is loaded first, and
  // described by `failure` when that load fails.
  adapt::v1::StoreInfo Describe(const std::string& tenant, const std::string& name,
                                const StoreSlot& slot) const;

  // --- Adding and removing stores.
  // The tenant's quotas before `adding` joins its stores (a create or import), or before a
  // write (adding == nullptr): RESOURCE_EXHAUSTED naming the limit, else OK.
  absl::Status CheckQuota(const std::string& tenant, const Store* adding) const;
  // RESOURCE_EXHAUSTED naming the memory budget when `store` alone holds more than all of it.
  absl::Status CheckBudget(const Store& store) const;
  absl::Status CheckBudget(uint64_t store_bytes) const;  // a size already known
  // Adds a new store of `spec` (`seeded`: it has a state of its own already, stored as an
  // import's is): its record durable first (the name reserved, invisible meanwhile), then
  // visible; on a failure the name is free again. Under the pin budget when spec.pinned. A
  // spec with a base: the base is checked still held here (unless `base_remote`) and recorded
  // as in use, atomically with the add, so the base's deletion waits for it.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddCreated(const std::string& tenant,
                                                        const std::string& name,
                                                        const std::shared_ptr<Store>& store,
                                                        const adapt::v1::StoreSpec& spec,
                                                        bool seeded, bool base_remote)
      ABSL_LOCKS_EXCLUDED(base_mu_, pin_mu_);
  // Adds an imported store (its state stored before it is visible; `applied_ids`, oldest
  // first, remembered as applied); its base, if held here, is in use from now on.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddImported(
      const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
      const std::vector<std::string>& applied_ids) ABSL_LOCKS_EXCLUDED(base_mu_);
  // Removes tenant/store durably (its record durable before the call returns); refused while
  // the store is a base of others here, or was read for a create on another member within its
  // lease.
  absl::Status Remove(const std::string& tenant, const std::string& store)
      ABSL_LOCKS_EXCLUDED(base_mu_);

  // --- Pins (docs/RESIDENCY.md).
  // Pins or unpins the store in `slot` (loaded: `store`) durably; RESOURCE_EXHAUSTED naming the
  // budget when pinning it would pin more than the whole memory budget.
  absl::Status SetPinned(StoreSlot& slot, const Store& store, bool pinned)
      ABSL_LOCKS_EXCLUDED(pin_mu_);

  // --- Sizes. Notes what tenant/name's slot holds (its hot store's memory_bytes in `info`
  // plus the remembered ids) for the budget, when `store` is its hot store, and lets the
  // residency thread look.
  void NoteSize(const std::string& tenant, const std::string& name, const Store& store,
                const adapt::v1::StoreInfo& info) const;
  void NoteSize(StoreSlot& slot, const adapt::v1::StoreInfo& info) const;

  // --- Bases (docs/BASE_STORES.md).
  // How long a base read for another member's create is kept from deletion here.
  static constexpr absl::Duration kBaseLease = absl::Seconds(10);
  // Keeps `base` ("tenant/store") from deletion for kBaseLease.
  void LeaseBase(const std::string& base) ABSL_LOCKS_EXCLUDED(base_mu_);
  // The stores held here created from `base` ("tenant/store"): at most `max` names, and how
  // many.
  std::pair<std::vector<std::string>, size_t> DependantsHere(const std::string& base,
                                                             size_t max) const
      ABSL_LOCKS_EXCLUDED(base_mu_);

  // --- Write fences (docs/CLUSTER.md, "Hand-off").
  // Enters tenant/store's fence for one change (UNAVAILABLE while it moves).
  absl::StatusOr<FenceHold> EnterFence(const std::string& tenant,
                                       const std::string& store) override;
  // Closes tenant/store's fence (its changes get UNAVAILABLE from now on) and waits for those
  // in flight; OpenFence opens it again.
  void CloseFence(const std::string& tenant, const std::string& store);
  void OpenFence(const std::string& tenant, const std::string& store);

  // What start-up recovery did ("recovered N stores in ..."; empty when nothing is durable).
  const std::string& recovery_report() const { return recovery_report_; }

 private:
  StoreDirectory(kernels::Backend* backend, Metrics* metrics, const EncoderSet* encoders,
                 const TenantQuotas* quotas, AutoCompile auto_compile);

  absl::StatusOr<std::shared_ptr<Store>> Lookup(
      const std::string& tenant, const std::string& store, bool read,
      std::shared_ptr<RememberedPredictions>* remembered = nullptr) const;
  // `slot`'s remembered predictions, made at the first call (its spec has a window).
  std::shared_ptr<RememberedPredictions> RememberedIn(const std::string& tenant,
                                                      const std::string& store,
                                                      const std::shared_ptr<StoreSlot>& slot) const;
  // The remembered predictions grew: over the budget, residency runs a round.
  void RememberedGrew() const;
  // The rest of WriteTargets.
  absl::StatusOr<Target> FindForWrite(const std::string& tenant, const std::string& store) override;
  bool StillHolds(const std::string& tenant, const std::string& store,
                  const StoreSlot& slot) const override;
  absl::Status CheckRoomToWrite(const std::string& tenant, const StoreSlot& slot) const override;
  void AfterCommit(StoreSlot& slot, const std::shared_ptr<Store>& store, const CommitResult& result,
                   TxnKind kind) override;
  // Adds a store durably (AddCreated, AddImported): its log record durable first (an imported
  // store's state stored too), then visible.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddDurably(
      const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
      const adapt::v1::StoreSpec& spec, bool imported,
      const std::vector<std::string>& applied_ids = {});
  // AddDurably, under the pin budget when spec.pinned.
  absl::StatusOr<std::shared_ptr<StoreSlot>> AddMaybePinned(
      const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
      const adapt::v1::StoreSpec& spec, bool seeded) ABSL_LOCKS_EXCLUDED(pin_mu_);
  absl::Status RemoveLocked(const std::string& tenant, const std::string& store)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  // FailedPrecondition while `key` is leased as a base of a create on another member.
  // Makes a slot of each recovered store (Open, AdoptShard).
  absl::Status Adopt(std::vector<RecoveredStore>& recovered);
  absl::Status CheckBaseLease(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  void AddDependantLocked(const std::string& base, const std::string& dependant)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  void RemoveDependantLocked(const std::string& dependant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(base_mu_);
  // RESOURCE_EXHAUSTED naming the budget when pinning `adding` more bytes would pin more than
  // the whole memory budget.
  absl::Status CheckPinBudget(uint64_t adding) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu_);

  // Tiers (store_directory_tiers.cc). The loader of a slot: the store read back from the
  // durability.
  StoreSlot::Loader LoaderOf(const std::string& tenant, const std::string& name);
  // The warm loader of a slot of `kind`: the read-out of the stored state; null for a kind
  // without a warm tier.
  StoreSlot::WarmLoader WarmLoaderOf(const std::string& tenant, const std::string& name,
                                     adapt::v1::StoreKind kind);
  // A slot for `store`, with its loaders when anything is durable.
  std::shared_ptr<StoreSlot> NewSlot(const std::string& tenant, const std::string& name,
                                     const std::shared_ptr<Store>& store,
                                     adapt::v1::StoreKind kind);
  // What follows a load: metrics, and the automatic compile of examples no compile covered.
  void AfterLoad(const std::string& tenant, const std::string& name,
                 const std::shared_ptr<Store>& store);
  // Keeps adaptd_stores{kind, tier} in step with the slot's tier.
  void WatchTier(StoreSlot& slot);
  // Takes `slot`'s store a tier down (Residency's callback): hot to warm when its kind has a
  // warm tier and it has a read-out, otherwise to cold; warm to cold. True when it moved.
  bool Evict(const std::shared_ptr<StoreSlot>& slot);

  kernels::Backend* const backend_;
  Metrics* const metrics_;
  const EncoderSet* const encoders_;
  const TenantQuotas* const quotas_;
  const AutoCompile auto_compile_;
  std::unique_ptr<Durability> durability_;  // null: nothing is durable
  // Drawn as the directory is made: prediction ids served before a restart name another.
  const uint64_t start_nonce_ = DrawNonce();
  Registry registry_;
  absl::Mutex pin_mu_;  // pin changes, one at a time, so the pinned total holds
  WriteFences fences_;  // keys "tenant/store"; closed while the store moves
  // For each store named as a base ("tenant/store"), the stores created from it, and each such
  // store's base. Adds with a base and removes hold base_mu_ from their check to their
  // registry change.
  mutable absl::Mutex base_mu_ ABSL_ACQUIRED_BEFORE(pin_mu_);
  std::map<std::string, std::set<std::string>> dependants_ ABSL_GUARDED_BY(base_mu_);
  std::map<std::string, std::string> base_of_ ABSL_GUARDED_BY(base_mu_);
  // Bases read here for creates on other members, until when they are kept from deletion.
  std::map<std::string, absl::Time> base_leases_ ABSL_GUARDED_BY(base_mu_);
  std::string recovery_report_;
  // Null without a memory budget. Declared last: stopped first (its thread calls Evict).
  std::unique_ptr<Residency> residency_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_STORE_DIRECTORY_H_
