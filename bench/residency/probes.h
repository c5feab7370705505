// What the residency bench reads from a running adaptd besides its own RPCs: the standard gRPC
// health check (grpc.health.v1.Health/Check, called as a generic method, so no health stubs
// are needed) and the Prometheus text endpoint, fetched over plain HTTP/1.1.
//
// Thread safety: the functions are thread-safe; the channel is gRPC's (thread-safe).
#ifndef ADAPTD_BENCH_RESIDENCY_PROBES_H_
#define ADAPTD_BENCH_RESIDENCY_PROBES_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace adaptd::bench {

// A plaintext channel to `address` that retries a refused connection within milliseconds
// (gRPC's default backoff starts at a second, which would hide how fast a server came up).
std::shared_ptr<grpc::Channel> FastRetryChannel(const std::string& address);

// One health check of the whole server (service ""): true when it answers SERVING, false for
// any other answer or none within `timeout`.
bool HealthServing(grpc::Channel& channel, absl::Duration timeout);

// The samples of the Prometheus endpoint at http://`host_port`/metrics: each sample line's
// name with its labels as written (e.g. `adaptd_stores{kind="faast",tier="hot"}`) to its value.
absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& host_port);

// The sum of every sample named `name` (any labels; `name` alone or `name{...}`).
double MetricSum(const std::map<std::string, double>& metrics, const std::string& name);
// The sum over samples named `name` whose labels contain `label` (e.g. `tier="hot"`).
double MetricSum(const std::map<std::string, double>& metrics, const std::string& name,
                 const std::string& label);

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_RESIDENCY_PROBES_H_
