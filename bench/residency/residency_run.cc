#include "bench/residency/residency_run.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/residency/probes.h"
#include "server/base/status_macros.h"

namespace adaptd::bench {
namespace {

constexpr const char* kTiers[] = {"hot", "warm", "cold"};

std::string DataDir(const RunOptions& o) { return o.work_dir + "/data"; }

}  // namespace

ResidencyRun::ResidencyRun(const RunOptions& options, const WorkloadOptions& workload, Emit emit)
    : options_(options), workload_(workload), emit_(std::move(emit)), rng_(workload.seed) {}

nlohmann::json ResidencyRun::Record(const Mode& mode, const std::string& measurement) const {
  const WorkloadOptions& w = workload_.options();
  return {{"bench", "residency"}, {"measurement", measurement},
          {"mode", mode.name},    {"budget_bytes", mode.budget_bytes},
          {"stores", w.stores},   {"dim", w.dim},
          {"labels", w.labels},   {"examples", w.examples}};
}

absl::Status ResidencyRun::Run() {
  RETURN_IF_ERROR(Setup());
  if (!options_.budget_only) RETURN_IF_ERROR(MeasureMode({"no_budget", 0}));
  return MeasureMode({"budget", budget_bytes_});
}

absl::Status ResidencyRun::Setup() {
  const std::string data = DataDir(options_);
  std::error_code error;
  if (std::filesystem::exists(data) && !std::filesystem::is_empty(data)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--work-dir: ", data, " is not empty; give a new or empty directory"));
  }
  std::filesystem::create_directories(data, error);
  if (error) return absl::InternalError(absl::StrCat("mkdir ", data, ": ", error.message()));
  if (options_.budget_only && options_.budget_bytes <= 0) {
    return absl::InvalidArgumentError("--budget-only: needs --budget-bytes");
  }
  const Mode setup{"setup", options_.budget_only ? options_.budget_bytes : 0};
  ASSIGN_OR_RETURN(double ready_s, StartServer(setup));
  (void)ready_s;  // an empty data directory says nothing about restarts
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(FillStores(*client_, workload_, options_.setup_threads));
  const double fill_s = absl::ToDoubleSeconds(absl::Now() - start);
  ASSIGN_OR_RETURN(nlohmann::json footprint, Footprint());
  nlohmann::json record = Record(setup, "setup");
  record.update(footprint);
  record["fill_s"] = fill_s;
  emit_(record);

  const double held = footprint["memory_bytes"].get<double>();
  const double per_store = held / workload_.options().stores;
  budget_bytes_ =
      options_.budget_bytes > 0
          ? options_.budget_bytes
          : static_cast<int64_t>(std::max(2 * per_store, options_.budget_fraction * held));
  if (!options_.budget_only && budget_bytes_ >= held) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--budget-bytes: ", budget_bytes_, " holds all ", workload_.options().stores, " stores (",
        static_cast<int64_t>(held), " bytes), so nothing would be evicted"));
  }
  ASSIGN_OR_RETURN(last_shutdown_s_, Stop(SIGTERM));
  ASSIGN_OR_RETURN(int64_t disk, DiskBytes(data));
  record = Record(setup, "shutdown");
  record["signal"] = "SIGTERM";
  record["shutdown_s"] = last_shutdown_s_;
  record["disk_bytes"] = disk;
  emit_(record);
  return absl::OkStatus();
}

absl::Status ResidencyRun::MeasureMode(const Mode& mode) {
  std::fprintf(stderr, "residency: %s (budget %lld bytes)\n", mode.name.c_str(),
               static_cast<long long>(mode.budget_bytes));
  RETURN_IF_ERROR(StartAndTime(mode, "SIGTERM", last_shutdown_s_));
  RETURN_IF_ERROR(ColdFirstPredict(mode, "SIGTERM"));
  RETURN_IF_ERROR(ReadAll(mode));
  RETURN_IF_ERROR(LoadWhole(mode));
  RETURN_IF_ERROR(PredictLatency(mode));
  RETURN_IF_ERROR(AdaptByTier(mode, "loaded"));
  ASSIGN_OR_RETURN(double kill_s, Stop(SIGKILL));
  RETURN_IF_ERROR(StartAndTime(mode, "SIGKILL", kill_s));
  RETURN_IF_ERROR(ColdFirstPredict(mode, "SIGKILL"));
  // The only point with all three tiers: the stores the log replay loaded are hot, the sample
  // just read is warm, the rest cold.
  RETURN_IF_ERROR(AdaptByTier(mode, "restarted"));
  ASSIGN_OR_RETURN(last_shutdown_s_, Stop(SIGTERM));
  ASSIGN_OR_RETURN(int64_t disk, DiskBytes(DataDir(options_)));
  nlohmann::json record = Record(mode, "shutdown");
  record["signal"] = "SIGTERM";
  record["shutdown_s"] = last_shutdown_s_;
  record["disk_bytes"] = disk;
  emit_(record);
  return absl::OkStatus();
}

absl::StatusOr<double> ResidencyRun::StartServer(const Mode& mode) {
  ASSIGN_OR_RETURN(int port, FreePort());
  ASSIGN_OR_RETURN(int metrics_port, FreePort());
  address_ = absl::StrCat("127.0.0.1:", port);
  metrics_address_ = absl::StrCat("127.0.0.1:", metrics_port);
  std::vector<std::string> args = {"--listen",       address_,      "--metrics-listen",
                                   metrics_address_, "--data-dir",  DataDir(options_),
                                   "--fsync",        options_.fsync};
  if (mode.budget_bytes > 0) {
    args.insert(args.end(), {"--memory-budget-bytes", absl::StrCat(mode.budget_bytes)});
  }
  args.insert(args.end(), options_.server_args.begin(), options_.server_args.end());
  channel_ = FastRetryChannel(address_);
  stub_ = adapt::v1::Adaptation::NewStub(channel_);
  adaptd::ClientOptions client_options;
  client_options.unary_timeout = absl::Seconds(options_.ready_timeout_s);
  client_options.stream_timeout = absl::Seconds(options_.ready_timeout_s);
  client_ = adaptd::Client::FromChannel(channel_, client_options);

  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(server_.Start(options_.adaptd, args, options_.work_dir + "/adaptd.log"));
  while (!HealthServing(*channel_, absl::Milliseconds(200))) {
    RETURN_IF_ERROR(server_.CheckRunning());
    if (absl::Now() - start > absl::Seconds(options_.ready_timeout_s)) {
      return absl::DeadlineExceededError(absl::StrCat("adaptd did not answer SERVING within ",
                                                      options_.ready_timeout_s, " s; see its log"));
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  return absl::ToDoubleSeconds(absl::Now() - start);
}

absl::Status ResidencyRun::StartAndTime(const Mode& mode, const std::string& after,
                                        double shutdown_s) {
  ASSIGN_OR_RETURN(double ready_s, StartServer(mode));
  first_store_ = std::uniform_int_distribution<int>(0, workload_.options().stores - 1)(rng_);
  const StoreName& first = workload_.stores()[first_store_];
  // The tier is asked first (GetStore never loads), and left out of the time to the Predict.
  ASSIGN_OR_RETURN(std::string first_tier, TierOf(*stub_, first));
  ASSIGN_OR_RETURN(double first_ms, Predict(first));
  const double first_predict_s = ready_s + first_ms / 1000;
  ASSIGN_OR_RETURN(nlohmann::json footprint, Footprint());
  nlohmann::json record = Record(mode, "restart");
  record.update(footprint);
  record["after"] = after;
  record["shutdown_s"] = shutdown_s;
  record["ready_s"] = ready_s;
  record["first_predict_s"] = first_predict_s;
  record["first_predict_ms"] = first_ms;
  record["first_predict_tier"] = first_tier;
  emit_(record);
  return absl::OkStatus();
}

absl::StatusOr<double> ResidencyRun::Stop(int signal) {
  return server_.Stop(signal, options_.ready_timeout_s);
}

absl::StatusOr<double> ResidencyRun::Predict(const StoreName& name) {
  const adapt::v1::PredictRequest request = workload_.PredictRequestFor(name, rng_);
  adapt::v1::PredictResponse response;
  ASSIGN_OR_RETURN(double ms,
                   TimeCall("Predict", name, options_.ready_timeout_s, [&](grpc::ClientContext& c) {
                     return stub_->Predict(&c, request, &response);
                   }));
  if (response.predictions_size() != 1 || response.predictions(0).labels_size() != 1) {
    return absl::InternalError(absl::StrCat("Predict ", name.tenant, "/", name.store,
                                            ": expected one top-1 prediction, got ",
                                            response.ShortDebugString()));
  }
  return ms;
}

absl::StatusOr<nlohmann::json> ResidencyRun::Footprint() {
  ASSIGN_OR_RETURN(ResidentSet rss, ResidentSetOf(server_.pid()));
  ASSIGN_OR_RETURN(int64_t disk, DiskBytes(DataDir(options_)));
  ASSIGN_OR_RETURN(auto metrics, ScrapeMetrics(metrics_address_));
  nlohmann::json f = {
      {"rss_bytes", rss.rss_bytes},
      {"rss_anon_bytes", rss.anon_bytes},
      {"rss_file_bytes", rss.file_bytes},
      {"disk_bytes", disk},
      {"memory_bytes", MetricSum(metrics, "adaptd_memory_bytes")},
      {"resident_bytes", MetricSum(metrics, "adaptd_resident_bytes")},
      {"loads_total", MetricSum(metrics, "adaptd_store_loads_total")},
      {"load_seconds_sum", MetricSum(metrics, "adaptd_store_load_duration_seconds_sum")},
      {"evictions_total", MetricSum(metrics, "adaptd_store_evictions_total")},
      {"auto_compiles_total", MetricSum(metrics, "adaptd_compiles_total", "trigger=\"auto\"")}};
  for (const char* tier : kTiers) {
    f[absl::StrCat("stores_", tier)] =
        MetricSum(metrics, "adaptd_stores", absl::StrCat("tier=\"", tier, "\""));
  }
  return f;
}

absl::StatusOr<std::vector<adapt::v1::StoreInfo>> ResidencyRun::AllInfos() {
  std::set<std::string> tenants;
  for (const StoreName& s : workload_.stores()) tenants.insert(s.tenant);
  std::vector<adapt::v1::StoreInfo> found;
  for (const std::string& tenant : tenants) {
    RETURN_IF_ERROR(client_->ForEachStore(
        tenant,
        [&](const adapt::v1::StoreInfo& info) {
          found.push_back(info);
          return absl::OkStatus();
        },
        1000));
  }
  return found;
}

absl::StatusOr<std::vector<StoreName>> ResidencyRun::StoresIn(const std::string& tier) {
  ASSIGN_OR_RETURN(std::vector<adapt::v1::StoreInfo> infos, AllInfos());
  std::vector<StoreName> found;
  for (const adapt::v1::StoreInfo& info : infos) {
    if (TierName(info.tier()) == tier) found.push_back({info.tenant(), info.store()});
  }
  return found;
}

}  // namespace adaptd::bench
