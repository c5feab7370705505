// The gRPC side of authorization: reads a call's `authorization` metadata, which the service
// layer checks with the TokenAuthorizer (server/service/service.h, Service::Authorize).
#ifndef ADAPTD_SERVER_AUTH_GRPC_AUTH_H_
#define ADAPTD_SERVER_AUTH_GRPC_AUTH_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "server/auth/token_authorizer.h"

namespace adaptd {

// The value of the call's `authorization` metadata, if sent (the first when repeated).
std::optional<absl::string_view> AuthorizationHeader(const grpc::ServerContextBase& context);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_GRPC_AUTH_H_
