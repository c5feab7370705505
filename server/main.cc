// adaptd: the test-time adaptation server. Configuration comes from the embedded default,
// then `--config FILE`, then flags (each later source overrides the earlier).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpc/support/log.h"
#include "kernels/cpu/blas_core.h"
#include "server/auth/security_flags.h"
#include "server/config/config.h"
#include "server/config/defaults.h"
#include "server/persistence/persistence_flags.h"
#include "server/rpc/server.h"
#include "server/scheduler/scheduler_flags.h"

namespace {

// Flags are spelled with dashes (--metrics-listen); the underscore spelling of the same name
// (--metrics_listen) is accepted too.
std::vector<std::string> NormalizeFlagSpelling(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {  // CLI11 wants the arguments in reverse order
    std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0) {
      const size_t end = std::min(arg.find('='), arg.size());
      for (size_t k = 2; k < end; ++k) {
        if (arg[k] == '_') arg[k] = '-';
      }
    }
    args.push_back(std::move(arg));
  }
  return args;
}

// gRPC's own log lines (e.g. a failed bind) are dropped unless GRPC_VERBOSITY asks for them:
// adaptd reports every failure itself, in one line.
void DropGrpcLog(gpr_log_func_args*) {}

int Fail(const std::string& message) {
  std::fprintf(stderr, "adaptd: %s\n", message.c_str());
  return 1;
}

// Chooses the BLAS kernels (kernels/cpu/blas_core.h, docs/BLAS.md). A better core than the
// library's own pick takes one restart of this process (execv, same pid and arguments), done
// here, before any thread, file or signal mask of adaptd's own exists. Returns an exit code
// when adaptd must stop; otherwise sets *summary to the line main logs once it serves (a start
// that fails says so in one line, its reason).
std::optional<int> SetUpBlas(const std::string& mode, char** argv, std::string* summary) {
  namespace k = adaptd::kernels;
  const k::CpuFeatures features = k::DetectCpuFeatures();
  const std::string library = k::LibraryCore();
  const char* fallback = std::getenv(k::kCoreFallbackEnv);
  absl::StatusOr<k::CorePlan> plan =
      fallback != nullptr ? k::PlanCore("library", library, nullptr, nullptr, features)
                          : k::PlanCore(mode, library, std::getenv("OPENBLAS_CORETYPE"),
                                        std::getenv(k::kChosenCoreEnv), features);
  if (!plan.ok()) return Fail(std::string(plan.status().message()));
  if (fallback != nullptr) plan->reason = fallback;
  if (!plan->restart_with.empty()) {
    setenv("OPENBLAS_CORETYPE", plan->restart_with.c_str(), 1);
    setenv(k::kChosenCoreEnv, k::CoreSourceName(plan->source), 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr,
                 "adaptd: BLAS: cannot restart with OPENBLAS_CORETYPE=%s (%s); keeping %s\n",
                 plan->restart_with.c_str(), std::strerror(errno), library.c_str());
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(k::kChosenCoreEnv);
    plan->source = k::CoreSource::kLibrary;
    plan->reason = "OpenBLAS's own pick (the restart failed)";
  }
  const std::string core = k::LibraryCore();
  if (absl::Status check = k::BlasSelfCheck(); !check.ok()) {
    if (plan->source == k::CoreSource::kCpuFeatures) {
      // The core adaptd chose computes wrongly here: back to the library's own pick.
      const std::string why =
          absl::StrCat(core, " failed its self-check (", check.message(), "); OpenBLAS's own pick");
      std::fprintf(stderr, "adaptd: BLAS: %s\n", why.c_str());
      unsetenv("OPENBLAS_CORETYPE");
      unsetenv(k::kChosenCoreEnv);
      setenv(k::kCoreFallbackEnv, why.c_str(), 1);
      execv("/proc/self/exe", argv);
    }
    return Fail(absl::StrCat("BLAS kernels ", core, ": ", check.message(),
                             "; adaptd will not serve results computed by them (--blas-core "
                             "chooses others; see docs/BLAS.md)"));
  }
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  if (plan->source != k::CoreSource::kLibrary && forced != nullptr &&
      !absl::EqualsIgnoreCase(core, forced)) {
    std::fprintf(stderr, "adaptd: BLAS: OpenBLAS runs %s, not the %s asked for\n", core.c_str(),
                 forced);
  }
  unsetenv(k::kChosenCoreEnv);
  unsetenv(k::kCoreFallbackEnv);
  const std::string version = k::BlasVersion();
  *summary = absl::StrCat("adaptd: BLAS: ", version, ", kernels ", core, " (", plan->reason,
                          "); self-check passed");
  k::SetBlasChoice({version, core, plan->source});
  return std::nullopt;
}

// The values of adaptd's own flags; an unset flag leaves the config's value (0 or empty).
struct Flags {
  std::string config_path, listen, metrics_listen, http_listen, data_dir, device;
  std::string onnxruntime_library;
  uint64_t max_message_bytes = 0;
  uint64_t max_call_bytes = 0;
  uint32_t worker_threads = 0, compile_threads = 0, max_dim = 0;
  adaptd::SchedulerFlags scheduler;
  adaptd::SecurityFlags security;
  adaptd::PersistenceFlags persistence;
  std::string cluster_self, cluster_token_file, advertise_address;
  uint32_t restart_grace = 0, cluster_settle = 0;
  uint32_t usage_interval_ms = 0;
  // Removed flags, refused naming their replacement.
  std::string removed_cluster_members;
  uint32_t removed_handoff_interval_ms = 0;
  std::string blas_core = adaptd::defaults::kBlasCore;
};

// A flag's help text with the default it stands for (server/config/defaults.h).
template <typename T>
std::string WithDefault(absl::string_view help, const T& value) {
  return absl::StrCat(help, " [default ", value, "]");
}

// The addresses, data directory, message size and worker threads.
void AddServingFlags(CLI::App& app, Flags* f) {
  namespace d = adaptd::defaults;
  app.add_option("--config", f->config_path,
                 "Server config file: JSON or protobuf text format of adapt.v1.ServerConfig");
  app.add_option("--listen", f->listen, WithDefault("gRPC listen address HOST:PORT", d::kListen));
  app.add_option("--metrics-listen", f->metrics_listen,
                 WithDefault("Prometheus metrics address HOST:PORT, served at /metrics; 'off' "
                             "disables",
                             d::kMetricsListen));
  app.add_option("--http-listen", f->http_listen,
                 WithDefault("HTTP/1.1 + JSON listen address HOST:PORT beside gRPC: unary calls "
                             "as POST /v1/<Method>, /healthz, /readyz (docs/HTTP.md); 'off' "
                             "serves none",
                             d::kHttpListen));
  app.add_option("--data-dir", f->data_dir,
                 WithDefault("Directory for the server's data", d::kDataDir));
  app.add_option("--max-message-bytes", f->max_message_bytes,
                 WithDefault("Largest gRPC message received or sent", d::kMaxMessageBytes));
  app.add_option("--max-call-bytes", f->max_call_bytes,
                 WithDefault("Largest body of one Adapt or Forget over HTTP; past it, 413 and "
                             "nothing committed",
                             d::kMaxCallBytes));
  app.add_option(
      "--workers,--worker-threads", f->worker_threads,
      WithDefault("Scheduler threads running requests; 0 = one per core", d::kWorkerThreads));
}

// Compile threads, the largest dimension and the compute device.
void AddComputeFlags(CLI::App& app, Flags* f) {
  namespace d = adaptd::defaults;
  app.add_option("--compile-threads", f->compile_threads,
                 WithDefault("Threads running compiles", d::kCompileThreads));
  app.add_option("--max-dim", f->max_dim,
                 WithDefault("Largest key dimension a store may have", d::kMaxDim));
  app.add_option("--device", f->device,
                 WithDefault("Compute backend: cpu, cuda (CUDA device 0) or cuda:N; cuda fails "
                             "at start-up where no usable device exists",
                             d::kDevice));
  app.add_option("--onnxruntime-library", f->onnxruntime_library,
                 WithDefault("ONNX Runtime's shared library, opened when the config names an onnx "
                             "encoder (docs/ONNX.md); unset: $ADAPTD_ONNXRUNTIME_LIBRARY, else "
                             "the dynamic linker's search for",
                             d::kOnnxRuntimeLibrary));
}

// The cluster on etcd (docs/CLUSTER_ETCD.md).
void AddClusterFlags(CLI::App& app, Flags* f) {
  app.add_option("--cluster-self", f->cluster_self,
                 "This member's name in a cluster on etcd, the name it registers under "
                 "(docs/CLUSTER_ETCD.md); with --etcd-endpoints, --snapshot-store and "
                 "--advertise-address [default: none, a single server]");
  app.add_option("--advertise-address", f->advertise_address,
                 "In a cluster on etcd, the HOST:PORT at which clients and the other members "
                 "reach this member's gRPC port (required there)");
  app.add_option("--restart-grace", f->restart_grace,
                 WithDefault("In a cluster on etcd, seconds a member stopped with SIGTERM keeps "
                             "its shards for its restart",
                             adaptd::defaults::kRestartGraceSeconds))
      ->check(CLI::Range(1, 3600));
  app.add_option("--cluster-settle", f->cluster_settle,
                 "In a cluster on etcd, seconds a member must have been ready before it wins "
                 "shards [default: twice --etcd-lease-ttl]")
      ->check(CLI::Range(0, 3600));
  app.add_option("--cluster-member-token-file", f->cluster_token_file,
                 "A file with the bearer token the members present to each other (forwarded "
                 "calls, status, usage); required in a cluster when tokens are configured");
  app.add_option("--usage-interval-ms", f->usage_interval_ms,
                 WithDefault("In a cluster, how often the members exchange tenants' usage for "
                             "the memory and rate quotas, in ms",
                             adaptd::defaults::kUsageIntervalMs))
      ->check(CLI::Range(1, 3600000));
  // The static member list's flags, removed: accepted by the parser (hidden), then refused
  // naming their replacement.
  app.add_option("--cluster-members", f->removed_cluster_members)->group("");
  app.add_option("--handoff-interval-ms", f->removed_handoff_interval_ms)->group("");
}

// Every flag, in the order --help lists them.
void AddFlags(CLI::App& app, Flags* f) {
  AddServingFlags(app, f);
  adaptd::AddSchedulerFlags(app, &f->scheduler);
  AddComputeFlags(app, f);
  adaptd::AddSecurityFlags(app, &f->security);
  adaptd::AddPersistenceFlags(app, &f->persistence);
  AddClusterFlags(app, f);
  app.add_option("--blas-core", f->blas_core,
                 "OpenBLAS kernels: auto (the best class this CPU's features run, when better "
                 "than OpenBLAS's own pick), library (OpenBLAS's own pick) or a core name such as "
                 "SkylakeX, Haswell, Zen; OPENBLAS_CORETYPE set in the environment wins "
                 "(docs/BLAS.md)")
      ->capture_default_str();
  app.footer("Flags are written with dashes; --metrics_listen and the like are accepted too.");
}

// Parses the command line into `app`'s flags. Returns an exit code when adaptd stops here:
// after --help, or on a malformed flag.
std::optional<int> ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(NormalizeFlagSpelling(argc, argv));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::cout << app.help();
      return 0;
    }
    return Fail(std::string(e.what()) + " (see adaptd --help)");
  }
  return std::nullopt;
}

// The cluster flags over the config's `cluster`; the removed flags refused.
absl::Status ApplyClusterFlags(const Flags& f, adapt::v1::ServerConfig* config) {
  if (!f.removed_cluster_members.empty()) {
    return absl::InvalidArgumentError(adaptd::RemovedClusterMembers("--cluster-members"));
  }
  if (f.removed_handoff_interval_ms > 0) {
    return absl::InvalidArgumentError(adaptd::RemovedHandoffInterval("--handoff-interval-ms"));
  }
  if (!f.cluster_self.empty()) config->mutable_cluster()->set_self(f.cluster_self);
  if (!f.cluster_token_file.empty()) {
    config->mutable_cluster()->set_member_token_file(f.cluster_token_file);
  }
  if (f.usage_interval_ms > 0)
    config->mutable_cluster()->set_usage_interval_ms(f.usage_interval_ms);
  if (!f.advertise_address.empty()) {
    config->mutable_cluster()->set_advertise_address(f.advertise_address);
  }
  if (f.restart_grace > 0) config->mutable_cluster()->set_restart_grace_seconds(f.restart_grace);
  if (f.cluster_settle > 0) config->mutable_cluster()->set_settle_seconds(f.cluster_settle);
  return absl::OkStatus();
}

// The embedded default, then the config file, then the flags.
absl::StatusOr<adapt::v1::ServerConfig> BuildConfig(const Flags& f) {
  adapt::v1::ServerConfig config = adaptd::DefaultConfig();
  if (!f.config_path.empty()) {
    auto file = adaptd::ParseConfigFile(f.config_path);
    if (!file.ok()) return file.status();
    config = adaptd::MergeConfig(config, *file);
  }
  if (!f.listen.empty()) config.set_listen(f.listen);
  if (!f.metrics_listen.empty())
    config.set_metrics_listen(f.metrics_listen == "off" ? "" : f.metrics_listen);
  if (!f.http_listen.empty()) config.set_http_listen(f.http_listen == "off" ? "" : f.http_listen);
  if (!f.data_dir.empty()) config.set_data_dir(f.data_dir);
  if (f.max_message_bytes > 0) config.set_max_message_bytes(f.max_message_bytes);
  if (f.max_call_bytes > 0) config.set_max_call_bytes(f.max_call_bytes);
  if (f.worker_threads > 0) config.set_worker_threads(f.worker_threads);
  adaptd::ApplySchedulerFlags(f.scheduler, &config);
  if (f.compile_threads > 0) config.set_compile_threads(f.compile_threads);
  if (f.max_dim > 0) config.set_max_dim(f.max_dim);
  if (!f.device.empty()) config.set_device(f.device);
  if (!f.onnxruntime_library.empty()) config.set_onnxruntime_library(f.onnxruntime_library);
  adaptd::ApplySecurityFlags(f.security, &config);
  adaptd::ApplyPersistenceFlags(f.persistence, &config);
  if (absl::Status s = ApplyClusterFlags(f, &config); !s.ok()) return s;
  return config;
}

// The start-up lines: BLAS, addresses, security, cluster and recovery.
void LogServing(const adaptd::AdaptdServer& server, const adapt::v1::ServerConfig& config,
                const std::string& blas_summary) {
  std::fprintf(stderr, "%s\n", blas_summary.c_str());
  std::fprintf(
      stderr, "adaptd: serving gRPC on %s, metrics on %s, data in %s\n", server.address().c_str(),
      server.metrics_address().empty() ? "(off)" : (server.metrics_address() + "/metrics").c_str(),
      config.data_dir().c_str());
  if (!server.http_address().empty()) {
    std::fprintf(stderr, "adaptd: serving HTTP/JSON on %s (docs/HTTP.md)\n",
                 server.http_address().c_str());
  }
  std::fprintf(stderr, "adaptd: %s\n", adaptd::SecuritySummary(config).c_str());
  if (adaptd::IsEtcdCluster(config)) {
    std::fprintf(stderr,
                 "adaptd: cluster member %s on etcd, reached at %s; calls for shards other "
                 "members hold are forwarded to them (docs/CLUSTER_ETCD.md)\n",
                 config.cluster().self().c_str(), config.cluster().advertise_address().c_str());
  }
  if (!server.recovery_report().empty()) {
    std::fprintf(stderr, "adaptd: %s\n", server.recovery_report().c_str());
  }
}

// SIGINT and SIGTERM, which stop adaptd, are taken by a handler that writes the signal's number
// to a pipe Serve reads. Whichever thread the kernel hands a stop signal to runs the handler,
// so no thread needs to block them: threads started before main (OpenBLAS starts its pool when
// it is loaded) would otherwise take one with its default action and end the process at once,
// as when a signal came while the main thread was not waiting for it (after SIGSTOP and
// SIGCONT, or during the start-up).
int stop_pipe[2] = {-1, -1};

extern "C" void OnStopSignal(int signal) {
  const int saved = errno;
  const unsigned char number = static_cast<unsigned char>(signal);
  if (write(stop_pipe[1], &number, 1) < 0) {
    // The pipe is full of earlier stop signals: one is enough.
  }
  errno = saved;
}

bool CatchStopSignals() {
  // The handler's end never blocks (a full pipe holds stop signals enough); the main thread's
  // end does.
  if (pipe2(stop_pipe, O_CLOEXEC) != 0 ||
      fcntl(stop_pipe[1], F_SETFL, fcntl(stop_pipe[1], F_GETFL) | O_NONBLOCK) != 0) {
    return false;
  }
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  return sigaction(SIGINT, &action, nullptr) == 0 && sigaction(SIGTERM, &action, nullptr) == 0;
}

// The first stop signal's number, once one came.
int WaitForStopSignal() {
  unsigned char number = 0;
  while (read(stop_pipe[0], &number, 1) != 1) {
    if (errno != EINTR) return SIGTERM;
  }
  return number;
}

// Serves `config` until SIGINT or SIGTERM, then shuts down. Returns the exit code.
int Serve(const adapt::v1::ServerConfig& config, const std::string& blas_summary) {
  // A member of a cluster on etcd whose lease lapsed serves nothing until it registers again:
  // it stops (exiting non-zero), and its supervisor starts it again.
  auto server = adaptd::AdaptdServer::Start(config, [] { kill(getpid(), SIGTERM); });
  if (!server.ok()) return Fail(std::string(server.status().message()));
  LogServing(**server, config, blas_summary);

  const int signal = WaitForStopSignal();
  const bool lease_lost = (*server)->lease_lost();
  std::fprintf(stderr, "adaptd: %s, shutting down\n",
               lease_lost         ? "this member's lease in etcd lapsed"
               : signal == SIGINT ? "SIGINT received"
                                  : "SIGTERM received");
  (*server)->Shutdown();
  std::fprintf(stderr, "adaptd: stopped\n");
  return lease_lost ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!CatchStopSignals())
    return Fail(absl::StrCat("cannot catch SIGTERM: ", std::strerror(errno)));
  // abseil's mutex deadlock detection (on in this abseil build) keeps a graph of every mutex
  // the process ever locked: with a mutex per store it took a third of the start-up at 10^5
  // stores (bench/RESULTS.md, "Residency at 10^5 stores, again"). The tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"adaptd: a gRPC service for test-time adaptation (FAAST, Falcon, FwPKM stores)",
               "adaptd"};
  Flags flags;
  AddFlags(app, &flags);
  if (std::optional<int> stop = ParseFlags(app, argc, argv)) return *stop;
  std::string blas_summary;
  if (std::optional<int> stop = SetUpBlas(flags.blas_core, argv, &blas_summary)) return *stop;

  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function(DropGrpcLog);

  absl::StatusOr<adapt::v1::ServerConfig> config = BuildConfig(flags);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  return Serve(*config, blas_summary);
}
