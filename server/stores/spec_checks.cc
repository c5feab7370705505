#include "server/stores/spec_checks.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

using adapt::v1::StoreSpec;

std::string ParamsName(StoreSpec::ParamsCase params) {
  switch (params) {
    case StoreSpec::kFaast:
      return "faast";
    case StoreSpec::kFalcon:
      return "falcon";
    case StoreSpec::kFwpkm:
      return "fwpkm";
    default:
      return "";
  }
}

std::string KindName(adapt::v1::StoreKind kind) {
  switch (kind) {
    case adapt::v1::STORE_KIND_FAAST:
      return "faast";
    case adapt::v1::STORE_KIND_FALCON:
      return "falcon";
    case adapt::v1::STORE_KIND_FWPKM:
      return "fwpkm";
    default:
      return "unspecified";
  }
}

}  // namespace

absl::Status CheckParamsMatchKind(const StoreSpec& spec) {
  const std::string params = ParamsName(spec.params_case());
  const std::string kind = KindName(spec.kind());
  if (params.empty() || params == kind) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("spec.", params, ": parameters do not match store kind '", kind, "'"));
}

absl::Status CheckSpecKindAndDim(const adapt::v1::StoreSpec& spec, adapt::v1::StoreKind kind,
                                 const char* kind_name, uint32_t max_dim) {
  if (spec.kind() != kind) {
    return absl::InvalidArgumentError(absl::StrCat("spec.kind: must be ", kind_name));
  }
  if (absl::Status s = CheckParamsMatchKind(spec); !s.ok()) return s;
  if (spec.dim() > max_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.dim: must be at most ", max_dim, ", got ", spec.dim()));
  }
  return absl::OkStatus();
}

}  // namespace adaptd
