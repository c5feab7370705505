// TokenAuthorizer: who may touch which tenant. Built from the config's tokens (SHA-256 hashes
// with the tenants each may touch, or the admin role); answers, for the value of a call's
// `authorization` metadata and a tenant, OK, Unauthenticated (missing, malformed or unknown
// token) or PermissionDenied (a known token for another tenant). No token configured means
// authentication is off and every call is allowed. Immutable after Create; thread-safe.
//
// The presented token is hashed and compared with every configured hash in constant time;
// neither the token nor its hash ever appears in an error message.
#ifndef ADAPTD_SERVER_AUTH_TOKEN_AUTHORIZER_H_
#define ADAPTD_SERVER_AUTH_TOKEN_AUTHORIZER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/config.pb.h"

namespace adaptd {

// The identity behind a call's token.
struct Principal {
  std::string name;  // the config's name for the token, for logs; may be empty
  bool admin = false;
  absl::flat_hash_set<std::string> tenants;

  bool MayTouch(absl::string_view tenant) const { return admin || tenants.contains(tenant); }
};

class TokenAuthorizer {
 public:
  // InvalidArgument naming tokens[i] when a hash is not 64 hex digits, a token names no
  // tenant and is not admin, or two tokens share a hash.
  static absl::StatusOr<TokenAuthorizer> Create(
      const google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>& tokens);

  bool enabled() const { return !principals_.empty(); }

  // Resolves the `authorization` metadata value ("Bearer <token>"); nullopt when absent.
  // With authentication off, returns an admin principal for any input.
  absl::StatusOr<const Principal*> Authenticate(std::optional<absl::string_view> header) const;

  // Authenticate, then PermissionDenied unless the principal may touch `tenant`.
  absl::Status Authorize(std::optional<absl::string_view> header, absl::string_view tenant) const;

  // PermissionDenied naming the tenant unless `principal` may touch it.
  static absl::Status Check(const Principal& principal, absl::string_view tenant);

 private:
  struct Entry {
    std::string digest;  // 32 raw bytes
    Principal principal;
  };
  std::vector<Entry> principals_;
  Principal open_;  // the principal of every call when authentication is off
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_TOKEN_AUTHORIZER_H_
