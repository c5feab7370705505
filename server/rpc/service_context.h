// What every handler of the gRPC edge shares: the engine, the scheduler that runs request work
// off the gRPC threads, and the metrics. Owned by AdaptdServer; outlives every call.
#ifndef ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_
#define ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_

#include <atomic>
#include <string>

#include "absl/time/clock.h"
#include "grpcpp/server_context.h"
#include "server/auth/grpc_auth.h"
#include "server/core/engine.h"
#include "server/metrics/metrics.h"
#include "server/rpc/call_gate.h"
#include "server/rpc/cluster_bases.h"
#include "server/rpc/cluster_quotas.h"
#include "server/rpc/forwarding.h"
#include "server/rpc/handoff.h"
#include "server/rpc/status.h"
#include "server/scheduler/scheduler.h"

namespace adaptd {

inline grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

struct ServiceContext {
  Engine* engine = nullptr;
  // Runs every request's work: per-tenant queues, deadlines, lanes, predict batches.
  Scheduler* scheduler = nullptr;
  Metrics* metrics = nullptr;  // nullable
  size_t max_import_bytes = 0;
  size_t export_chunk_bytes = 1 << 20;
  const TokenAuthorizer* auth = nullptr;  // nullable: authentication off
  CallGate* gate = nullptr;               // nullable; closed once shutdown began
  // In a cluster, passes calls for stores another member owns to it (forwarding.h); null for
  // a single server.
  Forwarder* forwarder = nullptr;
  // In a cluster, where each call runs while stores move (handoff.h); null for a single
  // server.
  HandOff* handoff = nullptr;
  // In a cluster, the tenant quotas that hold over every member (cluster_quotas.h); null for
  // a single server.
  ClusterQuotas* quotas = nullptr;
  // In a cluster, base stores on other members (cluster_bases.h); null for a single server.
  ClusterBases* bases = nullptr;

  // At the start of a call: UNAVAILABLE once the server drains, then AuthorizeCall; on OK
  // `*admitted` holds the call's place in the gate until the call object is destroyed.
  grpc::Status Admit(const grpc::ServerContextBase& context, const std::string& tenant,
                     AdmittedCall* admitted) const {
    AdmittedCall call;
    if (gate != nullptr) {
      if (!gate->Enter()) return ShuttingDown();
      call = AdmittedCall(gate);
    }
    if (grpc::Status s = AuthorizeCall(auth, context, tenant); !s.ok()) return s;  // releases
    *admitted = std::move(call);
    return grpc::Status::OK;
  }
  // For each later message of a stream: may the caller touch this message's tenant?
  grpc::Status Authorize(const grpc::ServerContextBase& context, const std::string& tenant) const {
    return AuthorizeCall(auth, context, tenant);
  }

  // Where a call for tenant/store that does `access` runs: `*to` null (here) or the member
  // to pass it to (a cluster's, handoff.h); an error to answer instead (a store in motion,
  // or a forwarded call that is not ours).
  grpc::Status Route(const grpc::ServerContextBase& context, const std::string& tenant,
                     const std::string& store, Access access, const cluster::Member** to) const {
    *to = nullptr;
    if (handoff == nullptr) return grpc::Status::OK;
    return handoff->Route(context, tenant, store, access, to);
  }

  // Runs `create` (a CreateStore, or an ImportStore that is no hand-off) under the tenant's
  // store count: the cluster's when there is one, else the engine's own check decides.
  absl::Status CreateCounted(const std::string& tenant, const std::string& store,
                             absl::Time deadline,
                             const std::function<absl::Status()>& create) const {
    if (quotas == nullptr) return create();
    return quotas->Create(tenant, store, deadline, create);
  }

  void Record(const char* method, const grpc::Status& status, absl::Time start) const {
    if (metrics != nullptr) {
      metrics->RecordRequest(method, CodeName(status.error_code()),
                             absl::ToDoubleSeconds(absl::Now() - start));
    }
  }
};

// The status to answer instead of running work whose call is already over: Cancelled or
// DeadlineExceeded; OK when the work should run.
inline grpc::Status CallStillWanted(grpc::CallbackServerContext* context) {
  if (context->deadline() < std::chrono::system_clock::now()) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "the deadline passed before the request ran");
  }
  if (context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled");
  }
  return grpc::Status::OK;
}

// A streaming call refused before it ran: finishes at once and deletes itself.
template <typename Reactor>
class RefusedReactor final : public Reactor {
 public:
  explicit RefusedReactor(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

// The call's deadline (InfiniteFuture when it has none).
inline absl::Time CallDeadline(const grpc::ServerContextBase& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// A scheduler task for work of `context`'s call on behalf of `tenant`: it carries the call's
// deadline and cancellation; the caller sets `run` (and `lane` or `batch_item`).
inline Task CallTask(grpc::CallbackServerContext* context, const std::string& tenant) {
  Task task;
  task.tenant = tenant;
  const auto deadline = context->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    task.deadline = absl::FromChrono(deadline);
  }
  task.cancelled = [context] { return context->IsCancelled(); };
  return task;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_
