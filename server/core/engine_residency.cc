// The engine's side of tiered residency (docs/RESIDENCY.md): the memory budget a store must
// fit, the eviction of one store to its cold or warm tier, the tier metrics, and pinning.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/core/engine.h"
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

absl::Status Engine::CheckBudget(const Store& store) const {
  if (residency_ == nullptr) return absl::OkStatus();
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return CheckBudget(info.memory_bytes());
}

absl::Status Engine::CheckBudget(uint64_t store_bytes) const {
  if (residency_ == nullptr || store_bytes <= residency_->budget_bytes()) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "memory_budget_bytes: the store holds ", store_bytes,
      " bytes, more than the server's whole memory budget of ", residency_->budget_bytes()));
}

void Engine::WatchTier(StoreSlot& slot) {
  if (metrics_ == nullptr) return;
  // Captures the kind's enum, not its name: small enough for std::function to keep inline.
  slot.SetTierHook([m = metrics_, kind = slot.kind()](adapt::v1::Tier from, adapt::v1::Tier to,
                                                      uint64_t warm_bytes) {
    m->MoveStore(KindName(kind), from, to, warm_bytes);
  });
}

bool Engine::Evict(const std::shared_ptr<StoreSlot>& slot) {
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
    evicted = true;  // nothing to write: the state database holds the whole store
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

absl::Status Engine::CheckPinBudget(uint64_t adding) const {
  if (residency_ == nullptr) return absl::OkStatus();
  const uint64_t pinned = residency_->PinnedBytes() + adding;
  if (pinned <= residency_->budget_bytes()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "pinned: pinned stores would hold ", pinned,
      " bytes, more than the server's memory_budget_bytes of ", residency_->budget_bytes()));
}

absl::StatusOr<adapt::v1::StoreInfo> Engine::PinStore(const adapt::v1::PinStoreRequest& request) {
  // A pinned store is a loaded one: find (and load) it first.
  ASSIGN_OR_RETURN(std::shared_ptr<Store> store, Find(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(FenceHold hold, EnterFence(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   registry_.Find(request.tenant(), request.store()));
  if (slot->loaded() != store) {
    return absl::NotFoundError(absl::StrCat("store ", request.tenant(), "/", request.store(),
                                            " was deleted during the call"));
  }
  absl::MutexLock pin_lock(&pin_mu_);
  if (request.pinned() && !slot->pinned()) RETURN_IF_ERROR(CheckPinBudget(slot->loaded_bytes()));
  if (durability_ != nullptr) {
    RETURN_IF_ERROR(
        durability_->AppendPin(request.tenant(), request.store(), store.get(), request.pinned(),
                               durability_->CurrentFence(request.tenant(), request.store())));
  }
  slot->set_pinned(request.pinned());
  if (residency_ != nullptr) residency_->Grew();  // an unpinned store may go now
  return Describe(request.tenant(), request.store(), *slot);
}

}  // namespace adaptd
