#include "server/auth/grpc_auth.h"

#include <string>

namespace adaptd {

std::optional<absl::string_view> AuthorizationHeader(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return absl::string_view(it->second.data(), it->second.size());
}

}  // namespace adaptd
