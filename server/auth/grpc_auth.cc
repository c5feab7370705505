#include "server/auth/grpc_auth.h"

#include <string>

namespace adaptd {

std::optional<absl::string_view> AuthorizationHeader(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return absl::string_view(it->second.data(), it->second.size());
}

grpc::Status AuthorizeCall(const TokenAuthorizer* auth, const grpc::ServerContextBase& context,
                           absl::string_view tenant) {
  if (auth == nullptr || !auth->enabled()) return grpc::Status::OK;
  auto principal = auth->Authenticate(AuthorizationHeader(context));
  absl::Status status = principal.status();
  if (status.ok() && !tenant.empty()) status = TokenAuthorizer::Check(**principal, tenant);
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace adaptd
