// random_features: random Fourier features of the RBF kernel k(x, y) = exp(-gamma·|x - y|²)
// (Rahimi and Recht, 2007): z(x) = sqrt(2/D)·cos(W x + b), W (D × input_dim) with entries
// drawn from N(0, 2·gamma), b from U[0, 2π), so that z(x)·z(y) ≈ k(x, y) for large D.
// W and b come from `seed` alone through this file's own generator (splitmix64, 53-bit
// uniforms, Box-Muller), so they are the same on every machine and with every C++ library.
//
// Thread safety: immutable after construction.
// Layout: W is row-major D × input_dim (float64); keys are rows × D.
#ifndef ADAPTD_SERVER_ENCODERS_RANDOM_FEATURES_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_RANDOM_FEATURES_ENCODER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/encoders/encoder.h"

namespace adaptd {

// The generator behind W and b: splitmix64 from `seed`; Uniform() is the top 53 bits of the
// next output times 2^-53, in [0, 1); Normal() is sqrt(-2 ln(1 - u1))·cos(2π u2) for two
// consecutive uniforms (one normal per pair).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();
  double Normal();

 private:
  uint64_t state_;
};

class RandomFeaturesEncoder final : public Encoder {
 public:
  // InvalidArgument naming `field` for missing or out-of-range parameters.
  static absl::StatusOr<std::unique_ptr<RandomFeaturesEncoder>> Create(
      const adapt::v1::EncoderConfig& config, const std::string& field);

  const adapt::v1::EncoderInfo& info() const override { return info_; }
  absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                      int64_t expected_dim, int64_t max_dim,
                                      const FieldNamer& field) const override;

 private:
  RandomFeaturesEncoder() = default;

  adapt::v1::EncoderInfo info_;
  int64_t input_dim_ = 0;
  std::vector<double> w_;  // D × input_dim
  std::vector<double> b_;  // D
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_RANDOM_FEATURES_ENCODER_H_
