// The closed-loop load driver of `adaptctl bench`: `concurrency` threads each issue one call
// after another for a fixed duration, and the latencies of all calls are summarised.
// RunLoad blocks until every thread stopped; `call` must be safe to run from every thread.
#ifndef ADAPTD_CLIENT_ADAPTCTL_BENCH_LOAD_H_
#define ADAPTD_CLIENT_ADAPTCTL_BENCH_LOAD_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/time/time.h"

namespace adaptctl {

struct LoadSummary {
  uint64_t calls = 0;                         // calls that finished (ok or not)
  uint64_t errors = 0;                        // calls that returned false
  double seconds = 0;                         // wall time of the run
  double throughput = 0;                      // successful calls per second
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;  // over successful calls
};

// One call: `thread` is the caller's index, `n` counts its calls from 0. True on success.
using LoadCall = std::function<bool(int thread, uint64_t n)>;

LoadSummary RunLoad(int concurrency, absl::Duration duration, const LoadCall& call);

// The q-quantile (0 ≤ q ≤ 1) of `values` (sorted in place), nearest rank; 0 when empty.
double Quantile(std::vector<double>& values, double q);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_BENCH_LOAD_H_
