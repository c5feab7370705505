#include "server/stores/faast_params.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/base/status_macros.h"
#include "server/stores/spec_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FaastParams;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

absl::Status FieldError(absl::string_view prefix, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, ".", field, ": ", what));
}

// The label encoder's output: a labels output and a width, or no width without one.
absl::Status ValidateLabelEncoder(const OutputSpec& output) {
  if (!output.label_encoder().empty()) {
    if (output.kind() != OutputSpec::KIND_LABELS) {
      return absl::InvalidArgumentError(
          "spec.output.label_encoder: a label encoder needs a labels output");
    }
    if (output.label_dim() < 1 || output.label_dim() > kFaastMaxOutputDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.output.label_dim: the label encoder's width must be in [1, ",
                       kFaastMaxOutputDim, "], got ", output.label_dim()));
    }
  } else if (output.label_dim() != 0) {
    return absl::InvalidArgumentError("spec.output.label_dim: set without a label encoder");
  }
  return absl::OkStatus();
}

// spec.faast's fields; `output` is the normalized output.
absl::Status ValidateFaastFields(const StoreSpec& spec, const OutputSpec& output) {
  const FaastParams& in = spec.faast();
  RETURN_IF_ERROR(ValidateFaastSolverFields(in, "spec.faast"));
  if (in.has_decay()) {
    const double g = in.decay();
    if (!(g > 0 && g <= 1)) {
      return FieldError("spec.faast", "decay", absl::StrCat("must be in (0, 1], got ", g));
    }
  }
  if (in.has_max_labels() && (in.max_labels() < 1 || in.max_labels() > kFaastMaxLabelsLimit)) {
    return FieldError(
        "spec.faast", "max_labels",
        absl::StrCat("must be in [1, ", kFaastMaxLabelsLimit, "], got ", in.max_labels()));
  }

  if (in.has_prior_examples() &&
      !(in.prior_examples() >= 0 && std::isfinite(in.prior_examples()))) {
    return FieldError("spec.faast", "prior_examples",
                      absl::StrCat("must be finite and >= 0, got ", in.prior_examples()));
  }
  if (in.prior_examples() > 0) {
    if (output.label_encoder().empty()) {
      return FieldError("spec.faast", "prior_examples",
                        "interpolates with the zero-shot read-out of embedded labels: set "
                        "output.label_encoder");
    }
    if (spec.dim() == 0) {
      return FieldError("spec.faast", "prior_examples",
                        "needs the key dimension known at creation (spec.dim, or an encoder of "
                        "fixed width)");
    }
    if (spec.dim() != output.label_dim()) {
      return FieldError(
          "spec.faast", "prior_examples",
          absl::StrCat("needs keys and label embeddings in one space: the keys have dimension ",
                       spec.dim(), ", the label encoder's embeddings ", output.label_dim(),
                       " (use the same encoder for both)"));
    }
  }
  return absl::OkStatus();
}

// Declared labels: embedded by the label encoder, at most max_labels, each named once.
absl::Status ValidateDeclaredLabels(const OutputSpec& output, const FaastParams& in) {
  if (output.labels_size() == 0) return absl::OkStatus();
  if (output.label_encoder().empty()) {
    return absl::InvalidArgumentError(
        "spec.output.labels: declared labels are embedded: set output.label_encoder");
  }
  const uint32_t limit = in.has_max_labels() ? in.max_labels() : kFaastDefaultMaxLabels;
  if (static_cast<uint32_t>(output.labels_size()) > limit) {
    return absl::InvalidArgumentError(absl::StrCat("spec.output.labels: ", output.labels_size(),
                                                   " labels, more than max_labels ", limit));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (int i = 0; i < output.labels_size(); ++i) {
    const std::string& name = output.labels(i);
    if (name.empty() || name.size() > kMaxDeclaredLabelBytes) {
      return absl::InvalidArgumentError(absl::StrCat("spec.output.labels[", i, "]: must have 1 to ",
                                                     kMaxDeclaredLabelBytes, " bytes, got ",
                                                     name.size()));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.output.labels[", i, "]: '", name, "' is declared twice"));
    }
  }
  return absl::OkStatus();
}

// Sets each unset field of p to its default; prior_examples defaults to on only where keys
// and label embeddings share one space.
void FillFaastDefaults(const StoreSpec& spec, const OutputSpec& output, FaastParams* p) {
  if (!p->has_prior_examples()) {
    const bool shared_space =
        !output.label_encoder().empty() && spec.dim() != 0 && spec.dim() == output.label_dim();
    p->set_prior_examples(shared_space ? kFaastDefaultPriorExamples : 0.0);
  }
  if (!p->has_alpha()) p->set_alpha(kFaastDefaultAlpha);
  if (!p->has_ridge()) p->set_ridge(kFaastDefaultRidge);
  if (!p->has_decay()) p->set_decay(kFaastDefaultDecay);
  if (!p->has_auto_compile_every()) p->set_auto_compile_every(kFaastDefaultAutoCompileEvery);
  if (!p->has_auto_compile_delay_ms()) {
    p->set_auto_compile_delay_ms(kFaastDefaultAutoCompileDelayMs);
  }
  if (!p->has_few_shot()) p->set_few_shot(kFaastDefaultFewShot);
  if (!p->has_max_labels()) p->set_max_labels(kFaastDefaultMaxLabels);
}

}  // namespace

absl::Status ValidateFaastSolverFields(const FaastParams& params, absl::string_view prefix) {
  if (params.has_rcond()) {
    const double r = params.rcond();
    if (!(r > 0 && r < 1))
      return FieldError(prefix, "rcond", absl::StrCat("must be in (0, 1), got ", r));
  }
  if (params.has_alpha()) {
    const double a = params.alpha();
    if (!(a > 0) || !std::isfinite(a)) {
      return FieldError(prefix, "alpha", absl::StrCat("must be finite and > 0, got ", a));
    }
  }
  if (params.has_ridge()) {
    const double r = params.ridge();
    if (!(r >= 0) || !std::isfinite(r)) {
      return FieldError(prefix, "ridge", absl::StrCat("must be finite and >= 0, got ", r));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<StoreSpec> NormalizeFaastSpec(const StoreSpec& spec) {
  RETURN_IF_ERROR(CheckSpecKindAndDim(spec, adapt::v1::STORE_KIND_FAAST, "faast", kMaxStoreDim));
  StoreSpec out = spec;
  RETURN_IF_ERROR(NormalizeOutput(spec.output(), /*next=*/false, kFaastMaxOutputDim, "faast",
                                  out.mutable_output()));
  const OutputSpec& output = out.output();
  RETURN_IF_ERROR(ValidateLabelEncoder(output));
  RETURN_IF_ERROR(ValidateFaastFields(spec, output));
  RETURN_IF_ERROR(ValidateDeclaredLabels(output, spec.faast()));
  FillFaastDefaults(spec, output, out.mutable_faast());
  return out;
}

absl::Status ValidateFaastOverrides(const FaastParams& overrides) {
  if (absl::Status s = ValidateFaastSolverFields(overrides, "faast"); !s.ok()) return s;
  const char* fixed = nullptr;
  if (overrides.has_decay()) fixed = "decay";
  if (overrides.has_auto_compile_every()) fixed = "auto_compile_every";
  if (overrides.has_auto_compile_delay_ms()) fixed = "auto_compile_delay_ms";
  if (overrides.has_few_shot()) fixed = "few_shot";
  if (overrides.has_max_labels()) fixed = "max_labels";
  if (overrides.has_prior_examples()) fixed = "prior_examples";
  if (fixed != nullptr) {
    return FieldError("faast", fixed,
                      "is fixed when the store is created; a compile may set rcond, alpha, ridge");
  }
  return absl::OkStatus();
}

FaastSolverParams SolverParamsOf(const FaastParams& params) {
  FaastSolverParams out;
  if (params.has_rcond()) out.rcond = params.rcond();
  if (params.has_alpha()) out.alpha = params.alpha();
  if (params.has_ridge()) out.ridge = params.ridge();
  return out;
}

void ApplyFaastOverrides(const FaastParams& overrides, FaastParams* params) {
  if (overrides.has_rcond()) {
    params->set_rcond(overrides.rcond());
  } else if (overrides.has_alpha()) {
    params->clear_rcond();
  }
  if (overrides.has_alpha()) params->set_alpha(overrides.alpha());
  if (overrides.has_ridge()) params->set_ridge(overrides.ridge());
}

}  // namespace adaptd
