#include "server/stores/fwpkm_params.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/stores/spec_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FwpkmParams;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("spec.fwpkm.", field, ": ", what));
}

absl::Status CheckRange(absl::string_view field, bool present, double value, double lo, double hi,
                        bool lo_open) {
  if (!present) return absl::OkStatus();
  const bool ok = std::isfinite(value) && (lo_open ? value > lo : value >= lo) && value <= hi;
  if (ok) return absl::OkStatus();
  return FieldError(
      field, absl::StrCat("must be in ", lo_open ? "(" : "[", lo, ", ", hi, "], got ", value));
}

}  // namespace

absl::StatusOr<StoreSpec> NormalizeFwpkmSpec(const StoreSpec& spec) {
  if (absl::Status s =
          CheckSpecKindAndDim(spec, adapt::v1::STORE_KIND_FWPKM, "fwpkm", kMaxStoreDim);
      !s.ok()) {
    return s;
  }
  StoreSpec out = spec;
  if (absl::Status s = NormalizeOutput(spec.output(), /*next=*/true, kFwpkmMaxOutputDim, "fwpkm",
                                       out.mutable_output());
      !s.ok()) {
    return s;
  }

  const FwpkmParams& in = spec.fwpkm();
  if (in.has_sub_keys() && (in.sub_keys() < 2 || in.sub_keys() > kFwpkmMaxSubKeys)) {
    return FieldError("sub_keys",
                      absl::StrCat("must be in [2, ", kFwpkmMaxSubKeys, "], got ", in.sub_keys()));
  }
  const uint32_t sub_keys = in.has_sub_keys() ? in.sub_keys() : kFwpkmDefaultSubKeys;
  const uint32_t max_top_k = std::min(kFwpkmMaxTopK, sub_keys);
  if (in.has_top_k() && (in.top_k() < 1 || in.top_k() > max_top_k)) {
    return FieldError("top_k", absl::StrCat("must be in [1, ", max_top_k, "] (at most 64 and at ",
                                            "most sub_keys), got ", in.top_k()));
  }
  if (in.has_chunk() && (in.chunk() < 1 || in.chunk() > kFwpkmMaxChunk)) {
    return FieldError("chunk",
                      absl::StrCat("must be in [1, ", kFwpkmMaxChunk, "], got ", in.chunk()));
  }
  if (absl::Status s = CheckRange("value_lr", in.has_value_lr(), in.value_lr(), 0, 2, true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckRange("addressing_lr", in.has_addressing_lr(), in.addressing_lr(), 0, 100, false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRange("idw_eps", in.has_idw_eps(), in.idw_eps(), 0, 1, true); !s.ok()) {
    return s;
  }
  if (!FwpkmParams::ValueType_IsValid(in.value_type())) {
    return FieldError("value_type", absl::StrCat("unknown value type ", in.value_type()));
  }
  if (!FwpkmParams::Gate_IsValid(in.gate())) {
    return FieldError("gate", absl::StrCat("unknown gate ", in.gate()));
  }
  if (in.has_key_dim() &&
      (in.key_dim() < 2 || in.key_dim() > kFwpkmMaxKeyDim || in.key_dim() % 2 != 0)) {
    return FieldError("key_dim", absl::StrCat("must be even and in [2, ", kFwpkmMaxKeyDim,
                                              "], got ", in.key_dim()));
  }
  if (in.has_max_labels() && (in.max_labels() < 1 || in.max_labels() > kFwpkmMaxLabelsLimit)) {
    return FieldError("max_labels", absl::StrCat("must be in [1, ", kFwpkmMaxLabelsLimit, "], got ",
                                                 in.max_labels()));
  }

  FwpkmParams* p = out.mutable_fwpkm();
  p->set_sub_keys(sub_keys);
  if (!p->has_top_k()) p->set_top_k(std::min(kFwpkmDefaultTopK, sub_keys));
  if (!p->has_chunk()) p->set_chunk(kFwpkmDefaultChunk);
  if (!p->has_value_lr()) p->set_value_lr(kFwpkmDefaultValueLr);
  if (!p->has_addressing_lr()) p->set_addressing_lr(kFwpkmDefaultAddressingLr);
  if (!p->has_idw_eps()) p->set_idw_eps(kFwpkmDefaultIdwEps);
  if (p->value_type() == FwpkmParams::VALUE_TYPE_UNSPECIFIED) {
    p->set_value_type(FwpkmParams::VALUE_TYPE_FLOAT32);
  }
  if (!p->has_key_dim()) {
    const uint32_t d = spec.dim();
    const bool own = d >= 2 && d % 2 == 0 && d <= kFwpkmIdentityKeyDimLimit;
    p->set_key_dim(own ? d : kFwpkmDefaultKeyDim);
  }
  if (!p->has_projection_seed()) p->set_projection_seed(kFwpkmDefaultSeed);
  if (p->gate() == FwpkmParams::GATE_UNSPECIFIED) p->set_gate(FwpkmParams::GATE_NONE);
  if (!p->has_max_labels()) p->set_max_labels(kFwpkmDefaultMaxLabels);
  return out;
}

}  // namespace adaptd
