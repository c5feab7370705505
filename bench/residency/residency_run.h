// One run of the residency bench: it owns the adaptd process and its data directory, fills the
// stores once, then measures each residency setting (no budget, then a budget) the same way:
// restart after SIGTERM and after SIGKILL (to SERVING and to the first Predict), the first
// Predict to a sample of cold stores, memory and disk once every store was read (which makes
// them warm: the warm footprint) and once every store was loaded whole (hot, as far as the
// budget allows), hot Predict latency beside the no-op Ping and GetStore, Predict to any store
// by the tier it was found in, and Adapt by tier (hot, warm, cold). Each measurement is one JSON
// object, handed to `emit` as it is made.
//
// Thread safety: one thread drives a ResidencyRun.
#ifndef ADAPTD_BENCH_RESIDENCY_RESIDENCY_RUN_H_
#define ADAPTD_BENCH_RESIDENCY_RESIDENCY_RUN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/residency/server_process.h"
#include "bench/residency/workload.h"
#include "nlohmann/json.hpp"

namespace adaptd::bench {

struct RunOptions {
  std::string adaptd;                    // the server binary
  std::string work_dir;                  // holds data/ (the --data-dir) and adaptd.log
  std::vector<std::string> server_args;  // passed to every start
  std::string fsync = "on";
  int64_t budget_bytes = 0;  // 0: budget_fraction of what the filled stores hold
  double budget_fraction = 0.25;
  int calls = 2000;       // timed calls per latency measurement
  int cold_sample = 200;  // stores whose first Predict after a restart is timed
  int adapt_sample = 50;  // Adapts timed per kind of target (resident, evicted)
  int setup_threads = 4;
  double ready_timeout_s = 600;  // start to SERVING, and SIGTERM to exit
  // Fill and measure under budget_bytes alone, for counts whose stores do not fit in memory
  // unbudgeted: the fill runs under the budget, the no-budget setting is left out, and only
  // `whole_sample` stores are loaded whole.
  bool budget_only = false;
  int whole_sample = 2000;  // with budget_only
};

class ResidencyRun {
 public:
  using Emit = std::function<void(const nlohmann::json&)>;
  ResidencyRun(const RunOptions& options, const WorkloadOptions& workload, Emit emit);

  // Everything, in order; the first failure ends the run (the server is killed).
  absl::Status Run();

 private:
  struct Mode {
    std::string name;  // "no_budget" or "budget"
    int64_t budget_bytes = 0;
  };

  absl::Status Setup();
  absl::Status MeasureMode(const Mode& mode);
  // Starts adaptd; measures the time to SERVING and to the first Predict (SERVING plus that
  // call, the GetStore asking its tier left out); `after` names what stopped the previous
  // process.
  absl::Status StartAndTime(const Mode& mode, const std::string& after, double shutdown_s);
  // Starts adaptd with the mode's flags and returns the seconds until it answers SERVING.
  absl::StatusOr<double> StartServer(const Mode& mode);
  absl::StatusOr<double> Stop(int signal);
  absl::Status ColdFirstPredict(const Mode& mode, const std::string& after);
  // Calls `touch` on `count` stores (every store by default), in random order, waits for the
  // budget to be kept, and emits the memory record of `state` ("read" or "whole"); returns it.
  absl::StatusOr<nlohmann::json> TouchAll(
      const Mode& mode, const std::string& state,
      const std::function<absl::Status(const StoreName&)>& touch, size_t count = SIZE_MAX);
  // Predicts from every store once (a cold store loads only its warm form), then measures the
  // warm footprint: heap per warm store and the memory_bytes GetStore reports for one.
  absl::Status ReadAll(const Mode& mode);
  // Exports every store (a warm or cold store loads whole first): the hot footprint. With
  // budget_only, a sample of whole_sample stores.
  absl::Status LoadWhole(const Mode& mode);
  absl::Status PredictLatency(const Mode& mode);
  // `when` names the point of the run (the tiers present differ: after LoadWhole, hot and what
  // the budget made warm; after a SIGKILL restart, the replayed stores hot, the first-Predict
  // sample warm, the rest cold).
  absl::Status AdaptByTier(const Mode& mode, const std::string& when);

  // Every store's description, as ListStores reports it (it never loads a store).
  absl::StatusOr<std::vector<adapt::v1::StoreInfo>> AllInfos();
  // The stores GetStore (through ListStores) reports in `tier`.
  absl::StatusOr<std::vector<StoreName>> StoresIn(const std::string& tier);
  // RSS, disk, and the residency metrics of the running server.
  absl::StatusOr<nlohmann::json> Footprint();
  absl::StatusOr<double> Predict(const StoreName& name);
  nlohmann::json Record(const Mode& mode, const std::string& measurement) const;

  RunOptions options_;
  Workload workload_;
  Emit emit_;
  std::mt19937_64 rng_;
  ServerProcess server_;
  std::string address_, metrics_address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
  std::unique_ptr<adaptd::Client> client_;
  int64_t budget_bytes_ = 0;    // the budget mode's, fixed after Setup
  int first_store_ = 0;         // the store the last start's first Predict read
  double last_shutdown_s_ = 0;  // SIGTERM to exit, of the last stop
};

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_RESIDENCY_RESIDENCY_RUN_H_
