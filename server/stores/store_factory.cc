#include "server/stores/store_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/core/status_macros.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_snapshot.h"
#include "server/stores/faast_store.h"

namespace adaptd {
namespace {

using adapt::v1::StoreSpec;

// Checks the kind; only faast is built so far.
absl::Status CheckKind(const StoreSpec& spec, absl::string_view field) {
  switch (spec.kind()) {
    case adapt::v1::STORE_KIND_FAAST:
      return absl::OkStatus();
    case adapt::v1::STORE_KIND_FALCON:
      return absl::UnimplementedError(
          absl::StrCat(field, ": store kind 'falcon' is not available yet"));
    case adapt::v1::STORE_KIND_FWPKM:
      return absl::UnimplementedError(
          absl::StrCat(field, ": store kind 'fwpkm' is not available yet"));
    case adapt::v1::STORE_KIND_UNSPECIFIED:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": must be set (faast, falcon or fwpkm)"));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": unknown store kind ", static_cast<int>(spec.kind())));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> CreateStore(const StoreSpec& spec,
                                                   kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  RETURN_IF_ERROR(CheckKind(spec, "spec.kind"));
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFaastSpec(spec));
  return std::make_unique<FaastStore>(normalized, backend);
}

absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  RETURN_IF_ERROR(CheckKind(snapshot.spec(), "snapshot.spec.kind"));
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFaastSpec(snapshot.spec()));
  if (snapshot.state_case() != adapt::v1::StoreSnapshot::kFaast) {
    return absl::InvalidArgumentError("snapshot.faast: missing for a faast store");
  }
  FaastPersistent state;
  RETURN_IF_ERROR(FaastStateFromProto(snapshot.faast(), normalized, &state));
  ASSIGN_OR_RETURN(std::unique_ptr<FaastStore> store,
                   FaastStore::Restore(normalized, std::move(state), backend));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace adaptd
