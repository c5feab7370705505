#include "client/adaptctl/bench_load.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/time/clock.h"

namespace adaptctl {

double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, double(values.size()))) - 1;
  return values[index];
}

LoadSummary RunLoad(int concurrency, absl::Duration duration, const LoadCall& call) {
  struct PerThread {
    std::vector<double> latencies_ms;
    uint64_t calls = 0, errors = 0;
  };
  std::vector<PerThread> results(std::max(1, concurrency));
  const absl::Time start = absl::Now();
  const absl::Time end = start + duration;
  std::vector<std::thread> threads;
  for (int t = 0; t < static_cast<int>(results.size()); ++t) {
    threads.emplace_back([t, end, &call, &results] {
      PerThread& mine = results[t];
      for (uint64_t n = 0;; ++n) {
        const absl::Time before = absl::Now();
        if (before >= end) break;
        const bool ok = call(t, n);
        ++mine.calls;
        if (ok) {
          mine.latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - before));
        } else {
          ++mine.errors;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  LoadSummary summary;
  summary.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<double> latencies;
  for (PerThread& r : results) {
    summary.calls += r.calls;
    summary.errors += r.errors;
    latencies.insert(latencies.end(), r.latencies_ms.begin(), r.latencies_ms.end());
  }
  summary.throughput =
      summary.seconds > 0 ? static_cast<double>(latencies.size()) / summary.seconds : 0;
  summary.p50_ms = Quantile(latencies, 0.50);
  summary.p90_ms = Quantile(latencies, 0.90);
  summary.p99_ms = Quantile(latencies, 0.99);
  return summary;
}

}  // namespace adaptctl
