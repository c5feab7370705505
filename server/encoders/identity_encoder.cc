#include "server/encoders/identity_encoder.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace adaptd {

IdentityEncoder::IdentityEncoder(const adapt::v1::EncoderConfig& config) {
  info_.set_name(config.name());
  info_.set_type("identity");
  info_.set_input_kind("vector");
  info_.set_dim(config.dim());
  info_.set_normalize(config.normalize());
  info_.set_fingerprint(
      absl::StrCat("identity:dim=", config.dim(), ":normalize=", config.normalize() ? 1 : 0));
}

absl::StatusOr<EncodedBatch> IdentityEncoder::Encode(
    const std::vector<const adapt::v1::Input*>& inputs, int64_t expected_dim, int64_t max_dim,
    const FieldNamer& field) const {
  EncodedBatch out;
  out.rows = static_cast<int64_t>(inputs.size());
  int64_t dim = info_.dim() > 0 ? info_.dim() : expected_dim;
  if (info_.dim() > 0 && expected_dim > 0 && expected_dim != info_.dim()) {
    return absl::FailedPreconditionError(absl::StrCat("the store's dimension ", expected_dim,
                                                      " differs from encoder '", info_.name(),
                                                      "' dimension ", info_.dim()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const adapt::v1::Input& input = *inputs[i];
    if (input.value_case() != adapt::v1::Input::kVector) {
      return absl::InvalidArgumentError(absl::StrCat(
          field(i), ": encoder '", info_.name(), "' takes a vector, got ", InputKindName(input)));
    }
    const auto& values = input.vector().values();
    const int64_t n = values.size();
    if (n == 0) return absl::InvalidArgumentError(absl::StrCat(field(i), ".vector: empty"));
    if (dim == 0) {
      if (n > max_dim) {
        return absl::InvalidArgumentError(absl::StrCat(field(i), ".vector: dimension ", n,
                                                       " exceeds the server's maximum ", max_dim));
      }
      dim = n;
      out.keys.reserve(static_cast<size_t>(dim) * inputs.size());
    }
    if (n != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".vector: dimension ", n, ", expected ", dim));
    }
    double norm2 = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float v = values[j];
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(field(i), ".vector.values[", j, "]: not a finite number"));
      }
      norm2 += static_cast<double>(v) * v;
    }
    const size_t start = out.keys.size();
    out.keys.insert(out.keys.end(), values.begin(), values.end());
    if (info_.normalize() && norm2 > 0) {
      const double scale = 1.0 / std::sqrt(norm2);
      for (int64_t j = 0; j < n; ++j) {
        out.keys[start + j] = static_cast<float>(out.keys[start + j] * scale);
      }
    }
  }
  out.dim = dim;
  return out;
}

}  // namespace adaptd
