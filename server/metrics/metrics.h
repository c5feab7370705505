// Metrics: the server's Prometheus series (prometheus-cpp), served on their own port by an
// Exposer that AdaptdServer owns; register collectable() with it. Every method is thread-safe.
// Names follow Prometheus conventions: an `adaptd_` prefix, `_total` counters, `_seconds`
// durations, `_bytes` sizes. deploy/README.md ("Metric reference") documents every family.
//
// Per-tenant series are bounded by TenantLabels (tenant_labels.h): tenants on the allow-list
// or among the top K by traffic get their own label value, the rest are summed under "other".
// Store gauges (memory, kind statistics) are aggregated at scrape time from the last
// StoreInfo seen for each live store.
#ifndef ADAPTD_SERVER_METRICS_METRICS_H_
#define ADAPTD_SERVER_METRICS_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/adapt.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/metrics/sampled_source.h"
#include "server/metrics/tenant_labels.h"
#include "server/stores/store_kind.h"

namespace adaptd {

// Which tenants get their own series.
struct TenantPolicy {
  std::vector<std::string> allow_list;
  size_t top_k = TenantLabels::kDefaultTopK;
};

class Metrics {
 public:
  explicit Metrics(TenantPolicy policy = {});
  ~Metrics();

  // The series; collectable() is what an Exposer should serve: it refreshes the scrape-time
  // gauges (queue depth, store aggregates) and then collects the registry.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  std::shared_ptr<prometheus::Collectable> collectable() const { return collectable_; }

  // --- requests and queueing ------------------------------------------------------------
  // One finished call: its method (e.g. "Predict"), its status code name, the transport it came
  // over ("grpc" or "http") and its duration.
  void RecordRequest(const std::string& method, const std::string& code,
                     const std::string& transport, double seconds);
  // Time a request waited in the request queue before a worker started it.
  void RecordQueueWait(double seconds);
  // Sampled at each scrape into adaptd_queue_depth; nullptr stops sampling. The source must
  // stay valid until replaced.
  void SetQueueDepthSource(std::function<size_t()> source);
  // Items one request carries: inputs of a Predict, examples of one Adapt/Forget message.
  void RecordBatch(const std::string& method, double size);
  // Durable-log fsync latency (the write-ahead log records it).
  void RecordLogFsync(double seconds);
  // One checkpoint: stores whose state it wrote, and stores it could not write.
  void RecordCheckpoint(uint64_t written, uint64_t failed);

  // --- the durable log in etcd (docs/DURABLE_LOG.md) -------------------------------------
  // The series exist from the start at zero; only a server with --etcd-endpoints moves them.
  // One group transaction to etcd answered: its seconds and the records it carried.
  void RecordDurableLogCommit(double seconds, uint64_t records);
  // One object written to object storage: `what` "payload", "state" or "readout", its bytes
  // (counted when `ok`), and whether it was written.
  void RecordDurableLogObject(const std::string& what, uint64_t bytes, bool ok);
  // A store rebuilt from its stored state and its log, in `seconds`.
  void RecordDurableLogRestore(double seconds);
  // An append refused because another server holds the claim.
  void RecordDurableLogFenceFailure();
  // A failed call to `service`: "etcd" or "s3".
  void RecordDurableLogError(const std::string& service);
  // adaptd_durable_log_snapshot_lag_seconds is sampled from `source` at each scrape until
  // ClearSnapshotLagSource(owner); `source` must stay valid until then. Replaces a source set
  // before.
  void SetSnapshotLagSource(const void* owner, std::function<double()> source);
  // Stops sampling (the gauge reads 0) if `owner` set the source; waits out a scrape calling it.
  void ClearSnapshotLagSource(const void* owner);

  // --- the cluster on etcd (docs/CLUSTER_ETCD.md) -----------------------------------------
  // The series exist from the start at zero; only a member of a cluster on etcd moves them.
  // A shard this member claimed, by `reason`: "new", "restart", "failover" or "move".
  void RecordClusterClaim(const std::string& reason);
  // A shard this member stopped holding, by `reason`: "move", "drain" or "lost".
  void RecordClusterRelease(const std::string& reason);
  // A store of an adopted shard's hot list loaded by the background restore, in `seconds`.
  void RecordClusterRestore(double seconds);
  // What a member reports at each scrape.
  struct ClusterSample {
    double shards_held = 0;     // claimed by this member, as etcd records it
    double shards_adopted = 0;  // of those, opened by the engine
    double restores_in_flight = 0;
    double lease_age_seconds = 0;  // since etcd last acknowledged a keep-alive of its lease
    double lease_ttl_seconds = 0;
    double shards_without_holder = 0;  // in the claims as this member sees them
  };
  // The adaptd_cluster_* gauges are sampled from `source` at each scrape until
  // ClearClusterSource(owner); `source` must stay valid until then. Replaces a source set
  // before.
  void SetClusterSource(const void* owner, std::function<ClusterSample()> source);
  // Stops sampling (the gauges read 0) if `owner` set the source; waits out a scrape calling it.
  void ClearClusterSource(const void* owner);

  // --- stores and examples --------------------------------------------------------------
  void AddExamples(const std::string& kind, double count);
  void RecordCompile(bool ok, bool automatic, double seconds);
  // A store of `kind` moved between tiers (TIER_UNSPECIFIED: it arrived, or it left);
  // `warm_bytes`: what its warm form holds when `from` or `to` is warm (adaptd_memory_bytes
  // counts warm stores by these, hot ones by ObserveStore).
  void MoveStore(const std::string& kind, adapt::v1::Tier from, adapt::v1::Tier to,
                 uint64_t warm_bytes = 0);
  // Residency (docs/RESIDENCY.md): a store read back from the state database, one evicted,
  // and the bytes loaded stores hold against the budget.
  void RecordLoad(const std::string& kind, double seconds);
  void RecordEviction(const std::string& kind);
  // Cluster (docs/CLUSTER_ETCD.md): a call passed to its shard's holder, by method and the
  // holder's status code (adaptd_forwarded_calls_total).
  void RecordForwarded(const std::string& method, const std::string& code);
  // Texts an encoder cut to its max_tokens before encoding (adaptd_encoder_truncated_texts_total,
  // by encoder); `texts` 0 makes the encoder's series exist at zero.
  void RecordTruncatedTexts(const std::string& encoder, uint64_t texts);
  // adaptd_build_info: one series, value 1, whose labels describe the build and the BLAS
  // kernels in use (version, blas, blas_core, blas_core_source). Replaces an earlier call's.
  void SetBuildInfo(const std::map<std::string, std::string>& labels);
  void SetResidentBytes(double bytes);
  void SetMemoryBudget(double bytes);
  // A successful compile of a store of `kind`: the gauges its kind sets at a compile
  // (StoreKind::compile_gauges, e.g. adaptd_faast_* at the last compile).
  void RecordCompileGauges(adapt::v1::StoreKind kind, const adapt::v1::CompileResponse& response);
  // The latest description of a live store, keyed by its owner: the entry disappears when the
  // owner expires (at the next scrape, or when ObserveStore has seen as many new stores as
  // there were entries, whichever comes first, so a server nobody scrapes does not keep them).
  // Memory and kind statistics are summed over these at scrape time.
  void ObserveStore(const std::shared_ptr<const void>& owner, const adapt::v1::StoreInfo& info);
  // Updates the entry of `key` (the owner's address) if one exists.
  void RefreshStore(const void* key, const adapt::v1::StoreInfo& info);
  // Drops the entry of `key` at once (a deleted store).
  void ForgetStore(const void* key);
  // Entries held now, live or not yet swept (for tests).
  size_t observed_stores() const;

  // --- per tenant (bounded) -------------------------------------------------------------
  // Inputs predicted by one Predict.
  void RecordPredict(const std::string& tenant, const std::string& kind, double inputs);
  // One committed Adapt: examples applied and their prequential evaluation. `output` is
  // "labels", "vector" or "next".
  void RecordAdapt(const std::string& tenant, const std::string& kind, const std::string& output,
                   double examples, double evaluated, double correct, double loss_sum);
  // One committed Feedback (docs/FEEDBACK.md): items applied and skipped as resent; of the
  // applied on a label store, how many were evaluated (all) and how many served the true
  // label; and the sum of their serve-to-feedback delays.
  void RecordFeedback(const std::string& tenant, const std::string& kind, double applied,
                      double duplicates, double served_evaluated, double served_correct,
                      double delay_seconds_sum);
  // The bytes `tenant`'s remembered predictions hold changed by `delta`: the server-wide
  // gauge at once, the per-tenant one (bounded) at the next scrape.
  void AddRememberedBytes(const std::string& tenant, double delta);
  // Remembered predictions of `tenant` dropped, by reason: the window's count, its age, or
  // memory pressure (adaptd_remembered_predictions_dropped_total).
  void RecordRememberedDrops(const std::string& tenant, double window, double age, double pressure);

 private:
  class Collector;
  struct StoreEntry {
    std::weak_ptr<const void> owner;
    adapt::v1::StoreInfo info;
  };

  // The constructor's steps: the families by type, then the series that exist from the start.
  void RegisterCounters();
  void RegisterGauges();
  void RegisterHistograms();
  void AddUnlabelledSeries();
  void RegisterKindGauges();
  // The durable log's series, at zero (metrics_durable_log.cc).
  void AddDurableLogSeries();
  // The cluster on etcd's families and their series, at zero (metrics_cluster.cc).
  void AddClusterSeries();
  // One store rebuilt (the durable log's restores, the cluster's background restores).
  static prometheus::Histogram::BucketBoundaries RestoreBuckets();

  void Refresh();
  // adaptd_durable_log_snapshot_lag_seconds from its source, at scrape.
  void RefreshSnapshotLag();
  // The adaptd_cluster_* gauges from their source, at scrape.
  void RefreshCluster();
  void SetClusterGauges(const ClusterSample& sample);
  // adaptd_tenant_remembered_prediction_bytes from the per-tenant sums, at scrape.
  void RefreshTenantRemembered() ABSL_LOCKS_EXCLUDED(tenant_mu_);
  // The label `tenant` is counted under, removing an evicted tenant's series.
  std::string TenantLabel(const std::string& tenant, double traffic)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tenant_mu_);
  prometheus::Counter& TenantCounter(prometheus::Family<prometheus::Counter>& family,
                                     const prometheus::Labels& labels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tenant_mu_);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<prometheus::Collectable> collectable_;

  // The families, registered by the constructor and never replaced.
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* latency_ = nullptr;
  prometheus::Family<prometheus::Gauge>* queue_depth_ = nullptr;
  prometheus::Family<prometheus::Histogram>* queue_time_ = nullptr;
  prometheus::Family<prometheus::Histogram>* batch_size_ = nullptr;
  prometheus::Family<prometheus::Histogram>* fsync_ = nullptr;
  prometheus::Family<prometheus::Counter>* checkpoint_stores_ = nullptr;
  prometheus::Family<prometheus::Counter>* loads_ = nullptr;
  prometheus::Family<prometheus::Histogram>* load_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* evictions_ = nullptr;
  prometheus::Family<prometheus::Counter>* forwarded_ = nullptr;
  prometheus::Family<prometheus::Counter>* truncated_texts_ = nullptr;
  prometheus::Family<prometheus::Gauge>* build_info_ = nullptr;
  prometheus::Gauge* build_info_series_ ABSL_GUARDED_BY(build_info_mu_) = nullptr;
  absl::Mutex build_info_mu_;
  prometheus::Family<prometheus::Gauge>* resident_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* memory_budget_ = nullptr;
  prometheus::Family<prometheus::Counter>* examples_ = nullptr;
  prometheus::Family<prometheus::Counter>* compiles_ = nullptr;
  prometheus::Family<prometheus::Histogram>* compile_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* stores_ = nullptr;
  prometheus::Family<prometheus::Gauge>* memory_ = nullptr;
  // The gauges store kinds contribute (StoreKind::gauges), one family each.
  struct KindGaugeFamily {
    adapt::v1::StoreKind kind;
    const KindGauge* gauge;
    prometheus::Family<prometheus::Gauge>* family;
  };
  std::vector<KindGaugeFamily> kind_gauges_;
  // The gauges store kinds set at each compile (StoreKind::compile_gauges), one family each.
  struct CompileGaugeFamily {
    adapt::v1::StoreKind kind;
    const CompileGauge* gauge;
    prometheus::Family<prometheus::Gauge>* family;
  };
  std::vector<CompileGaugeFamily> compile_gauges_;
  // The registered kinds' names (adaptd_memory_bytes has a series for each).
  std::vector<std::string> kind_names_;
  prometheus::Family<prometheus::Counter>* tenant_examples_ = nullptr;
  prometheus::Family<prometheus::Counter>* tenant_predictions_ = nullptr;
  prometheus::Family<prometheus::Counter>* prequential_evaluated_ = nullptr;
  prometheus::Family<prometheus::Counter>* prequential_correct_ = nullptr;
  prometheus::Family<prometheus::Counter>* prequential_loss_ = nullptr;
  prometheus::Family<prometheus::Counter>* feedback_items_ = nullptr;
  prometheus::Family<prometheus::Counter>* served_evaluated_ = nullptr;
  prometheus::Family<prometheus::Counter>* served_correct_ = nullptr;
  prometheus::Family<prometheus::Counter>* feedback_delay_ = nullptr;
  prometheus::Family<prometheus::Gauge>* remembered_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* tenant_remembered_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* remembered_dropped_ = nullptr;
  prometheus::Family<prometheus::Histogram>* durable_commit_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_records_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_objects_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_object_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_restores_ = nullptr;
  prometheus::Family<prometheus::Histogram>* durable_restore_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_fence_failures_ = nullptr;
  prometheus::Family<prometheus::Counter>* durable_errors_ = nullptr;
  prometheus::Family<prometheus::Gauge>* snapshot_lag_ = nullptr;
  prometheus::Family<prometheus::Gauge>* cluster_shards_ = nullptr;
  prometheus::Family<prometheus::Counter>* cluster_claims_ = nullptr;
  prometheus::Family<prometheus::Counter>* cluster_releases_ = nullptr;
  prometheus::Family<prometheus::Gauge>* cluster_restores_in_flight_ = nullptr;
  prometheus::Family<prometheus::Histogram>* cluster_restore_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* cluster_lease_age_ = nullptr;
  prometheus::Family<prometheus::Gauge>* cluster_lease_ttl_ = nullptr;
  prometheus::Family<prometheus::Gauge>* cluster_unheld_ = nullptr;

  absl::Mutex tenant_mu_;
  TenantLabels tenants_ ABSL_GUARDED_BY(tenant_mu_);
  // What each tenant's remembered predictions hold (its raw name; none when 0), and the
  // labels the per-tenant gauge had at the last scrape.
  std::map<std::string, int64_t> remembered_by_tenant_ ABSL_GUARDED_BY(tenant_mu_);
  std::vector<std::string> remembered_labels_ ABSL_GUARDED_BY(tenant_mu_);
  // The counters created for each tenant label, so an evicted tenant's can be removed.
  std::map<std::string,
           std::vector<std::pair<prometheus::Family<prometheus::Counter>*, prometheus::Counter*>>>
      tenant_series_ ABSL_GUARDED_BY(tenant_mu_);

  void SweepExpiredLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(refresh_mu_);

  // Apart from refresh_mu_: the source takes the durability's locks, whose holders may
  // report stores to the metrics.
  SampledSource<double> snapshot_lag_source_;

  // Apart from the others: the source takes the cluster member's locks.
  SampledSource<ClusterSample> cluster_source_;

  mutable absl::Mutex refresh_mu_;
  // What warm stores hold, by kind (MoveStore).
  std::map<std::string, int64_t> warm_bytes_ ABSL_GUARDED_BY(refresh_mu_);
  std::function<size_t()> queue_depth_source_ ABSL_GUARDED_BY(refresh_mu_);
  std::map<const void*, StoreEntry> stores_seen_ ABSL_GUARDED_BY(refresh_mu_);
  size_t swept_size_ ABSL_GUARDED_BY(refresh_mu_) = 0;  // entries after the last sweep
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_METRICS_METRICS_H_
