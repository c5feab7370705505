// StoreDirectory's tiers (docs/RESIDENCY.md): opening the durability and a slot for each store
// it recovered, loading a cold or warm store back, the memory budget a store must fit, the
// eviction of one store to its cold or warm tier, the tier metrics, sizes, and pins.
#include <cstdio>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/core/store_directory.h"
#include "server/core/warm_store.h"
#include "server/persistence/failed_store.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

// Whether stores of `kind` keep their read-out when evicted (StoreKind::warm).
bool HasWarmTier(adapt::v1::StoreKind kind) {
  const StoreKind* k = StoreKinds::Global().Find(kind);
  return k != nullptr && k->warm;
}

}  // namespace

absl::Status StoreDirectory::Open(const DurabilityOpener& open) {
  if (open == nullptr) return absl::OkStatus();
  std::vector<RecoveredStore> recovered;
  ASSIGN_OR_RETURN(durability_, open(&recovered));
  const absl::Time opened = absl::Now();
  RETURN_IF_ERROR(Adopt(recovered));
  recovered.clear();
  recovered.shrink_to_fit();
#ifdef __GLIBC__
  // Recovery's temporaries (every store's catalog record, read and copied) are freed now;
  // the pages they leave whole go back to the system (bench/RESULTS.md, "Heap per cold and
  // warm store").
  malloc_trim(0);
#endif
  recovery_report_ = absl::StrFormat("recovered %s; slots %.3f s", durability_->recovery_report(),
                                     absl::ToDoubleSeconds(absl::Now() - opened));
  return absl::OkStatus();
}

absl::Status StoreDirectory::AdoptShard(int shard) {
  if (durability_ == nullptr) return absl::FailedPreconditionError("nothing is durable here");
  std::vector<RecoveredStore> recovered;
  RETURN_IF_ERROR(durability_->OpenShard(shard, &recovered));
  return Adopt(recovered);
}

absl::StatusOr<size_t> StoreDirectory::ReleaseShard(
    int shard, const std::function<bool(const std::string&, const std::string&)>& in_shard) {
  if (durability_ == nullptr) return absl::FailedPreconditionError("nothing is durable here");
  const std::vector<std::pair<std::string, std::string>> held = registry_.Names(in_shard);
  for (const auto& [tenant, store] : held) CloseFence(tenant, store);
  // Marked before the durability lets go of them: a call that found a store before and
  // reaches its commit after answers UNAVAILABLE, to be resent to the new holder.
  std::vector<std::shared_ptr<StoreSlot>> marked;
  for (const auto& [tenant, store] : held) {
    absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Find(tenant, store);
    if (!slot.ok()) continue;
    (*slot)->set_released(true);
    marked.push_back(*std::move(slot));
  }
  std::vector<std::string> closed;
  absl::Status written = durability_->CloseShard(shard, &closed);
  if (!written.ok()) {
    for (const std::shared_ptr<StoreSlot>& slot : marked) slot->set_released(false);
  }
  size_t removed = 0;
  if (written.ok()) {
    absl::MutexLock base_lock(&base_mu_);
    for (const auto& [tenant, store] : held) {
      absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Remove(tenant, store);
      if (!slot.ok()) continue;
      RemoveDependantLocked(absl::StrCat(tenant, "/", store));
      (*slot)->Retire();
      if (metrics_ != nullptr) {
        if (auto loaded = (*slot)->loaded(); loaded != nullptr) metrics_->ForgetStore(loaded.get());
      }
      ++removed;
    }
  }
  for (const auto& [tenant, store] : held) OpenFence(tenant, store);
  if (!written.ok()) return written;
  return removed;
}

absl::Status StoreDirectory::Adopt(std::vector<RecoveredStore>& recovered) {
  for (auto& r : recovered) {
    // A cold store is read from the durability by the first call that needs it.
    auto slot = r.store != nullptr
                    ? NewSlot(r.tenant, r.name, r.store, r.kind)
                    : std::make_shared<StoreSlot>(r.tenant, r.name, r.kind, std::move(r.info),
                                                  LoaderOf(r.tenant, r.name),
                                                  WarmLoaderOf(r.tenant, r.name, r.kind));
    slot->set_pinned(r.pinned);
    if (!r.base.empty()) {
      absl::MutexLock lock(&base_mu_);
      AddDependantLocked(r.base, absl::StrCat(r.tenant, "/", r.name));
    }
    RETURN_IF_ERROR(registry_.Insert(r.tenant, r.name, slot));
    WatchTier(*slot);
    if (r.store != nullptr) {
      AfterLoad(r.tenant, r.name, r.store);
      if (residency_ != nullptr) residency_->Loaded(slot);
    }
  }
  return absl::OkStatus();
}

std::shared_ptr<StoreSlot> StoreDirectory::NewSlot(const std::string& tenant,
                                                   const std::string& name,
                                                   const std::shared_ptr<Store>& store,
                                                   adapt::v1::StoreKind kind) {
  if (durability_ == nullptr) return std::make_shared<StoreSlot>(tenant, name, store);
  return std::make_shared<StoreSlot>(tenant, name, store, LoaderOf(tenant, name),
                                     WarmLoaderOf(tenant, name, kind));
}

StoreSlot::Loader StoreDirectory::LoaderOf(const std::string& tenant, const std::string& name) {
  return [this, tenant, name]() -> absl::StatusOr<std::shared_ptr<Store>> {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(std::shared_ptr<Store> store, durability_->Load(tenant, name));
    if (metrics_ != nullptr) {
      metrics_->RecordLoad(KindName(store->spec().kind()),
                           absl::ToDoubleSeconds(absl::Now() - start));
    }
    AfterLoad(tenant, name, store);
    return store;
  };
}

StoreSlot::WarmLoader StoreDirectory::WarmLoaderOf(const std::string& tenant,
                                                   const std::string& name,
                                                   adapt::v1::StoreKind kind) {
  if (!HasWarmTier(kind)) return nullptr;
  return [this, tenant, name](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
             -> absl::StatusOr<std::shared_ptr<WarmStore>> {
    // A store behind its log has no warm form yet: the slot loads it whole (the log replayed),
    // so that neither its read-out nor its description misses a record.
    if (durability_->StoredStateBehind(tenant, name)) return nullptr;
    const absl::Time start = absl::Now();
    // The read-out stored beside the state, read alone, with the slot's description of the
    // stored state (written with it).
    if (stored != nullptr) {
      ASSIGN_OR_RETURN(std::shared_ptr<const LinearReadout> readout,
                       durability_->LoadReadout(tenant, name));
      if (readout != nullptr) {
        if (metrics_ != nullptr) {
          metrics_->RecordLoad(KindName(stored->spec().kind()),
                               absl::ToDoubleSeconds(absl::Now() - start));
        }
        return std::make_shared<WarmStore>(stored, std::move(readout), backend_);
      }
    }
    // Otherwise the state is read whole and its read-out kept. A store without a read-out
    // (nothing published yet) is loaded whole instead: the durability keeps it, and the slot's
    // loader finds it there.
    ASSIGN_OR_RETURN(std::shared_ptr<Store> store,
                     durability_->Load(tenant, name, [](const Store& restored) {
                       return restored.Readout() != nullptr;
                     }));
    std::shared_ptr<const LinearReadout> readout = store->Readout();
    if (readout == nullptr || !StoreFailure(*store).ok()) return nullptr;
    if (metrics_ != nullptr) {
      metrics_->RecordLoad(KindName(store->spec().kind()),
                           absl::ToDoubleSeconds(absl::Now() - start));
    }
    // The slot's description of a cold store is the catalog's, written with the state just
    // read: shared as it is rather than made again.
    if (stored != nullptr) return std::make_shared<WarmStore>(stored, std::move(readout), backend_);
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    return std::make_shared<WarmStore>(std::move(info), std::move(readout), backend_);
  };
}

void StoreDirectory::AfterLoad(const std::string& tenant, const std::string& name,
                               const std::shared_ptr<Store>& store) {
  adapt::v1::StoreInfo info = Describe(tenant, name, *store);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  // Examples that no compile covered are pending, as they were before the store was stored;
  // a store that compiles by itself compiles them now (StoreKind::compile_after_load: faast's
  // idle timer did not survive). A store with automatic compiles off keeps them pending, so a
  // restart or a load changes nothing a reader can see.
  const StoreKind* kind = StoreKinds::Global().Find(info.spec().kind());
  if (info.failure().empty() && kind != nullptr && kind->compile_after_load &&
      kind->compile_after_load(info)) {
    auto_compile_(store, absl::ZeroDuration(), /*urgent=*/false);
  }
}

void StoreDirectory::NoteSize(const std::string& tenant, const std::string& name,
                              const Store& store, const adapt::v1::StoreInfo& info) const {
  absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Find(tenant, name);
  if (slot.ok() && (*slot)->loaded().get() == &store) NoteSize(**slot, info);
}

void StoreDirectory::NoteSize(StoreSlot& slot, const adapt::v1::StoreInfo& info) const {
  const uint64_t ids =
      durability_ != nullptr ? durability_->RememberedBytes(slot.tenant(), slot.name()) : 0;
  slot.NoteBytes(info.memory_bytes(), ids);
  if (residency_ != nullptr) residency_->Grew();
}

absl::Status StoreDirectory::CheckBudget(const Store& store) const {
  if (residency_ == nullptr) return absl::OkStatus();
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return CheckBudget(info.memory_bytes());
}

absl::Status StoreDirectory::CheckBudget(uint64_t store_bytes) const {
  if (residency_ == nullptr || store_bytes <= residency_->budget_bytes()) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "memory_budget_bytes: the store holds ", store_bytes,
      " bytes, more than the server's whole memory budget of ", residency_->budget_bytes()));
}

void StoreDirectory::WatchTier(StoreSlot& slot) {
  if (metrics_ == nullptr) return;
  // Captures the kind's enum, not its name: small enough for std::function to keep inline.
  slot.SetTierHook([m = metrics_, kind = slot.kind()](adapt::v1::Tier from, adapt::v1::Tier to,
                                                      uint64_t warm_bytes) {
    m->MoveStore(KindName(kind), from, to, warm_bytes);
  });
}

bool StoreDirectory::Evict(const std::shared_ptr<StoreSlot>& slot) {
  // A hot store is held by the slot and the durability's entry, and by nobody else (no call in
  // flight); a warm one by the slot alone.
  adapt::v1::Tier tier = adapt::v1::TIER_UNSPECIFIED;
  std::shared_ptr<Store> store = slot->BeginEvict(/*holders=*/1, &tier);
  if (store == nullptr) return false;
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  bool evicted = false;
  std::shared_ptr<WarmStore> warm;
  if (tier == adapt::v1::TIER_WARM) {
    evicted = true;  // nothing to write: the durability holds the whole store
  } else if (StoreFailure(*store).ok()) {
    // Taken before the store goes: a store with a read-out keeps it (the warm tier).
    std::shared_ptr<const LinearReadout> readout = store->Readout();
    absl::StatusOr<bool> unloaded = durability_->Unload(slot->tenant(), slot->name(), store.get());
    if (!unloaded.ok()) {
      std::fprintf(stderr, "adaptd: store %s/%s stays loaded: %s\n", slot->tenant().c_str(),
                   slot->name().c_str(), std::string(unloaded.status().message()).c_str());
    }
    evicted = unloaded.ok() && *unloaded;
    if (evicted && readout != nullptr && HasWarmTier(info.spec().kind())) {
      warm = std::make_shared<WarmStore>(info, std::move(readout), backend_);
    }
  }
  if (evicted && metrics_ != nullptr) {
    if (tier == adapt::v1::TIER_HOT) metrics_->ForgetStore(store.get());
    metrics_->RecordEviction(KindName(info.spec().kind()));
  }
  store.reset();
  slot->FinishEvict(evicted, std::move(info), std::move(warm));
  return evicted;
}

absl::Status StoreDirectory::CheckPinBudget(uint64_t adding) const {
  if (residency_ == nullptr) return absl::OkStatus();
  const uint64_t pinned = residency_->PinnedBytes() + adding;
  if (pinned <= residency_->budget_bytes()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "pinned: pinned stores would hold ", pinned,
      " bytes, more than the server's memory_budget_bytes of ", residency_->budget_bytes()));
}

absl::Status StoreDirectory::SetPinned(StoreSlot& slot, const Store& store, bool pinned) {
  absl::MutexLock pin_lock(&pin_mu_);
  if (pinned && !slot.pinned()) RETURN_IF_ERROR(CheckPinBudget(slot.loaded_bytes()));
  if (durability_ != nullptr) {
    RETURN_IF_ERROR(durability_->AppendPin(slot.tenant(), slot.name(), &store, pinned,
                                           durability_->CurrentFence(slot.tenant(), slot.name())));
  }
  slot.set_pinned(pinned);
  if (residency_ != nullptr) residency_->Grew();  // an unpinned store may go now
  return absl::OkStatus();
}

}  // namespace adaptd
