// Stores in and out whole: Export and Import (the ImportStore RPC, and the receiving side of a
// cluster hand-off), and the sending side of a hand-off: the write fence a move closes, the
// file and example ids it sends, and the drop once the new owner holds it (docs/CLUSTER.md,
// "Hand-off").
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/core/store_admin.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

namespace adaptd {

absl::StatusOr<std::string> StoreAdmin::Export(const adapt::v1::ExportStoreRequest& request) const {
  ASSIGN_OR_RETURN(auto store, directory_->Find(request.tenant(), request.store()));
  return EncodeStoreFile(*store);
}

absl::StatusOr<adapt::v1::StoreInfo> StoreAdmin::Import(const std::string& tenant,
                                                        const std::string& name,
                                                        std::string_view file,
                                                        const std::vector<std::string>& applied_ids,
                                                        bool moved) {
  RETURN_IF_ERROR(ValidateStoreNames(tenant, name));
  if (directory_->Holds(tenant, name)) {
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
  if (!moved) RETURN_IF_ERROR(directory_->CheckQuota(tenant, store.get()));
  RETURN_IF_ERROR(directory_->CheckBudget(*store));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   directory_->AddImported(tenant, name, store, applied_ids));
  if (pinned) {
    // A moved store keeps its pin where the budget allows; unpinned, it still serves.
    if (absl::Status pin = directory_->SetPinned(*slot, *store, true); !pin.ok()) {
      std::fprintf(stderr, "adaptd: store %s/%s moved here unpinned: %s\n", tenant.c_str(),
                   name.c_str(), std::string(pin.message()).c_str());
    }
  }
  adapt::v1::StoreInfo info = directory_->Describe(tenant, name, *slot);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  return info;
}

absl::StatusOr<StoreAdmin::Outgoing> StoreAdmin::ExportForMove(const std::string& tenant,
                                                               const std::string& store) {
  directory_->CloseFence(tenant, store);
  Outgoing out;
  ASSIGN_OR_RETURN(std::shared_ptr<Store> found, directory_->Find(tenant, store));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot, directory_->Slot(tenant, store));
  const bool pinned = slot->pinned();  // the slot's, which PinStore changes
  ASSIGN_OR_RETURN(out.file, EncodeStoreFile(*found, [pinned](adapt::v1::StoreSnapshot& header) {
                     header.mutable_spec()->set_pinned(pinned);
                   }));
  if (Durability* durability = directory_->durability(); durability != nullptr) {
    out.applied_ids = durability->RememberedIds(tenant, store, found.get());
  }
  return out;
}

absl::Status StoreAdmin::DropMoved(const std::string& tenant, const std::string& store) {
  absl::Status removed = directory_->Remove(tenant, store, StoreDirectory::RemoveMode::kMoved);
  // A later store of the same name (moved back) starts unfenced.
  if (removed.ok() || absl::IsNotFound(removed)) directory_->OpenFence(tenant, store);
  return removed;
}

}  // namespace adaptd
