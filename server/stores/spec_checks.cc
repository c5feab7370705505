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

}  // namespace adaptd
