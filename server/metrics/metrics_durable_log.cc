// Metrics of the durable log in etcd with states and payloads in object storage
// (docs/DURABLE_LOG.md): what EtcdDurability's hooks report, and the snapshot lag at scrape.
#include <utility>

#include "server/metrics/metrics.h"

namespace adaptd {
namespace {

using prometheus::Histogram;

// One group transaction: a round trip to the etcd leader and its disk, up to the commit
// timeout of 30 s.
Histogram::BucketBoundaries CommitBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

constexpr const char* kObjectKinds[] = {"payload", "state", "readout"};
constexpr const char* kServices[] = {"etcd", "s3"};

}  // namespace

// One store rebuilt: its state fetched from object storage and its log replayed.
Histogram::BucketBoundaries Metrics::RestoreBuckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

// Every series at zero, so a dashboard and alert rules see the families on each server.
void Metrics::AddDurableLogSeries() {
  durable_commit_seconds_->Add({}, CommitBuckets());
  durable_restore_seconds_->Add({}, RestoreBuckets());
  durable_records_->Add({});
  durable_restores_->Add({});
  durable_fence_failures_->Add({});
  for (const char* what : kObjectKinds) {
    durable_objects_->Add({{"what", what}, {"result", "ok"}});
    durable_objects_->Add({{"what", what}, {"result", "error"}});
    durable_object_bytes_->Add({{"what", what}});
  }
  for (const char* service : kServices) durable_errors_->Add({{"service", service}});
  snapshot_lag_->Add({});
}

void Metrics::RecordDurableLogCommit(double seconds, uint64_t records) {
  durable_commit_seconds_->Add({}, CommitBuckets()).Observe(seconds);
  durable_records_->Add({}).Increment(static_cast<double>(records));
}

void Metrics::RecordDurableLogObject(const std::string& what, uint64_t bytes, bool ok) {
  durable_objects_->Add({{"what", what}, {"result", ok ? "ok" : "error"}}).Increment();
  if (ok) durable_object_bytes_->Add({{"what", what}}).Increment(static_cast<double>(bytes));
}

void Metrics::RecordDurableLogRestore(double seconds) {
  durable_restores_->Add({}).Increment();
  durable_restore_seconds_->Add({}, RestoreBuckets()).Observe(seconds);
}

void Metrics::RecordDurableLogFenceFailure() { durable_fence_failures_->Add({}).Increment(); }

void Metrics::RecordDurableLogError(const std::string& service) {
  durable_errors_->Add({{"service", service}}).Increment();
}

void Metrics::SetSnapshotLagSource(const void* owner, std::function<double()> source) {
  snapshot_lag_source_.Set(owner, std::move(source));
}

void Metrics::ClearSnapshotLagSource(const void* owner) {
  snapshot_lag_source_.Clear(owner, [this] { snapshot_lag_->Add({}).Set(0); });
}

void Metrics::RefreshSnapshotLag() {
  snapshot_lag_source_.Sample([this](double lag) { snapshot_lag_->Add({}).Set(lag); });
}

}  // namespace adaptd
