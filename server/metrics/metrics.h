// Metrics: the server's Prometheus series (prometheus-cpp), served on their own port by an
// Exposer that main owns. Every method is thread-safe. Names follow Prometheus conventions:
// an `adaptd_` prefix, `_total` counters, `_seconds` durations.
#ifndef ADAPTD_SERVER_METRICS_METRICS_H_
#define ADAPTD_SERVER_METRICS_METRICS_H_

#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace adaptd {

class Metrics {
 public:
  Metrics();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One finished RPC: its method (e.g. "Predict"), its status code name and its duration.
  void RecordRequest(const std::string& method, const std::string& code, double seconds);
  void AddExamples(const std::string& kind, double count);
  void RecordCompile(bool ok, bool automatic, double seconds);
  void AddStores(const std::string& kind, double delta);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Counter>& examples_;
  prometheus::Family<prometheus::Counter>& compiles_;
  prometheus::Family<prometheus::Histogram>& compile_seconds_;
  prometheus::Family<prometheus::Gauge>& stores_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_METRICS_METRICS_H_
