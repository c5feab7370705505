// Fingerprints of encoders, and the check that a store runs against the encoder it was
// created with. A fingerprint is "<type>:<16 hex digits>", the 64-bit FNV-1a hash of the
// encoder's type, its parameters in a fixed textual form and, for encoders with a model file,
// every byte of that file. Stable across runs, machines and builds (no std::hash).
// Pure functions and a plain value class; thread-safe.
#ifndef ADAPTD_SERVER_ENCODERS_FINGERPRINT_H_
#define ADAPTD_SERVER_ENCODERS_FINGERPRINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "server/base/stable_hash.h"

namespace adaptd {

class Encoder;

// "<type>:<hash as 16 lowercase hex digits>".
std::string FormatFingerprint(absl::string_view type, uint64_t hash);

// Feeds every byte of the file at `path` into `hash`; NotFound/InvalidArgument naming the
// path when it cannot be read.
absl::Status HashFile(const std::string& path, Fnv1a64* hash);

// Ok when `spec` recorded no fingerprint (a store from before fingerprints) or the one of
// `encoder`; FailedPrecondition naming the encoder and both fingerprints otherwise.
absl::Status CheckEncoderFingerprint(const adapt::v1::StoreSpec& spec, const Encoder& encoder);

// The same check for the label encoder of a label-embedding store (spec.output.label_encoder).
absl::Status CheckLabelEncoderFingerprint(const adapt::v1::StoreSpec& spec,
                                          const Encoder& label_encoder);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_FINGERPRINT_H_
