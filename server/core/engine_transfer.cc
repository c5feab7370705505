// Stores in and out of the engine whole: Export and Import (the ImportStore RPC, and the
// receiving side of a cluster hand-off), and the sending side of a hand-off: the write fence
// a move closes, the file and example ids it sends, and the drop once the new owner holds it
// (docs/CLUSTER.md, "Hand-off").
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/core/engine.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

namespace adaptd {

absl::StatusOr<std::string> Engine::Export(const adapt::v1::ExportStoreRequest& request) const {
  ASSIGN_OR_RETURN(auto store, Find(request.tenant(), request.store()));
  return EncodeStoreFile(*store);
}

absl::StatusOr<adapt::v1::StoreInfo> Engine::Import(const std::string& tenant,
                                                    const std::string& name, std::string_view file,
                                                    const std::vector<std::string>& applied_ids,
                                                    bool moved) {
  RETURN_IF_ERROR(ValidateStoreNames(tenant, name));
  if (registry_.Find(tenant, name).ok()) {
    return absl::AlreadyExistsError(absl::StrCat("store ", tenant, "/", name, " already exists"));
  }
  ASSIGN_OR_RETURN(DecodedSnapshot decoded, DecodeSnapshotState(file));
  adapt::v1::StoreSnapshot& snapshot = decoded.header;
  const bool pinned = moved && snapshot.spec().pinned();
  snapshot.mutable_spec()->clear_pinned();  // an imported store starts unpinned
  RETURN_IF_ERROR(encoders_->ForStore(snapshot.spec()).status());
  RETURN_IF_ERROR(encoders_->LabelEncoderForStore(snapshot.spec()).status());
  if (snapshot.spec().dim() > max_dim_) {
    return absl::InvalidArgumentError(absl::StrCat("data: dimension ", snapshot.spec().dim(),
                                                   " exceeds the server's maximum ", max_dim_));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Store> restored,
                   RestoreStore(snapshot, decoded.arrays, backend_));
  std::shared_ptr<Store> store = std::move(restored);
  if (!moved) RETURN_IF_ERROR(CheckQuota(tenant, store.get()));
  RETURN_IF_ERROR(CheckBudget(*store));
  absl::MutexLock base_lock(&base_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   AddDurably(tenant, name, store, store->spec(), /*imported=*/true, applied_ids));
  // An imported store keeps the copy of its base in its state; its base, if this server has
  // it, is in use from now on.
  if (const std::string& b = store->spec().base(); !b.empty()) {
    AddDependantLocked(b, absl::StrCat(tenant, "/", name));
  }
  if (pinned) {
    // A moved store keeps its pin where the budget allows; unpinned, it still serves.
    absl::MutexLock pin_lock(&pin_mu_);
    absl::Status pin = CheckPinBudget(slot->loaded_bytes());
    if (pin.ok() && durability_ != nullptr) {
      pin = durability_->AppendPin(tenant, name, store.get(), true,
                                   durability_->CurrentFence(tenant, name));
    }
    if (pin.ok()) {
      slot->set_pinned(true);
    } else {
      std::fprintf(stderr, "adaptd: store %s/%s moved here unpinned: %s\n", tenant.c_str(),
                   name.c_str(), std::string(pin.message()).c_str());
    }
  }
  adapt::v1::StoreInfo info = Describe(tenant, name, *slot);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  return info;
}

absl::StatusOr<FenceHold> Engine::EnterFence(const std::string& tenant, const std::string& store) {
  std::string key = absl::StrCat(tenant, "/", store);
  RETURN_IF_ERROR(fences_.Enter(key));
  return FenceHold(&fences_, std::move(key));
}

bool Engine::Holds(const std::string& tenant, const std::string& store) const {
  return registry_.Find(tenant, store).ok();
}

std::vector<std::pair<std::string, std::string>> Engine::HeldStores(
    const std::function<bool(const std::string&, const std::string&)>& keep) const {
  return registry_.Names(keep);
}

absl::StatusOr<Engine::Outgoing> Engine::ExportForMove(const std::string& tenant,
                                                       const std::string& store) {
  fences_.Close(absl::StrCat(tenant, "/", store));
  Outgoing out;
  ASSIGN_OR_RETURN(std::shared_ptr<Store> found, Find(tenant, store));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot, registry_.Find(tenant, store));
  const bool pinned = slot->pinned();  // the slot's, which PinStore changes
  ASSIGN_OR_RETURN(out.file, EncodeStoreFile(*found, [pinned](adapt::v1::StoreSnapshot& header) {
                     header.mutable_spec()->set_pinned(pinned);
                   }));
  if (durability_ != nullptr) {
    out.applied_ids = durability_->RememberedIds(tenant, store, found.get());
  }
  return out;
}

void Engine::Unfence(const std::string& tenant, const std::string& store) {
  fences_.Open(absl::StrCat(tenant, "/", store));
}

absl::Status Engine::DropMoved(const std::string& tenant, const std::string& store) {
  absl::Status removed;
  {
    absl::MutexLock base_lock(&base_mu_);
    removed = RemoveStore(tenant, store, /*keep_dependants=*/true);
  }
  // A later store of the same name (moved back) starts unfenced.
  if (removed.ok() || absl::IsNotFound(removed)) Unfence(tenant, store);
  return removed;
}

}  // namespace adaptd
