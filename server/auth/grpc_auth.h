// The gRPC edge of authorization: reads a call's `authorization` metadata and asks the
// TokenAuthorizer whether the caller may touch a tenant. The only file of server/auth that
// includes gRPC headers. Thread-safe.
#ifndef ADAPTD_SERVER_AUTH_GRPC_AUTH_H_
#define ADAPTD_SERVER_AUTH_GRPC_AUTH_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "server/auth/token_authorizer.h"

namespace adaptd {

// The value of the call's `authorization` metadata, if sent (the first when repeated).
std::optional<absl::string_view> AuthorizationHeader(const grpc::ServerContextBase& context);

// OK when `auth` is null or off, or the caller's token may touch `tenant`; UNAUTHENTICATED
// or PERMISSION_DENIED otherwise. An empty `tenant` only authenticates: the request is then
// invalid and the engine says so.
grpc::Status AuthorizeCall(const TokenAuthorizer* auth, const grpc::ServerContextBase& context,
                           absl::string_view tenant);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_GRPC_AUTH_H_
