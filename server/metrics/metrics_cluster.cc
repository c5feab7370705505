// Metrics of a member of a cluster on etcd (docs/CLUSTER_ETCD.md): the claims and releases of
// shards and the background restore's loads as EtcdCluster's hooks report them, and the
// shards held, the restores in flight and the lease's age sampled at scrape.
#include <utility>

#include "server/metrics/metrics.h"

namespace adaptd {
namespace {

constexpr const char* kClaimReasons[] = {"new", "restart", "failover", "move"};
constexpr const char* kReleaseReasons[] = {"move", "drain", "lost"};

}  // namespace

// Every series at zero, so a dashboard and alert rules see the families on each server.
void Metrics::AddClusterSeries() {
  for (const char* reason : kClaimReasons) cluster_claims_->Add({{"reason", reason}});
  for (const char* reason : kReleaseReasons) cluster_releases_->Add({{"reason", reason}});
  cluster_restore_seconds_->Add({}, RestoreBuckets());
  SetClusterGauges({});
}

void Metrics::RecordClusterClaim(const std::string& reason) {
  cluster_claims_->Add({{"reason", reason}}).Increment();
}

void Metrics::RecordClusterRelease(const std::string& reason) {
  cluster_releases_->Add({{"reason", reason}}).Increment();
}

void Metrics::RecordClusterRestore(double seconds) {
  cluster_restore_seconds_->Add({}, RestoreBuckets()).Observe(seconds);
}

void Metrics::SetClusterSource(const void* owner, std::function<ClusterSample()> source) {
  cluster_source_.Set(owner, std::move(source));
}

void Metrics::ClearClusterSource(const void* owner) {
  cluster_source_.Clear(owner, [this] { SetClusterGauges({}); });
}

void Metrics::RefreshCluster() {
  cluster_source_.Sample([this](const ClusterSample& sample) { SetClusterGauges(sample); });
}

void Metrics::SetClusterGauges(const ClusterSample& sample) {
  cluster_shards_->Add({{"state", "held"}}).Set(sample.shards_held);
  cluster_shards_->Add({{"state", "adopted"}}).Set(sample.shards_adopted);
  cluster_restores_in_flight_->Add({}).Set(sample.restores_in_flight);
  cluster_lease_age_->Add({}).Set(sample.lease_age_seconds);
  cluster_lease_ttl_->Add({}).Set(sample.lease_ttl_seconds);
  cluster_unheld_->Add({}).Set(sample.shards_without_holder);
}

}  // namespace adaptd
