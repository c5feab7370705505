#include "server/rpc/front_end.h"

#include "server/auth/grpc_auth.h"
#include "server/cluster/forwarding.h"

namespace adaptd {

CallInfo GrpcCallInfo(grpc::CallbackServerContext* context) {
  CallInfo call;
  call.authorization = AuthorizationHeader(*context);
  call.origin = CallOriginOf(*context);
  const auto deadline = context->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    call.deadline = absl::FromChrono(deadline);
  }
  call.cancelled = [context] { return context->IsCancelled(); };
  return call;
}

std::optional<std::vector<RelayTarget>> ListTargets(const FrontEnd& fe, const CallInfo& call) {
  auto others = fe.service->ListPeers(call);
  if (!others.has_value()) return std::nullopt;
  std::vector<RelayTarget> targets;
  for (const auto* other : *others) targets.emplace_back(fe.relay, other);
  return targets;
}

}  // namespace adaptd
