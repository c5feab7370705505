// The residency benchmark: N faast stores on one adaptd, measured without a memory budget and
// with one small enough to evict (docs/RESIDENCY.md): resident set and disk with every store
// warm and with every store loaded whole, restart to ready after SIGTERM and after SIGKILL, the
// first Predict to cold stores, hot Predict latency beside the no-op Ping, Predict and Adapt by
// the tier the store was found in (hot, warm, cold). Prints one JSON line a
// measurement on stdout (and to --json), then a table on stderr. bench/residency/report.py turns
// the JSON lines into the markdown of bench/RESULTS.md, "Residency".
//
// Run it niced on a shared machine (the server inherits the niceness):
//   nice -n 10 build/bench/residency/residency_bench --adaptd build/server/adaptd --stores 1000
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "bench/residency/residency_run.h"

namespace adaptd::bench {
namespace {

std::string MiB(const nlohmann::json& r, const char* key) {
  return absl::StrFormat("%.1f MiB", r.value(key, 0.0) / (1 << 20));
}

std::string Rss(const nlohmann::json& r) {
  return absl::StrFormat("RSS %s (anon %s, file %s)", MiB(r, "rss_bytes"), MiB(r, "rss_anon_bytes"),
                         MiB(r, "rss_file_bytes"));
}

std::string Describe(const nlohmann::json& r) {
  const std::string m = r["measurement"];
  auto lat = [&] {
    return absl::StrFormat("p50 %.3f ms  p99 %.3f ms  max %.3f ms  (n=%d)",
                           r["p50_ms"].get<double>(), r["p99_ms"].get<double>(),
                           r["max_ms"].get<double>(), r["count"].get<int>());
  };
  auto tiers = [&] {
    return absl::StrFormat("hot %.0f, warm %.0f, cold %.0f", r.value("stores_hot", 0.0),
                           r.value("stores_warm", 0.0), r.value("stores_cold", 0.0));
  };
  if (m == "setup") {
    return absl::StrFormat("filled in %.1f s; %s; disk %s; stores hold %s",
                           r["fill_s"].get<double>(), Rss(r), MiB(r, "disk_bytes"),
                           MiB(r, "memory_bytes"));
  }
  if (m == "shutdown") {
    return absl::StrFormat("SIGTERM to exit %.2f s; disk %s", r["shutdown_s"].get<double>(),
                           MiB(r, "disk_bytes"));
  }
  if (m == "restart") {
    return absl::StrFormat(
        "after %s: SERVING %.3f s, first Predict %.3f s (the call %.2f ms, %s); %s; %s",
        r["after"].get<std::string>(), r["ready_s"].get<double>(),
        r["first_predict_s"].get<double>(), r["first_predict_ms"].get<double>(),
        r["first_predict_tier"].get<std::string>(), Rss(r), tiers());
  }
  if (m == "first_predict") {
    return absl::StrFormat("after %s, found %s: %s; server load mean %.2f ms",
                           r["after"].get<std::string>(), r["tier"].get<std::string>(), lat(),
                           r["server_load_mean_ms"].get<double>());
  }
  if (m == "memory") {
    return absl::StrFormat(
        "every store %s (%.1f s): %s; stores hold %s; %s; "
        "evictions %.0f; disk %s",
        r["state"] == "read" ? "read once" : "loaded whole", r.at("touch_s").get<double>(), Rss(r),
        MiB(r, "memory_bytes"), tiers(), r.value("evictions_total", 0.0), MiB(r, "disk_bytes"));
  }
  if (m == "warm") {
    return absl::StrFormat(
        "%s; %s; heap per warm store: less hot %.1f KiB, growth %.1f KiB; GetStore "
        "memory_bytes of a warm store %.1f KiB",
        tiers(), Rss(r), r["anon_less_hot_per_warm_bytes"].get<double>() / 1024,
        r["anon_growth_per_warm_bytes"].get<double>() / 1024,
        r.contains("warm_memory_bytes") ? r["warm_memory_bytes"]["mean"].get<double>() / 1024 : 0);
  }
  if (m == "noop") {
    return absl::StrFormat("%s (%s stores): %s", r["rpc"].get<std::string>(),
                           r["selection"].get<std::string>(), lat());
  }
  if (m == "predict") {
    return absl::StrFormat("%s stores, found %s: %s; p99/Ping %.2f",
                           r["selection"].get<std::string>(), r["tier"].get<std::string>(), lat(),
                           r["p99_to_ping"].get<double>());
  }
  if (m == "adapt") {
    return absl::StrFormat("%s, %d examples, found %s: %s", r["when"].get<std::string>(),
                           r["examples"].get<int>(), r["tier"].get<std::string>(), lat());
  }
  return r.dump();
}

int Main(int argc, char** argv) {
  RunOptions run;
  WorkloadOptions workload;
  std::string json_path;
  bool keep = false;
  CLI::App app("adaptd residency benchmark (bench/RESULTS.md, \"Residency\")");
  app.add_option("--adaptd", run.adaptd, "The adaptd binary")->required()->check(CLI::ExistingFile);
  app.add_option("--stores", workload.stores, "Stores (N)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{2}, int64_t{10'000'000}));
  app.add_option("--tenants", workload.tenants, "Tenants the stores are spread over")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--dim", workload.dim, "Key dimension d")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--labels", workload.labels, "Labels per store")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--examples", workload.examples, "Labelled examples per store, one Adapt")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--seed", workload.seed, "Seed of keys and of store choice")
      ->capture_default_str();
  app.add_option("--budget-bytes", run.budget_bytes,
                 "--memory-budget-bytes of the budget setting [default: --budget-fraction of "
                 "what the filled stores hold]")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--budget-fraction", run.budget_fraction,
                 "The budget as a fraction of what the filled stores hold")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--calls", run.calls, "Timed calls per latency measurement")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--cold-sample", run.cold_sample,
                 "Stores whose first Predict after a restart is timed")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--adapt-sample", run.adapt_sample, "Adapts timed per tier")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--setup-threads", run.setup_threads, "Client threads filling the stores")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--fsync", run.fsync, "adaptd --fsync")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--timeout", run.ready_timeout_s,
                 "Seconds allowed for a start to SERVING, a stop, and any one call")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--budget-only", run.budget_only,
               "Fill and measure under --budget-bytes alone (for more stores than memory holds "
               "unbudgeted): no no-budget setting, and only --whole-sample stores loaded whole");
  app.add_option("--whole-sample", run.whole_sample,
                 "With --budget-only: stores loaded whole (ExportStore) before the latencies")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--server-arg", run.server_args, "An extra adaptd argument (repeatable)");
  app.add_option("--work-dir", run.work_dir,
                 "Holds data/ (adaptd's --data-dir) and adaptd.log [default: a new directory "
                 "under $TMPDIR, removed afterwards unless --keep]");
  app.add_flag("--keep", keep, "Keep the work directory");
  app.add_option("--json", json_path, "Also write the JSON lines to this file");
  CLI11_PARSE(app, argc, argv);

  const bool own_dir = run.work_dir.empty();
  if (own_dir) {
    std::string pattern = (std::filesystem::temp_directory_path() / "residency-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "error: cannot create a directory under $TMPDIR\n");
      return 1;
    }
    run.work_dir = pattern;
  }
  std::ofstream json_file;
  if (!json_path.empty()) json_file.open(json_path);
  std::vector<nlohmann::json> records;
  ResidencyRun bench(run, workload, [&](const nlohmann::json& r) {
    std::cout << r.dump() << std::endl;
    if (json_file) json_file << r.dump() << "\n" << std::flush;
    records.push_back(r);
  });
  const absl::Status status = bench.Run();
  std::fprintf(stderr, "\n%-10s %-14s %s\n", "mode", "measurement", "result");
  for (const nlohmann::json& r : records) {
    std::fprintf(stderr, "%-10s %-14s %s\n", r["mode"].get<std::string>().c_str(),
                 r["measurement"].get<std::string>().c_str(), Describe(r).c_str());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s (work directory %s)\n", status.ToString().c_str(),
                 run.work_dir.c_str());
    return 1;
  }
  if (own_dir && !keep) std::filesystem::remove_all(run.work_dir);
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
