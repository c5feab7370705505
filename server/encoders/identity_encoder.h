// The identity encoder: the client sends the key vectors themselves, optionally L2-normalised
// here. A fixed dimension may be configured; 0 passes any dimension through.
#ifndef ADAPTD_SERVER_ENCODERS_IDENTITY_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_IDENTITY_ENCODER_H_

#include "adapt/v1/config.pb.h"
#include "server/encoders/encoder.h"

namespace adaptd {

class IdentityEncoder final : public Encoder {
 public:
  explicit IdentityEncoder(const adapt::v1::EncoderConfig& config);

  const adapt::v1::EncoderInfo& info() const override { return info_; }
  absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                      int64_t expected_dim, int64_t max_dim,
                                      const FieldNamer& field) const override;

 private:
  adapt::v1::EncoderInfo info_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_IDENTITY_ENCODER_H_
