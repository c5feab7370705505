#include "server/stores/spec_checks.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/stores/store_kind.h"

namespace adaptd {

absl::Status CheckParamsMatchKind(const adapt::v1::StoreSpec& spec) {
  const google::protobuf::OneofDescriptor* oneof =
      adapt::v1::StoreSpec::descriptor()->FindOneofByName("params");
  const google::protobuf::FieldDescriptor* params =
      spec.GetReflection()->GetOneofFieldDescriptor(spec, oneof);
  if (params == nullptr) return absl::OkStatus();
  const std::string kind = KindName(spec.kind());
  if (params->name() == kind) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("spec.", params->name(), ": parameters do not match store kind '", kind, "'"));
}

absl::Status CheckSpecKindAndDim(const adapt::v1::StoreSpec& spec, adapt::v1::StoreKind kind,
                                 const char* kind_name, uint32_t max_dim) {
  if (spec.kind() != kind) {
    return absl::InvalidArgumentError(absl::StrCat("spec.kind: must be ", kind_name));
  }
  if (absl::Status s = CheckParamsMatchKind(spec); !s.ok()) return s;
  if (spec.output().labels_size() > 0 && kind != adapt::v1::STORE_KIND_FAAST) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.output.labels: declared labels are for faast stores that embed their labels (",
        kind_name, " stores learn their labels from examples)"));
  }
  if (spec.dim() > max_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.dim: must be at most ", max_dim, ", got ", spec.dim()));
  }
  return absl::OkStatus();
}

absl::Status NormalizeOutput(const adapt::v1::OutputSpec& output, bool next,
                             uint32_t max_vector_dim, const char* kind_name,
                             adapt::v1::OutputSpec* normalized) {
  using adapt::v1::OutputSpec;
  *normalized = output;
  switch (output.kind()) {
    case OutputSpec::KIND_NEXT:
      if (!next) {
        return absl::InvalidArgumentError(
            absl::StrCat("spec.output.kind: output 'next' is not supported by ", kind_name,
                         " (use labels or vector:M)"));
      }
      [[fallthrough]];
    case OutputSpec::KIND_UNSPECIFIED:
    case OutputSpec::KIND_LABELS:
      if (output.dim() != 0) {
        return absl::InvalidArgumentError(absl::StrCat("spec.output.dim: must be 0 for a labels ",
                                                       next ? "or next " : "", "output, got ",
                                                       output.dim()));
      }
      if (output.kind() == OutputSpec::KIND_UNSPECIFIED) {
        normalized->set_kind(OutputSpec::KIND_LABELS);
      }
      return absl::OkStatus();
    case OutputSpec::KIND_VECTOR:
      if (output.dim() < 1 || output.dim() > max_vector_dim) {
        return absl::InvalidArgumentError(
            absl::StrCat("spec.output.dim: a vector output needs a width in [1, ", max_vector_dim,
                         "], got ", output.dim()));
      }
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("spec.output.kind: unknown output kind ", output.kind()));
  }
}

}  // namespace adaptd
