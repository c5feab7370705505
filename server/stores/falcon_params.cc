#include "server/stores/falcon_params.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/stores/spec_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("spec.falcon.", field, ": ", what));
}

bool HasWindow(FalconParams::Variant v) {
  return v == FalconParams::VARIANT_3 || v == FalconParams::VARIANT_3A;
}

bool PerColumn(FalconParams::Variant v) {
  return v == FalconParams::VARIANT_2 || v == FalconParams::VARIANT_2A;
}

// β: one value in (0, 2), or (variants 2 and 2A) one per output column of a fixed width.
absl::Status ValidateBeta(const FalconParams& p, const StoreSpec& spec, const OutputSpec& out) {
  for (int i = 0; i < p.beta_size(); ++i) {
    const double b = p.beta(i);
    if (!(b > 0 && b < 2)) {
      return FieldError(absl::StrCat("beta[", i, "]"), absl::StrCat("must be in (0, 2), got ", b));
    }
  }
  if (p.beta_size() <= 1) return absl::OkStatus();
  if (!PerColumn(p.variant())) {
    return FieldError("beta", "one value per column is only for variants 2 and 2A");
  }
  int64_t width = 0;
  if (out.kind() == OutputSpec::KIND_VECTOR) width = out.dim();
  if (out.kind() == OutputSpec::KIND_NEXT) width = spec.dim();
  if (out.kind() == OutputSpec::KIND_LABELS) {
    return FieldError("beta", "a labels output grows columns; give one value");
  }
  if (width == 0) {
    return FieldError("beta", "one value per column of a next output needs spec.dim set");
  }
  if (p.beta_size() != width) {
    return FieldError("beta", absl::StrCat("needs 1 or ", width,
                                           " values (one per output column), got ", p.beta_size()));
  }
  return absl::OkStatus();
}

// The smallest β given, or the default.
double SmallestBeta(const FalconParams& p) {
  if (p.beta_size() == 0) return kFalconDefaultBeta;
  return *std::min_element(p.beta().begin(), p.beta().end());
}

// `variant` unset: the recommended settings for the output, in the fields the spec leaves unset.
void ApplyRecommended(OutputSpec::Kind kind, FalconParams* p) {
  if (kind != OutputSpec::KIND_LABELS) {
    p->set_variant(FalconParams::VARIANT_1);
    return;
  }
  p->set_variant(FalconParams::VARIANT_3);
  if (!p->has_window()) p->set_window(kFalconLabelsWindow);
  if (p->key_norm() == FalconParams::KEY_NORM_UNSPECIFIED) {
    p->set_key_norm(FalconParams::KEY_NORM_L2);
  }
  if (!p->has_beta_half_life()) p->set_beta_half_life(kFalconLabelsBetaHalfLife);
  if (!p->has_beta_min() && p->beta_half_life() > 0) {
    // A β given below the floor lowers the floor rather than fail on a field the caller did not
    // set (an invalid β is reported by ValidateBeta).
    p->set_beta_min(std::min(kFalconLabelsBetaMin, std::max(0.0, SmallestBeta(*p))));
  }
}

absl::Status ValidateScalars(const FalconParams& p) {
  if (p.has_lambda() && !(p.lambda() >= 0 && std::isfinite(p.lambda()))) {
    return FieldError("lambda", absl::StrCat("must be finite and >= 0, got ", p.lambda()));
  }
  if (p.has_eps() && !(p.eps() > 0 && std::isfinite(p.eps()))) {
    return FieldError("eps", absl::StrCat("must be finite and > 0, got ", p.eps()));
  }
  if (p.has_eps_gamma() && !(p.eps_gamma() > 0 && p.eps_gamma() < 1)) {
    return FieldError("eps_gamma", absl::StrCat("must be in (0, 1), got ", p.eps_gamma()));
  }
  if (p.has_beta_half_life() && !(p.beta_half_life() >= 0 && std::isfinite(p.beta_half_life()))) {
    return FieldError("beta_half_life",
                      absl::StrCat("must be finite and >= 0, got ", p.beta_half_life()));
  }
  if (p.has_beta_min()) {
    const double floor = p.beta_min();
    if (!(floor >= 0 && std::isfinite(floor))) {
      return FieldError("beta_min", absl::StrCat("must be finite and >= 0, got ", floor));
    }
    if (floor > 0 && !(p.beta_half_life() > 0)) {
      return FieldError("beta_min", "is the floor of the β schedule; it needs beta_half_life > 0");
    }
    if (floor > SmallestBeta(p)) {
      return FieldError("beta_min",
                        absl::StrCat("must not exceed beta (", SmallestBeta(p), "), got ", floor));
    }
  }
  if (p.has_window()) {
    if (HasWindow(p.variant())) {
      if (p.window() < 1 || p.window() > kFalconMaxWindow) {
        return FieldError("window",
                          absl::StrCat("must be in [1, ", kFalconMaxWindow, "], got ", p.window()));
      }
    } else if (p.window() != 1) {
      return FieldError("window", "only variants 3 and 3A use a window");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StoreSpec> NormalizeFalconSpec(const StoreSpec& spec) {
  if (absl::Status s =
          CheckSpecKindAndDim(spec, adapt::v1::STORE_KIND_FALCON, "falcon", kMaxStoreDim);
      !s.ok()) {
    return s;
  }
  StoreSpec out = spec;
  if (absl::Status s = NormalizeOutput(spec.output(), /*next=*/true, kFalconMaxOutputDim, "falcon",
                                       out.mutable_output());
      !s.ok()) {
    return s;
  }
  FalconParams* p = out.mutable_falcon();
  if (!FalconParams::Variant_IsValid(p->variant())) {
    return FieldError("variant", absl::StrCat("unknown variant ", p->variant()));
  }
  if (!FalconParams::KeyNorm_IsValid(p->key_norm())) {
    return FieldError("key_norm", absl::StrCat("unknown key normalisation ", p->key_norm()));
  }
  if (p->variant() == FalconParams::VARIANT_UNSPECIFIED) ApplyRecommended(out.output().kind(), p);
  if (absl::Status s = ValidateBeta(*p, spec, out.output()); !s.ok()) return s;
  if (absl::Status s = ValidateScalars(*p); !s.ok()) return s;

  if (p->beta_size() == 0) p->add_beta(kFalconDefaultBeta);
  if (!p->has_lambda()) p->set_lambda(kFalconDefaultLambda);
  if (!p->has_eps()) p->set_eps(kFalconDefaultEps);
  if (!p->has_eps_gamma()) p->set_eps_gamma(kFalconDefaultEpsGamma);
  if (!p->has_window()) p->set_window(HasWindow(p->variant()) ? kFalconDefaultWindow : 1);
  if (!p->has_scale_coupled_lambda()) p->set_scale_coupled_lambda(false);
  if (!p->has_beta_half_life()) p->set_beta_half_life(0);
  if (!p->has_beta_min()) p->set_beta_min(0);
  if (p->key_norm() == FalconParams::KEY_NORM_UNSPECIFIED) {
    p->set_key_norm(FalconParams::KEY_NORM_NONE);
  }
  return out;
}

FalconConfig FalconConfigOf(const FalconParams& p) {
  FalconConfig c;
  switch (p.variant()) {
    case FalconParams::VARIANT_2:
      c.variant = FalconVariant::k2;
      break;
    case FalconParams::VARIANT_3:
      c.variant = FalconVariant::k3;
      break;
    case FalconParams::VARIANT_1A:
      c.variant = FalconVariant::k1A;
      break;
    case FalconParams::VARIANT_2A:
      c.variant = FalconVariant::k2A;
      break;
    case FalconParams::VARIANT_3A:
      c.variant = FalconVariant::k3A;
      break;
    default:
      c.variant = FalconVariant::k1;
  }
  if (p.beta_size() > 0) c.beta.assign(p.beta().begin(), p.beta().end());
  if (p.has_lambda()) c.lambda = p.lambda();
  if (p.has_eps()) c.eps = p.eps();
  if (p.has_eps_gamma()) c.eps_gamma = p.eps_gamma();
  c.window = HasWindow(p.variant()) ? (p.has_window() ? p.window() : kFalconDefaultWindow) : 1;
  c.scale_coupled_lambda = p.scale_coupled_lambda();
  c.beta_half_life = p.beta_half_life();
  c.beta_min = p.beta_min();
  if (p.key_norm() == FalconParams::KEY_NORM_L2) c.key_norm = FalconKeyNorm::kL2;
  if (p.key_norm() == FalconParams::KEY_NORM_RMS) c.key_norm = FalconKeyNorm::kRms;
  return c;
}

void NormalizeKeys(FalconKeyNorm norm, int64_t rows, int64_t dim, double* keys) {
  if (norm == FalconKeyNorm::kNone || dim == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    double* x = keys + r * dim;
    double sq = 0;
    for (int64_t i = 0; i < dim; ++i) sq += x[i] * x[i];
    if (norm == FalconKeyNorm::kRms) sq /= static_cast<double>(dim);
    if (!(sq > 0)) continue;
    const double inv = 1.0 / std::sqrt(sq);
    for (int64_t i = 0; i < dim; ++i) x[i] *= inv;
  }
}

std::function<void(int64_t rows, float* keys)> ReadoutKeyNorm(FalconKeyNorm norm, int64_t dim) {
  if (norm == FalconKeyNorm::kNone) return nullptr;
  return [norm, dim](int64_t rows, float* keys) {
    std::vector<double> x(keys, keys + rows * dim);
    NormalizeKeys(norm, rows, dim, x.data());
    std::copy(x.begin(), x.end(), keys);
  };
}

}  // namespace adaptd
