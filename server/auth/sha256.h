// SHA-256 of a byte string as lowercase hex (OpenSSL libcrypto). Thread-safe.
#ifndef ADAPTD_SERVER_AUTH_SHA256_H_
#define ADAPTD_SERVER_AUTH_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace adaptd {

// 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

// True when `text` is 64 hex digits (either case).
bool IsSha256Hex(absl::string_view text);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_SHA256_H_
