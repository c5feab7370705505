// What every handler of the gRPC front end shares: the service layer (server/service), which
// decides and runs every call, and the relay that passes a call's bytes on when the service
// routes it elsewhere. Helpers map a gRPC call onto the service's CallInfo and statuses.
#ifndef ADAPTD_SERVER_RPC_FRONT_END_H_
#define ADAPTD_SERVER_RPC_FRONT_END_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "grpcpp/server_context.h"
#include "server/base/grpc_status.h"
#include "server/cluster/forwarding.h"
#include "server/service/call_info.h"
#include "server/service/service.h"

namespace adaptd {

struct FrontEnd {
  Service* service = nullptr;
  // Reaches the destinations the service routes calls to (forwarding.h); null for a single
  // server.
  Forwarder* relay = nullptr;

  void Record(const char* method, const grpc::Status& status, absl::Time start) const {
    service->Record(method, FromGrpc(status), start, Transport::kGrpc);
  }
};

// The service's view of a gRPC call: credential, origin, deadline, cancellation.
CallInfo GrpcCallInfo(grpc::CallbackServerContext* context);

// The response header a relayed call carries: the store's holder, for clients that call
// holders directly (docs/CLUSTER_OPERATIONS.md, "Clients route to holders").
inline constexpr char kHolderHeader[] = "adaptd-holder";

// The one route-or-relay step of every handler: asks the service where a call for
// tenant/store that does `access` runs. False: serve it here. True: the call is handled
// elsewhere, refused with `refuse(status)` or passed on with `relay(target)`, a RelayTarget
// (each handler relays in its own form: a unary call, a stream, one message of a stream).
// A relayed call's answer carries the holder hint as initial metadata of `hinted` (null: no
// hint, as for a stream that answered already).
template <typename Refuse, typename Relay>
bool RoutedAway(const FrontEnd& fe, grpc::ServerContextBase* hinted, const CallInfo& call,
                const std::string& tenant, const std::string& store, Access access, Refuse refuse,
                Relay relay) {
  auto to = fe.service->Route(call, tenant, store, access);
  if (!to.ok()) {
    refuse(ToGrpc(to.status()));
    return true;
  }
  if (*to == nullptr) return false;
  if (hinted != nullptr) {
    if (std::string hint = fe.service->HolderHint(tenant, store, **to); !hint.empty()) {
      hinted->AddInitialMetadata(kHolderHeader, hint);
    }
  }
  relay(RelayTarget(fe.relay, *to));
  return true;
}

// A listing gathered from several servers (Service::ListPeers): the others to relay it to;
// nullopt when this server's page is the answer.
std::optional<std::vector<RelayTarget>> ListTargets(const FrontEnd& fe, const CallInfo& call);

// A streaming call refused before it ran: finishes at once and deletes itself.
template <typename Reactor>
class RefusedReactor final : public Reactor {
 public:
  explicit RefusedReactor(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_FRONT_END_H_
