// The residency bench's workload and its measuring tools: N faast stores (identity encoder,
// dimension d, L labels) spread over tenants, each filled as a user would (one Adapt of E
// labelled examples with random keys, then Compile, which answers once the version is
// published), one-row Predict requests, timed calls classified by the tier GetStore reported
// just before each, and latency summaries.
//
// Thread safety: FillStores runs its own threads over one thread-safe Client; a Workload is
// read-only after construction; LatencyByTier is used by one thread.
#ifndef ADAPTD_BENCH_RESIDENCY_WORKLOAD_H_
#define ADAPTD_BENCH_RESIDENCY_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.grpc.pb.h"
#include "client/cpp/client.h"
#include "nlohmann/json.hpp"

namespace adaptd::bench {

struct WorkloadOptions {
  int64_t stores = 1000;
  int tenants = 10;
  int dim = 256;
  int labels = 16;
  int examples = 64;  // per store, in one Adapt
  uint64_t seed = 1;
};

struct StoreName {
  std::string tenant, store;
};

class Workload {
 public:
  explicit Workload(const WorkloadOptions& options);

  const WorkloadOptions& options() const { return options_; }
  const std::vector<StoreName>& stores() const { return stores_; }
  // `options().examples` random keys with labels; every label appears when there are enough.
  adapt::v1::AdaptRequest AdaptRequestFor(const StoreName& name, uint64_t seed) const;
  // One random row, top-1.
  adapt::v1::PredictRequest PredictRequestFor(const StoreName& name, std::mt19937_64& rng) const;

 private:
  WorkloadOptions options_;
  std::vector<StoreName> stores_;
};

// Creates, adapts and compiles every store of `workload` on `threads` threads; the first
// failure is returned, naming the store.
absl::Status FillStores(adaptd::Client& client, const Workload& workload, int threads);

// "hot", "warm", "cold" (or the enum's name for a tier this bench does not know yet).
std::string TierName(adapt::v1::Tier tier);

// Nearest-rank summary of latencies in milliseconds.
struct Latency {
  int64_t count = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
};
Latency Summarize(std::vector<double> ms);
nlohmann::json LatencyJson(const Latency& latency);

// Latencies (ms) collected per tier.
using LatencyByTier = std::map<std::string, std::vector<double>>;

// GetStore of `name` (it never loads the store); the call's milliseconds in *ms when given.
absl::StatusOr<adapt::v1::StoreInfo> GetStore(adapt::v1::Adaptation::Stub& stub,
                                              const StoreName& name, double* ms = nullptr);
// The tier GetStore reports for `name`.
absl::StatusOr<std::string> TierOf(adapt::v1::Adaptation::Stub& stub, const StoreName& name,
                                   double* ms = nullptr);

// Times one call made by `call` (which fills the context's deadline from `timeout_s`);
// returns milliseconds, or the call's error naming `what` and the store.
absl::StatusOr<double> TimeCall(const char* what, const StoreName& name, double timeout_s,
                                const std::function<grpc::Status(grpc::ClientContext&)>& call);

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_RESIDENCY_WORKLOAD_H_
