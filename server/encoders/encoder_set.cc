#include "server/encoders/encoder_set.h"

#include "absl/strings/str_cat.h"
#include "server/core/names.h"
#include "server/encoders/identity_encoder.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<EncoderSet>> EncoderSet::Create(
    const google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig>& configs,
    kernels::Backend* backend) {
  auto set = std::make_unique<EncoderSet>();
  for (int i = 0; i < configs.size(); ++i) {
    const auto& config = configs[i];
    const std::string field = absl::StrCat("encoders[", i, "]");
    if (auto s = ValidateName(field + ".name", config.name()); !s.ok()) return s;
    if (set->encoders_.contains(config.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name: duplicate encoder name '", config.name(), "'"));
    }
    std::unique_ptr<Encoder> encoder;
    if (config.type() == "identity") {
      encoder = std::make_unique<IdentityEncoder>(config);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(field, ".type: unknown encoder type '",
                                                     config.type(), "' (known: identity)"));
    }
    set->encoders_.emplace(config.name(), std::move(encoder));
  }
  return set;
}

const Encoder* EncoderSet::Find(const std::string& name) const {
  auto it = encoders_.find(name);
  return it == encoders_.end() ? nullptr : it->second.get();
}

adapt::v1::ListEncodersResponse EncoderSet::List() const {
  adapt::v1::ListEncodersResponse response;
  for (const auto& [name, encoder] : encoders_) *response.add_encoders() = encoder->info();
  return response;
}

}  // namespace adaptd
