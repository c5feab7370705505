#include "server/rpc/server.h"

#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "kernels/cpu/blas_core.h"
#include "server/auth/tls_credentials.h"
#include "server/base/status_macros.h"
#include "server/cluster/member_token.h"
#include "server/config/config.h"
#include "server/rpc/wire.h"
#include "server/scheduler/scheduler_config.h"
#include "server/service/predict_batch.h"

namespace adaptd {
namespace {

constexpr char kServiceName[] = "adapt.v1.Adaptation";

absl::StatusOr<std::string> StartExposer(const std::string& listen,
                                         std::unique_ptr<prometheus::Exposer>* exposer) {
  try {
    *exposer = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listen, ": ", e.what(),
                                               " (the address may be in use or not available)"));
  }
  const auto ports = (*exposer)->GetListeningPorts();
  const std::string host = listen.substr(0, listen.rfind(':'));
  return absl::StrCat(host, ":", ports.empty() ? 0 : ports.front());
}

// The HTTP/JSON front end over `service` (docs/HTTP.md); null when http_listen is off.
absl::StatusOr<std::unique_ptr<http::HttpServer>> StartHttp(const adapt::v1::ServerConfig& config,
                                                            Service* service,
                                                            Forwarder* forwarder) {
  if (config.http_listen().empty()) return nullptr;
  http::HttpServerOptions options;
  options.listen = config.http_listen();
  options.max_body_bytes = config.max_message_bytes();
  options.max_call_bytes = config.max_call_bytes();
  // The gRPC listener's TLS files (checked when its credentials were made).
  options.tls_cert_file = config.tls_cert_file();
  options.tls_key_file = config.tls_key_file();
  options.tls_client_ca_file = config.tls_client_ca_file();
  options.forwarder = forwarder;  // relays calls for other members' stores
  return http::HttpServer::Start(options, service);
}

}  // namespace

absl::Status AdaptdServer::StartBackendAndMetrics(const adapt::v1::ServerConfig& config) {
  ASSIGN_OR_RETURN(backend_, kernels::MakeBackend(config.device()));
  backend_->SetThreads(BackendThreadsFromConfig(config, std::thread::hardware_concurrency()));
  metrics_ = std::make_unique<Metrics>(
      TenantPolicy{{config.metrics_tenants().begin(), config.metrics_tenants().end()},
                   config.has_metrics_top_tenants() ? config.metrics_top_tenants()
                                                    : defaults::kMetricsTopTenants});
  {
    const kernels::BlasChoice blas = kernels::CurrentBlasChoice();
    metrics_->SetBuildInfo(
        {{"version", ADAPTD_VERSION},
         {"device", config.device().empty() ? defaults::kDevice : config.device()},
         {"blas", blas.version},
         {"blas_core", blas.core},
         {"blas_core_source", kernels::CoreSourceName(blas.source)}});
  }
  if (!config.metrics_listen().empty()) {
    ASSIGN_OR_RETURN(metrics_address_, StartExposer(config.metrics_listen(), &exposer_));
    exposer_->RegisterCollectable(metrics_->collectable());
  }
  return absl::OkStatus();
}

absl::Status AdaptdServer::OpenEngine(const adapt::v1::ServerConfig& config,
                                      std::function<void()> on_lease_lost) {
  if (IsEtcdCluster(config)) {
    // Registered (STARTING) before the engine opens: its durability fences writes by the
    // claims this member will hold.
    ASSIGN_OR_RETURN(etcd_cluster_, EtcdCluster::Register(config, metrics_.get(),
                                                          [this, lost = std::move(on_lease_lost)] {
                                                            lease_lost_.store(true);
                                                            if (lost) lost();
                                                          }));
    ASSIGN_OR_RETURN(engine_,
                     Engine::CreateOver(config, backend_.get(), metrics_.get(),
                                        Engine::DurableLogOf(config, backend_.get(), metrics_.get(),
                                                             etcd_cluster_->fences())));
    etcd_cluster_->Attach(engine_.get());
  } else {
    ASSIGN_OR_RETURN(engine_, Engine::Create(config, backend_.get(), metrics_.get()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AdaptdServer>> AdaptdServer::Start(
    const adapt::v1::ServerConfig& config, std::function<void()> on_lease_lost) {
  RETURN_IF_ERROR(ValidateConfig(config));
  QuietProtobufUtf8Log();  // the service answers those requests itself, naming the field
  std::unique_ptr<AdaptdServer> s(new AdaptdServer());
  google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig> tokens = config.tokens();
  RETURN_IF_ERROR(AddMemberToken(config, &tokens));
  ASSIGN_OR_RETURN(TokenAuthorizer auth, TokenAuthorizer::Create(tokens));
  s->auth_ = std::make_unique<TokenAuthorizer>(std::move(auth));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(config));
  if (config.has_shutdown_grace_seconds()) {
    s->grace_ = absl::Seconds(config.shutdown_grace_seconds());
  }

  std::error_code ec;
  std::filesystem::create_directories(config.data_dir(), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("data_dir ", config.data_dir(), ": cannot be created: ", ec.message()));
  }

  RETURN_IF_ERROR(s->StartBackendAndMetrics(config));
  RETURN_IF_ERROR(s->OpenEngine(config, std::move(on_lease_lost)));
  SchedulerOptions scheduling = SchedulerOptionsFromConfig(config);
  scheduling.run_batch = [engine = s->engine_.get()](std::vector<std::unique_ptr<BatchItem>>& b) {
    RunPredictBatch(*engine, b);
  };
  scheduling.on_wait = [m = s->metrics_.get()](absl::Duration w) {
    m->RecordQueueWait(absl::ToDoubleSeconds(w));
  };
  scheduling.on_batch = [m = s->metrics_.get()](size_t size) {
    m->RecordBatch("PredictBatch", static_cast<double>(size));
  };
  ASSIGN_OR_RETURN(s->scheduler_, Scheduler::Create(std::move(scheduling)));
  s->metrics_->SetQueueDepthSource([q = s->scheduler_.get()] { return q->queued(); });

  ServiceOptions service;
  service.engine = s->engine_.get();
  service.scheduler = s->scheduler_.get();
  service.metrics = s->metrics_.get();
  service.export_chunk_bytes = std::min<size_t>(size_t{1} << 20, config.max_message_bytes() / 2);
  service.auth = s->auth_.get();
  service.gate = &s->gate_;
  Forwarder* forwarder = nullptr;
  if (s->etcd_cluster_ != nullptr) {
    service.etcd_cluster = s->etcd_cluster_.get();
    forwarder = s->etcd_cluster_->forwarder();
  }
  s->service_ = std::make_unique<Service>(service);
  s->grpc_service_ = std::make_unique<AdaptationService>(FrontEnd{s->service_.get(), forwarder});

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(config.listen(), credentials, &port);
  // Without this, Linux lets a second server bind the same port (SO_REUSEPORT).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes()));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes()));
  builder.RegisterService(s->grpc_service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || port == 0) {
    s->engine_->Shutdown();
    s->scheduler_->Stop();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen(),
                                               ": the address is in use or not available"));
  }
  s->address_ = absl::StrCat(config.listen().substr(0, config.listen().rfind(':')), ":", port);
  // Live at once (""); ready (adapt.v1.Adaptation, the chart's readiness probe) at once for a
  // single server, and for a member of a cluster on etcd once Serve made it READY: holding and
  // having opened its shards.
  auto* health = s->server_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(kServiceName, s->etcd_cluster_ == nullptr);
  ASSIGN_OR_RETURN(s->http_, StartHttp(config, s->service_.get(), forwarder));
  if (s->http_ != nullptr) s->http_->SetReady(s->etcd_cluster_ == nullptr);
  if (s->etcd_cluster_ != nullptr) {
    // Listening first: the members forwarding calls here reach it once it holds shards.
    if (absl::Status served = s->etcd_cluster_->Serve(s->engine_.get()); !served.ok()) {
      return absl::Status(served.code(),
                          absl::StrCat("cluster (etcd): member '", s->etcd_cluster_->self(),
                                       "' could not become ready: ", served.message()));
    }
    health->SetServingStatus(kServiceName, true);
    if (s->http_ != nullptr) s->http_->SetReady(true);
  }
  return s;
}

void AdaptdServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time deadline = absl::Now() + grace;
  // From here on the service answers new calls UNAVAILABLE itself, while the transport still
  // accepts them; gRPC's own shutdown starts only once the admitted calls are done.
  gate_.Close();
  if (http_ != nullptr) http_->Drain();
  // A member of a cluster on etcd claims and releases nothing from here on, so the calls below
  // can drain.
  if (etcd_cluster_ != nullptr) etcd_cluster_->Freeze();
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    gate_.WaitIdle(deadline);
    // Returns once every remaining call finished (health watches, calls still being refused),
    // or at the deadline after cancelling the rest.
    server_->Shutdown(absl::ToChronoTime(std::max(deadline, absl::Now())));
  }
  // HTTP calls still queued are cancelled; those running finish before the engine stops.
  if (http_ != nullptr) http_->Stop();
  // The engine's background work (compiles, evictions) stops before the final checkpoint:
  // an automatic compile logged after it would leave a log tail, and the next start would
  // load its store to replay it.
  if (engine_ != nullptr) engine_->Shutdown();
  FlushDurableState();
  // Every changed store is written out: the shards wait for this member's restart.
  if (etcd_cluster_ != nullptr && !lease_lost_.load()) {
    if (absl::Status kept = etcd_cluster_->HandOverForRestart(); !kept.ok()) {
      std::fprintf(stderr,
                   "adaptd: keeping the shards for the restart failed (they fail over once "
                   "this member's lease lapses): %s\n",
                   std::string(kept.message()).c_str());
    }
  }
  if (scheduler_ != nullptr) scheduler_->Stop();
  if (metrics_ != nullptr) metrics_->SetQueueDepthSource(nullptr);
}

void AdaptdServer::FlushDurableState() {
  // After the last call finished: every store's snapshot is written and the log they cover
  // dropped, so the next start replays nothing. On failure the log still holds everything.
  if (engine_ == nullptr) return;
  const absl::Status status = engine_->Flush();
  if (!status.ok()) {
    std::fprintf(stderr, "adaptd: writing snapshots at shutdown failed (the log is kept): %s\n",
                 std::string(status.message()).c_str());
  }
}

void AdaptdServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

AdaptdServer::~AdaptdServer() { Shutdown(absl::ZeroDuration()); }

const std::string& AdaptdServer::http_address() const {
  static const std::string kNone;
  return http_ != nullptr ? http_->address() : kNone;
}

const std::string& AdaptdServer::recovery_report() const { return engine_->recovery_report(); }

}  // namespace adaptd
