#include "server/encoders/fingerprint.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/encoders/encoder.h"

namespace adaptd {
namespace {

absl::Status Mismatch(absl::string_view what, const std::string& name, const std::string& recorded,
                      const std::string& current) {
  return absl::FailedPreconditionError(absl::StrCat(
      "the store was created with ", what, " '", name, "' of fingerprint ", recorded,
      ", but this server's encoder '", name, "' has fingerprint ", current,
      " (its type, parameters or model changed); serve the original encoder or recreate the "
      "store"));
}

}  // namespace

std::string FormatFingerprint(absl::string_view type, uint64_t hash) {
  return absl::StrFormat("%s:%016x", type, hash);
}

absl::Status HashFile(const std::string& path, Fnv1a64* hash) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be opened"));
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash->Add(absl::string_view(buffer.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  return absl::OkStatus();
}

absl::Status CheckEncoderFingerprint(const adapt::v1::StoreSpec& spec, const Encoder& encoder) {
  const std::string& recorded = spec.encoder_fingerprint();
  const std::string& current = encoder.info().fingerprint();
  if (recorded.empty() || recorded == current) return absl::OkStatus();
  return Mismatch("encoder", encoder.info().name(), recorded, current);
}

absl::Status CheckLabelEncoderFingerprint(const adapt::v1::StoreSpec& spec,
                                          const Encoder& label_encoder) {
  const std::string& recorded = spec.output().label_encoder_fingerprint();
  const std::string& current = label_encoder.info().fingerprint();
  if (recorded.empty() || recorded == current) return absl::OkStatus();
  return Mismatch("label encoder", label_encoder.info().name(), recorded, current);
}

}  // namespace adaptd
