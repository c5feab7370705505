#include "server/stores/store_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/core/status_macros.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_snapshot.h"
#include "server/stores/faast_store.h"
#include "server/stores/falcon_store.h"
#include "server/stores/fwpkm_store.h"

namespace adaptd {
namespace {

using adapt::v1::StoreSpec;

absl::StatusOr<std::unique_ptr<Store>> CreateFaast(const StoreSpec& spec,
                                                   kernels::Backend* backend) {
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFaastSpec(spec));
  return std::make_unique<FaastStore>(normalized, backend);
}

absl::StatusOr<std::unique_ptr<Store>> RestoreFaast(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend) {
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

absl::Status BadKind(absl::string_view field, adapt::v1::StoreKind kind) {
  if (kind == adapt::v1::STORE_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be set (faast, falcon or fwpkm)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown store kind ", static_cast<int>(kind)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> CreateStore(const StoreSpec& spec,
                                                   kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  switch (spec.kind()) {
    case adapt::v1::STORE_KIND_FAAST:
      return CreateFaast(spec, backend);
    case adapt::v1::STORE_KIND_FALCON:
      return CreateFalconStore(spec, backend);
    case adapt::v1::STORE_KIND_FWPKM:
      return CreateFwpkmStore(spec, backend);
    default:
      return BadKind("spec.kind", spec.kind());
  }
}

absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  switch (snapshot.spec().kind()) {
    case adapt::v1::STORE_KIND_FAAST:
      return RestoreFaast(snapshot, backend);
    case adapt::v1::STORE_KIND_FALCON:
      return RestoreFalconStore(snapshot, backend);
    case adapt::v1::STORE_KIND_FWPKM:
      return RestoreFwpkmStore(snapshot, backend);
    default:
      return BadKind("snapshot.spec.kind", snapshot.spec().kind());
  }
}

}  // namespace adaptd
