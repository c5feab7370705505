// StoreSlot: one store's place in the registry. It always knows the store's names, spec and
// last description; it holds the Store itself only while the store is loaded (hot), or only
// its read-out while it is warm (a WarmStore, warm_store.h). A slot made from a catalog entry
// starts cold and loads on the first call that needs it (docs/RESIDENCY.md): Get for the
// whole store, GetForRead for what a predict needs. Concurrent first calls load once, the
// others waiting for it; a failed load answers every waiter with its error and leaves the
// slot as it was, so a later call tries again. Eviction (Residency) takes a tier away only
// while nobody holds it; a call meanwhile waits for the eviction to end.
//
// Thread-safety: every method may be called concurrently. The loaders run without the slot's
// lock held.
#ifndef ADAPTD_SERVER_CORE_STORE_SLOT_H_
#define ADAPTD_SERVER_CORE_STORE_SLOT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/adapt.pb.h"
#include "server/core/remembered_predictions.h"
#include "server/core/warm_store.h"
#include "server/stores/store.h"

namespace adaptd {

class StoreSlot {
 public:
  using Loader = std::function<absl::StatusOr<std::shared_ptr<Store>>()>;
  // Reads what a predict needs: a WarmStore, or null when the store has no warm form (then
  // the whole store is loaded instead). `stored` is the description the slot holds of the
  // stored state (null when it has none): a WarmStore made from it shares it, so a store that
  // turns warm allocates no second description and frees none.
  using WarmLoader = std::function<absl::StatusOr<std::shared_ptr<WarmStore>>(
      const std::shared_ptr<const adapt::v1::StoreInfo>& stored)>;

  // A loaded store; `loader` (may be null) reads it back after an eviction; `warm_loader`
  // (may be null: reads load the whole store) reads its warm form.
  StoreSlot(std::string tenant, std::string name, std::shared_ptr<Store> store,
            Loader loader = nullptr, WarmLoader warm_loader = nullptr);
  // A cold store: `info` as last described (its memory_bytes what the store holds when
  // loaded), and the loaders that read it back.
  StoreSlot(std::string tenant, std::string name, adapt::v1::StoreInfo info, Loader loader,
            WarmLoader warm_loader = nullptr);
  // The same with the description as stored (a serialized StoreInfo, spec included): it is
  // parsed by each call that describes the store while it is cold, and kept once the store
  // is read warm. A cold store so holds its description's bytes, not its parsed form (what
  // start-up makes for every store: docs/RESIDENCY.md, "Start-up"). A description that does
  // not parse is described by its failure, and reads load the whole store.
  StoreSlot(std::string tenant, std::string name, adapt::v1::StoreKind kind,
            std::string stored_info, Loader loader, WarmLoader warm_loader = nullptr);
  ~StoreSlot();
  StoreSlot(const StoreSlot&) = delete;
  StoreSlot& operator=(const StoreSlot&) = delete;

  const std::string& tenant() const { return tenant_; }
  const std::string& name() const { return name_; }
  adapt::v1::StoreKind kind() const { return kind_; }

  // The whole store, loaded first when warm or cold; `loaded` (optional) says whether this
  // call loaded it.
  absl::StatusOr<std::shared_ptr<Store>> Get(bool* loaded = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // What a read needs: the hot store, or the warm one, loading the warm form first when cold
  // (the whole store for a kind or store without one).
  absl::StatusOr<std::shared_ptr<Store>> GetForRead(bool* loaded = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The hot store, or null when warm or cold; never loads.
  std::shared_ptr<Store> loaded() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the slot holds anything in memory (hot or warm).
  bool resident() const ABSL_LOCKS_EXCLUDED(mu_);
  adapt::v1::Tier tier() const ABSL_LOCKS_EXCLUDED(mu_);
  // Never loads.
  adapt::v1::StoreSpec spec() const ABSL_LOCKS_EXCLUDED(mu_);
  // The hot or warm store's description (memory_bytes: what that tier holds), or the last
  // one (tier cold, memory_bytes 0: a cold store holds nothing but its slot). Never loads.
  adapt::v1::StoreInfo Describe() const ABSL_LOCKS_EXCLUDED(mu_);
  // What the whole store holds when hot: its memory_bytes now, or when it was last described.
  uint64_t loaded_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // What the slot holds now (hot: the store's memory_bytes; warm: the read-out's; cold: 0;
  // and in every tier the remembered predictions' bytes), as last noted (at creation, load,
  // eviction and each commit): cheap, for the residency thread's rounds.
  uint64_t noted_bytes() const { return bytes_.load(std::memory_order_relaxed); }
  // `bytes` the store holds and `beside` what is kept for it elsewhere (the journal's
  // remembered ids): noted_bytes() is their sum, store_bytes() the store's part alone. The
  // change is added to the tally the slot counts in, if any.
  void NoteBytes(uint64_t bytes, uint64_t beside = 0) ABSL_LOCKS_EXCLUDED(tally_mu_);
  // A running total of what slots hold (Residency's): the slot adds what it holds now and,
  // from then on, each change NoteBytes makes, until it is destroyed (then it takes its share
  // away). A slot counts in one tally; later calls change nothing.
  using ByteTally = std::atomic<int64_t>;
  void CountIn(const std::shared_ptr<ByteTally>& tally) ABSL_LOCKS_EXCLUDED(tally_mu_);
  uint64_t store_bytes() const { return store_bytes_.load(std::memory_order_relaxed); }
  // StoreSpec.pinned: a pinned store is never evicted.
  bool pinned() const { return pinned_.load(std::memory_order_relaxed); }
  void set_pinned(bool pinned) { pinned_.store(pinned, std::memory_order_relaxed); }
  // The store left this server with its shard (StoreDirectory::ReleaseShard), not deleted: a
  // call that began on it answers UNAVAILABLE (resend it to the new holder), not NOT_FOUND.
  bool released() const { return released_.load(std::memory_order_acquire); }
  void set_released(bool released) { released_.store(released, std::memory_order_release); }
  // The monotonic time of the last Get, for least-recently-used order.
  int64_t last_use_nanos() const { return last_use_.load(std::memory_order_relaxed); }

  // Observes the slot's tier: called at once with (TIER_UNSPECIFIED, the tier now), then at
  // each load and eviction, under the slot's lock (keep it short), until Retire.
  // `warm_bytes`: what the warm store arriving or leaving holds (0 when neither tier is warm).
  using TierHook =
      std::function<void(adapt::v1::Tier from, adapt::v1::Tier to, uint64_t warm_bytes)>;
  void SetTierHook(TierHook hook) ABSL_LOCKS_EXCLUDED(mu_);
  // The store left the registry: the hook hears (the tier now, TIER_UNSPECIFIED), and no more.
  void Retire() ABSL_LOCKS_EXCLUDED(mu_);

  // Eviction, step 1: the hot or warm store if it may go now (not loading or being evicted,
  // not pinned, and referred to by nobody but the slot and, for a hot store, `holders` known
  // others such as the journal); `tier` says which. The slot is then evicting until
  // FinishEvict. Null otherwise.
  std::shared_ptr<Store> BeginEvict(long holders, adapt::v1::Tier* tier = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Step 2: `evicted` drops the store a tier down: a hot one turns warm when `warm` (made from
  // `info`) is given, otherwise cold, described by `info` (its description when hot); a warm
  // one turns cold.
  // Otherwise it stays as it was.
  void FinishEvict(bool evicted, adapt::v1::StoreInfo info,
                   std::shared_ptr<WarmStore> warm = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // The predictions the store served and remembers for Feedback (docs/FEEDBACK.md), in
  // memory only and kept across the store's tiers: made by `make` at the first call, the
  // same ones after. RememberedIfAny never makes them (null before).
  using RememberedMaker = std::function<std::shared_ptr<RememberedPredictions>()>;
  std::shared_ptr<RememberedPredictions> Remembered(const RememberedMaker& make)
      ABSL_LOCKS_EXCLUDED(remembered_mu_);
  std::shared_ptr<RememberedPredictions> RememberedIfAny() const
      ABSL_LOCKS_EXCLUDED(remembered_mu_);
  // The spec's feedback window count (0: none), known without copying the spec once the
  // slot has held the store or its description (at creation, or the first load after a
  // start): a predict on a store without a window reads this and nothing more.
  uint32_t feedback_window() const { return feedback_window_.load(std::memory_order_relaxed); }
  // The bytes the remembered predictions hold (RememberedPredictions::BytesHook's changes,
  // added here): part of noted_bytes() in every tier, never of store_bytes().
  void AddRememberedBytes(int64_t delta) ABSL_LOCKS_EXCLUDED(tally_mu_);
  uint64_t remembered_bytes() const { return remembered_bytes_.load(std::memory_order_relaxed); }
  // Memory pressure: drops the oldest remembered predictions until `wanted` bytes are freed
  // (RememberedPredictions::Shed); returns the bytes freed (0 when none are remembered).
  uint64_t ShedRemembered(uint64_t wanted) ABSL_LOCKS_EXCLUDED(remembered_mu_);

 private:
  const std::string tenant_, name_;
  const adapt::v1::StoreKind kind_;
  mutable absl::Mutex mu_;
  // Orders the changes to bytes_ with the tally's (NoteBytes may run under mu_ or not).
  absl::Mutex tally_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::shared_ptr<ByteTally> tally_ ABSL_GUARDED_BY(tally_mu_);
  // Loads the whole store (warm = false) or what a read needs, under mu_ (released while the
  // loader runs); `loading_` and `evicting_` are false.
  absl::StatusOr<std::shared_ptr<Store>> LoadLocked(bool warm, bool* loaded_now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::shared_ptr<Store> store_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<WarmStore> warm_ ABSL_GUARDED_BY(mu_);  // null when hot or cold
  // The last description when warm or cold (memory_bytes: the whole store's); a warm store
  // shares its own (WarmStore::info), so it is held once. Null while hot.
  std::shared_ptr<const adapt::v1::StoreInfo> info_ ABSL_GUARDED_BY(mu_);
  // Instead of info_ while cold and never described since start-up: its serialized form.
  std::string packed_info_ ABSL_GUARDED_BY(mu_);
  // info_, or packed_info_ parsed (not kept); null when neither is there (hot).
  std::shared_ptr<const adapt::v1::StoreInfo> ColdInfoLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Loader loader_;
  const WarmLoader warm_loader_;
  bool loading_ ABSL_GUARDED_BY(mu_) = false;
  bool evicting_ ABSL_GUARDED_BY(mu_) = false;
  TierHook hook_ ABSL_GUARDED_BY(mu_);
  adapt::v1::Tier TierLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return store_ != nullptr  ? adapt::v1::TIER_HOT
           : warm_ != nullptr ? adapt::v1::TIER_WARM
                              : adapt::v1::TIER_COLD;
  }
  mutable absl::Mutex remembered_mu_;
  std::shared_ptr<RememberedPredictions> remembered_ ABSL_GUARDED_BY(remembered_mu_);
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> store_bytes_{0};
  std::atomic<uint64_t> remembered_bytes_{0};
  std::atomic<uint32_t> feedback_window_{0};
  void NoteSpec(const adapt::v1::StoreSpec& spec) {
    feedback_window_.store(spec.feedback().count(), std::memory_order_relaxed);
  }
  std::atomic<bool> pinned_{false};
  std::atomic<bool> released_{false};
  std::atomic<int64_t> last_use_{0};
};

// What a call on tenant/store answers when the store left the registry while it ran: NOT_FOUND
// "was deleted during the call", or UNAVAILABLE when `slot` was released with its shard
// (nothing of the call was applied here; resend it, to the member holding the shard now).
absl::Status GoneDuringCall(const StoreSlot& slot, const std::string& tenant,
                            const std::string& store);
// `status` as the call answers it: a NOT_FOUND (the durability no longer knows the store) on a
// released slot turns into GoneDuringCall's UNAVAILABLE; anything else is kept.
absl::Status MovedIfReleased(const StoreSlot& slot, const std::string& tenant,
                             const std::string& store, absl::Status status);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_STORE_SLOT_H_
