// What every handler of the gRPC edge shares: the engine, the executor that runs request work
// off the gRPC threads, and the metrics. Owned by AdaptdServer; outlives every call.
#ifndef ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_
#define ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_

#include <string>

#include "absl/time/clock.h"
#include "grpcpp/server_context.h"
#include "server/core/engine.h"
#include "server/core/executor.h"
#include "server/metrics/metrics.h"
#include "server/rpc/status.h"

namespace adaptd {

struct ServiceContext {
  Engine* engine = nullptr;
  Executor* executor = nullptr;
  Metrics* metrics = nullptr;  // nullable
  size_t max_import_bytes = 0;
  size_t export_chunk_bytes = 1 << 20;

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

inline grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_SERVICE_CONTEXT_H_
