#include "server/metrics/metrics.h"

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace adaptd {
namespace {

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("adaptd_requests_total")
                    .Help("Finished RPCs by method and gRPC status code")
                    .Register(*registry_)),
      latency_(prometheus::BuildHistogram()
                   .Name("adaptd_request_duration_seconds")
                   .Help("RPC latency by method, from arrival to the final status")
                   .Register(*registry_)),
      examples_(prometheus::BuildCounter()
                    .Name("adaptd_examples_ingested_total")
                    .Help("Examples committed into stores, by store kind")
                    .Register(*registry_)),
      compiles_(prometheus::BuildCounter()
                    .Name("adaptd_compiles_total")
                    .Help("Store compiles by trigger and result")
                    .Register(*registry_)),
      compile_seconds_(prometheus::BuildHistogram()
                           .Name("adaptd_compile_duration_seconds")
                           .Help("Duration of store compiles")
                           .Register(*registry_)),
      stores_(prometheus::BuildGauge()
                  .Name("adaptd_stores")
                  .Help("Stores hosted, by kind")
                  .Register(*registry_)) {}

void Metrics::RecordRequest(const std::string& method, const std::string& code, double seconds) {
  requests_.Add({{"method", method}, {"code", code}}).Increment();
  latency_.Add({{"method", method}}, LatencyBuckets()).Observe(seconds);
}

void Metrics::AddExamples(const std::string& kind, double count) {
  examples_.Add({{"kind", kind}}).Increment(count);
}

void Metrics::RecordCompile(bool ok, bool automatic, double seconds) {
  compiles_.Add({{"trigger", automatic ? "auto" : "request"}, {"result", ok ? "ok" : "error"}})
      .Increment();
  if (ok) compile_seconds_.Add({}, LatencyBuckets()).Observe(seconds);
}

void Metrics::AddStores(const std::string& kind, double delta) {
  stores_.Add({{"kind", kind}}).Increment(delta);
}

}  // namespace adaptd
