// AdaptdServer: the composition root of adaptd, used by main and by the in-process tests.
// It builds the backend, metrics (and their HTTP exposer), the engine, the scheduler, the
// gRPC server with health checking and reflection, and the HTTP/JSON front end when the config
// asks for it (server/http). Start once; Shutdown from any thread.
#ifndef ADAPTD_SERVER_RPC_SERVER_H_
#define ADAPTD_SERVER_RPC_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/server.h"
#include "kernels/backend.h"
#include "prometheus/exposer.h"
#include "server/auth/token_authorizer.h"
#include "server/cluster/etcd_cluster.h"
#include "server/config/defaults.h"
#include "server/core/engine.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/rpc/adaptation_service.h"
#include "server/scheduler/scheduler.h"
#include "server/service/call_gate.h"

namespace adaptd {

class AdaptdServer {
 public:
  // Validates `config`, creates the data directory, binds both ports and starts serving.
  // A port in use or a bad config is an error naming the cause. In a cluster on etcd,
  // `on_lease_lost` (nullable) runs once, on another thread, when this member's lease lapsed:
  // its shards went to the others, and it serves none until it starts again (adaptd stops).
  static absl::StatusOr<std::unique_ptr<AdaptdServer>> Start(
      const adapt::v1::ServerConfig& config, std::function<void()> on_lease_lost = nullptr);
  ~AdaptdServer();

  // The bound gRPC address (the real port when the config asked for port 0).
  const std::string& address() const { return address_; }
  // The bound metrics address, empty when metrics are off.
  const std::string& metrics_address() const { return metrics_address_; }
  // The bound HTTP/JSON address (docs/HTTP.md), empty when http_listen is off.
  const std::string& http_address() const;
  // What start-up recovery did and how long each step took (empty without a data directory).
  const std::string& recovery_report() const;

  // Whether this member of a cluster on etcd stopped because its lease lapsed (it exits
  // non-zero so that it is started again and registers anew).
  bool lease_lost() const { return lease_lost_.load(); }

  // Whether calls must carry a token (the config lists tokens).
  bool auth_enabled() const { return auth_ != nullptr && auth_->enabled(); }
  // The grace period of Shutdown() (config shutdown_grace_seconds; 10 s when unset).
  absl::Duration shutdown_grace() const { return grace_; }

  // Health turns NOT_SERVING and new calls are refused with UNAVAILABLE (by the service, for as
  // long as admitted calls are still running); in-flight calls get `grace` to finish (then they
  // are cancelled); the engine's durable state is flushed; then everything stops.
  void Shutdown() { Shutdown(grace_); }
  void Shutdown(absl::Duration grace);
  void Wait();

 private:
  AdaptdServer() = default;
  // Start's steps: the compute backend and the metrics (their exposer listening when
  // configured); the engine over its durability (in a cluster on etcd, after registering).
  absl::Status StartBackendAndMetrics(const adapt::v1::ServerConfig& config);
  absl::Status OpenEngine(const adapt::v1::ServerConfig& config,
                          std::function<void()> on_lease_lost);
  // The one place where shutdown makes the engine's state durable (log and snapshots).
  void FlushDurableState();

  std::string address_, metrics_address_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<EtcdCluster> etcd_cluster_;  // a cluster on etcd's member; else null
  std::atomic<bool> lease_lost_{false};        // the etcd cluster's lease lapsed
  std::unique_ptr<Service> service_;
  std::unique_ptr<AdaptationService> grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<http::HttpServer> http_;  // null when http_listen is off
  std::unique_ptr<TokenAuthorizer> auth_;
  CallGate gate_;  // admits calls; closed when shutdown begins
  absl::Duration grace_ = absl::Seconds(defaults::kShutdownGraceSeconds);
  bool shut_down_ = false;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_SERVER_H_
