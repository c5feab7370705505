#include "server/auth/token_authorizer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/auth/sha256.h"

namespace adaptd {
namespace {

constexpr absl::string_view kBearer = "bearer ";

std::string RawSha256(absl::string_view bytes) {
  std::string digest(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

}  // namespace

absl::StatusOr<TokenAuthorizer> TokenAuthorizer::Create(
    const google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>& tokens) {
  TokenAuthorizer auth;
  auth.open_.admin = true;
  auth.open_.name = "anonymous";
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < tokens.size(); ++i) {
    const adapt::v1::TokenConfig& t = tokens[i];
    const std::string field = absl::StrCat("tokens[", i, "]");
    if (!IsSha256Hex(t.sha256())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".sha256: must be 64 hex digits (make one with `adaptctl hash-token`)"));
    }
    if (!t.admin() && t.tenants().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": names no tenant and is not admin; it could reach nothing"));
    }
    Entry entry;
    entry.digest = absl::HexStringToBytes(absl::AsciiStrToLower(t.sha256()));
    if (!seen.insert(entry.digest).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".sha256: repeats an earlier token"));
    }
    entry.principal.name = t.name().empty() ? field : t.name();
    entry.principal.admin = t.admin();
    entry.principal.tenants.insert(t.tenants().begin(), t.tenants().end());
    auth.principals_.push_back(std::move(entry));
  }
  return auth;
}

absl::StatusOr<const Principal*> TokenAuthorizer::Authenticate(
    std::optional<absl::string_view> header) const {
  if (!enabled()) return &open_;
  if (!header.has_value()) {
    return absl::UnauthenticatedError(
        "authorization: missing; send the metadata \"authorization: Bearer <token>\"");
  }
  absl::string_view value = absl::StripAsciiWhitespace(*header);
  if (value.size() <= kBearer.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kBearer.size()), kBearer)) {
    return absl::UnauthenticatedError("authorization: expected \"Bearer <token>\"");
  }
  const std::string digest =
      RawSha256(absl::StripLeadingAsciiWhitespace(value.substr(kBearer.size())));
  // Every configured hash is compared, in constant time, whatever matches.
  const Principal* found = nullptr;
  for (const Entry& e : principals_) {
    const bool equal = CRYPTO_memcmp(e.digest.data(), digest.data(), digest.size()) == 0;
    if (equal) found = &e.principal;
  }
  if (found == nullptr) return absl::UnauthenticatedError("authorization: unknown token");
  return found;
}

absl::Status TokenAuthorizer::Check(const Principal& principal, absl::string_view tenant) {
  if (principal.MayTouch(tenant)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("tenant: this token may not touch tenant '", std::string(tenant), "'"));
}

absl::Status TokenAuthorizer::Authorize(std::optional<absl::string_view> header,
                                        absl::string_view tenant) const {
  auto principal = Authenticate(header);
  if (!principal.ok()) return principal.status();
  return Check(**principal, tenant);
}

}  // namespace adaptd
