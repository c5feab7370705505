// Stores in and out whole: Export and Import (the ExportStore and ImportStore RPCs).
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

absl::StatusOr<adapt::v1::StoreInfo> StoreAdmin::Import(
    const std::string& tenant, const std::string& name, std::string_view file,
    const std::vector<std::string>& applied_ids) {
  RETURN_IF_ERROR(ValidateStoreNames(tenant, name));
  if (directory_->Holds(tenant, name)) {
    return absl::AlreadyExistsError(absl::StrCat("store ", tenant, "/", name, " already exists"));
  }
  ASSIGN_OR_RETURN(DecodedSnapshot decoded, DecodeSnapshotState(file));
  adapt::v1::StoreSnapshot& snapshot = decoded.header;
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
  RETURN_IF_ERROR(directory_->CheckQuota(tenant, store.get()));
  RETURN_IF_ERROR(directory_->CheckBudget(*store));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   directory_->AddImported(tenant, name, store, applied_ids));
  adapt::v1::StoreInfo info = directory_->Describe(tenant, name, *slot);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  return info;
}

}  // namespace adaptd
