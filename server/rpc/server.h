// AdaptdServer: the composition root of adaptd, used by main and by the in-process tests.
// It builds the backend, metrics (and their HTTP exposer), the engine, the executor and the
// gRPC server with health checking and reflection. Start once; Shutdown from any thread.
#ifndef ADAPTD_SERVER_RPC_SERVER_H_
#define ADAPTD_SERVER_RPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/server.h"
#include "kernels/backend.h"
#include "prometheus/exposer.h"
#include "server/core/engine.h"
#include "server/core/executor.h"
#include "server/metrics/metrics.h"
#include "server/rpc/adaptation_service.h"

namespace adaptd {

class AdaptdServer {
 public:
  // Validates `config`, creates the data directory, binds both ports and starts serving.
  // A port in use or a bad config is an error naming the cause.
  static absl::StatusOr<std::unique_ptr<AdaptdServer>> Start(const adapt::v1::ServerConfig& config);
  ~AdaptdServer();

  // The bound gRPC address (the real port when the config asked for port 0).
  const std::string& address() const { return address_; }
  // The bound metrics address, empty when metrics are off.
  const std::string& metrics_address() const { return metrics_address_; }

  // Health turns NOT_SERVING, in-flight calls get `grace` to finish, then everything stops.
  void Shutdown(absl::Duration grace = absl::Seconds(5));
  void Wait();

 private:
  AdaptdServer() = default;

  std::string address_, metrics_address_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<AdaptationService> service_;
  std::unique_ptr<grpc::Server> server_;
  bool shut_down_ = false;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_SERVER_H_
