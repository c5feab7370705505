#include "server/encoders/random_features_encoder.h"

#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/encoders/fingerprint.h"

namespace adaptd {
namespace {

constexpr uint32_t kMaxOutputDim = 1u << 16;
constexpr uint32_t kMaxInputDim = 1u << 16;
constexpr uint64_t kMaxWeights = uint64_t{1} << 28;

}  // namespace

uint64_t SplitMix64::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double SplitMix64::Normal() {
  const double u1 = Uniform(), u2 = Uniform();
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

absl::StatusOr<std::unique_ptr<RandomFeaturesEncoder>> RandomFeaturesEncoder::Create(
    const adapt::v1::EncoderConfig& config, const std::string& field) {
  if (config.dim() < 1 || config.dim() > kMaxOutputDim) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dim: random_features needs an output dimension in [1, ",
                     kMaxOutputDim, "], got ", config.dim()));
  }
  if (config.input_dim() < 1 || config.input_dim() > kMaxInputDim) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".input_dim: must be in [1, ",
                                                   kMaxInputDim, "], got ", config.input_dim()));
  }
  if (static_cast<uint64_t>(config.dim()) * config.input_dim() > kMaxWeights) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dim × input_dim: at most ", kMaxWeights, " weights"));
  }
  if (!(config.gamma() > 0) || !std::isfinite(config.gamma())) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".gamma: must be finite and > 0, got ", config.gamma()));
  }
  auto encoder = std::unique_ptr<RandomFeaturesEncoder>(new RandomFeaturesEncoder());
  const int64_t d_out = config.dim();
  encoder->input_dim_ = config.input_dim();
  SplitMix64 rng(config.seed());
  const double sigma = std::sqrt(2.0 * config.gamma());
  encoder->w_.resize(static_cast<size_t>(d_out * encoder->input_dim_));
  for (double& w : encoder->w_) w = sigma * rng.Normal();
  encoder->b_.resize(static_cast<size_t>(d_out));
  for (double& b : encoder->b_) b = 2.0 * std::numbers::pi * rng.Uniform();

  adapt::v1::EncoderInfo& info = encoder->info_;
  info.set_name(config.name());
  info.set_type("random_features");
  info.set_input_kind("vector");
  info.set_dim(config.dim());
  info.set_normalize(config.normalize());
  Fnv1a64 hash;
  hash.Add(absl::StrFormat(
      "random_features/v1\ndim=%d\ninput_dim=%d\ngamma=%a\nseed=%d\n"
      "normalize=%d\n",
      config.dim(), config.input_dim(), config.gamma(), config.seed(), config.normalize() ? 1 : 0));
  info.set_fingerprint(FormatFingerprint("random_features", hash.value()));
  return encoder;
}

absl::StatusOr<EncodedBatch> RandomFeaturesEncoder::Encode(
    const std::vector<const adapt::v1::Input*>& inputs, int64_t expected_dim, int64_t /*max_dim*/,
    const FieldNamer& field) const {
  const int64_t d_out = info_.dim(), n = input_dim_;
  if (expected_dim > 0 && expected_dim != d_out) {
    return absl::FailedPreconditionError(absl::StrCat("the store's dimension ", expected_dim,
                                                      " differs from encoder '", info_.name(),
                                                      "' dimension ", d_out));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const adapt::v1::Input& input = *inputs[i];
    if (input.value_case() == adapt::v1::Input::kText) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".text: encoder '", info_.name(), "' takes a vector, not text"));
    }
    if (input.value_case() == adapt::v1::Input::kImage) {
      return absl::InvalidArgumentError(absl::StrCat(field(i), ".image: encoder '", info_.name(),
                                                     "' takes a vector, not an image"));
    }
    if (input.value_case() != adapt::v1::Input::kVector) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".vector: required by vector encoder '", info_.name(), "'"));
    }
    const auto& values = input.vector().values();
    if (values.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(field(i), ".vector: dimension ", values.size(),
                                                     ", encoder '", info_.name(), "' takes ", n));
    }
    for (int64_t j = 0; j < n; ++j) {
      if (!std::isfinite(values[j])) {
        return absl::InvalidArgumentError(
            absl::StrCat(field(i), ".vector.values[", j, "]: not a finite number"));
      }
    }
  }
  EncodedBatch out;
  out.rows = static_cast<int64_t>(inputs.size());
  out.dim = d_out;
  out.keys.resize(static_cast<size_t>(out.rows * d_out));
  const double scale = std::sqrt(2.0 / static_cast<double>(d_out));
  std::vector<double> x(n);
  for (int64_t r = 0; r < out.rows; ++r) {
    const auto& values = inputs[r]->vector().values();
    for (int64_t j = 0; j < n; ++j) x[j] = values[j];
    float* z = out.keys.data() + r * d_out;
    double norm2 = 0;
    for (int64_t k = 0; k < d_out; ++k) {
      const double* w = w_.data() + k * n;
      double dot = b_[k];
      for (int64_t j = 0; j < n; ++j) dot += w[j] * x[j];
      const double v = scale * std::cos(dot);
      z[k] = static_cast<float>(v);
      norm2 += v * v;
    }
    if (info_.normalize() && norm2 > 0) {
      const double inv = 1.0 / std::sqrt(norm2);
      for (int64_t k = 0; k < d_out; ++k) z[k] = static_cast<float>(z[k] * inv);
    }
  }
  return out;
}

}  // namespace adaptd
