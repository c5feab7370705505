#include "server/metrics/metrics.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <limits>

namespace adaptd {
namespace {

using prometheus::Histogram;

Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

Histogram::BucketBoundaries FsyncBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
          0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
}

Histogram::BucketBoundaries BatchBuckets() {
  Histogram::BucketBoundaries b;
  for (double v = 1; v <= 16384; v *= 2) b.push_back(v);
  return b;
}

const char* AggregateName(KindGauge::Aggregate a) {
  switch (a) {
    case KindGauge::Aggregate::kSum:
      return "sum";
    case KindGauge::Aggregate::kMean:
      return "mean";
    case KindGauge::Aggregate::kMax:
      return "max";
    case KindGauge::Aggregate::kMin:
      return "min";
  }
  return "";
}

// One kind gauge's running aggregates over the stores seen at a scrape.
struct GaugeTotals {
  int stores = 0;
  double sum = 0;
  double max = -std::numeric_limits<double>::infinity();
  double min = std::numeric_limits<double>::infinity();

  void Add(double v) {
    ++stores;
    sum += v;
    max = std::max(max, v);
    min = std::min(min, v);
  }
  double Get(KindGauge::Aggregate a) const {
    switch (a) {
      case KindGauge::Aggregate::kSum:
        return sum;
      case KindGauge::Aggregate::kMean:
        return sum / stores;
      case KindGauge::Aggregate::kMax:
        return max;
      case KindGauge::Aggregate::kMin:
        return min;
    }
    return 0;
  }
};

// A gauge with the single aggregate kSum has no label; any other set is labelled.
prometheus::Labels AggregateLabels(const KindGauge& gauge, KindGauge::Aggregate a) {
  if (gauge.aggregates.size() == 1 && a == KindGauge::Aggregate::kSum) return {};
  return {{"aggregate", AggregateName(a)}};
}

template <typename T>
void RemoveIfPresent(prometheus::Family<T>& family, const prometheus::Labels& labels) {
  if (family.Has(labels)) family.Remove(&family.Add(labels));
}

// One family of the fixed set: the member that holds it, its name and its help.
template <typename T>
struct FamilySpec {
  prometheus::Family<T>* Metrics::*member;
  const char* name;
  const char* help;
};

// Registers `specs` in order; `build` is prometheus::BuildCounter, BuildGauge or BuildHistogram.
template <typename T, typename Build>
void RegisterFamilies(Metrics* metrics, prometheus::Registry& registry, Build build,
                      std::initializer_list<FamilySpec<T>> specs) {
  for (const FamilySpec<T>& spec : specs) {
    metrics->*spec.member = &build().Name(spec.name).Help(spec.help).Register(registry);
  }
}

}  // namespace

// What the Exposer holds (weakly): refreshes the scrape-time gauges, then collects. Detached
// when the Metrics it refreshes is destroyed.
class Metrics::Collector : public prometheus::Collectable {
 public:
  Collector(Metrics* metrics, std::shared_ptr<prometheus::Registry> registry)
      : metrics_(metrics), registry_(std::move(registry)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::MutexLock lock(&mu_);
    if (metrics_ == nullptr) return {};
    metrics_->Refresh();
    metrics_->RefreshSnapshotLag();
    metrics_->RefreshCluster();
    metrics_->RefreshTenantRemembered();
    return registry_->Collect();
  }

  void Detach() {
    absl::MutexLock lock(&mu_);
    metrics_ = nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  Metrics* metrics_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<prometheus::Registry> registry_;
};

Metrics::Metrics(TenantPolicy policy)
    : registry_(std::make_shared<prometheus::Registry>()),
      collectable_(std::make_shared<Collector>(this, registry_)),
      tenants_(policy.allow_list, policy.top_k) {
  RegisterCounters();
  RegisterGauges();
  RegisterHistograms();
  AddUnlabelledSeries();
  AddDurableLogSeries();
  AddClusterSeries();
  RegisterKindGauges();
}

// The counters, in the order a scrape lists them.
void Metrics::RegisterCounters() {
  RegisterFamilies<prometheus::Counter>(
      this, *registry_, prometheus::BuildCounter,
      {
          {&Metrics::requests_, "adaptd_requests_total",
           "Finished calls by method, gRPC status code and transport (grpc, http)"},
          {&Metrics::checkpoint_stores_, "adaptd_checkpoint_stores_total",
           "Store states written by checkpoints (result=\"written\"), and those a checkpoint could "
           "not write (result=\"failed\")"},
          {&Metrics::loads_, "adaptd_store_loads_total",
           "Stores read back from the state database by a call that needed them"},
          {&Metrics::evictions_, "adaptd_store_evictions_total",
           "Stores evicted from memory to keep within the memory budget"},
          {&Metrics::forwarded_, "adaptd_forwarded_calls_total",
           "Calls passed to the cluster member that owns their store, by method and the owner's "
           "status code"},
          {&Metrics::truncated_texts_, "adaptd_encoder_truncated_texts_total",
           "Texts an onnx text encoder cut to its max_tokens before encoding, by encoder"},
          {&Metrics::examples_, "adaptd_examples_ingested_total",
           "Examples committed into stores, by store kind"},
          {&Metrics::compiles_, "adaptd_compiles_total", "Store compiles by trigger and result"},
          {&Metrics::tenant_examples_, "adaptd_tenant_examples_ingested_total",
           "Examples committed, by tenant (bounded) and store kind"},
          {&Metrics::tenant_predictions_, "adaptd_tenant_predictions_total",
           "Inputs predicted, by tenant (bounded) and store kind"},
          {&Metrics::prequential_evaluated_, "adaptd_prequential_evaluated_total",
           "Adapted examples evaluated before their update"},
          {&Metrics::prequential_correct_, "adaptd_prequential_correct_total",
           "Label stores: evaluated examples whose top-1 label was right before their update"},
          {&Metrics::prequential_loss_, "adaptd_prequential_loss_total",
           "Sum of prequential losses (labels: misses; vectors: squared error / M)"},
          {&Metrics::feedback_items_, "adaptd_feedback_items_total",
           "Feedback items, by tenant (bounded), store kind and result (applied, duplicate)"},
          {&Metrics::served_evaluated_, "adaptd_served_predictions_evaluated_total",
           "Label stores: served predictions whose true label feedback revealed"},
          {&Metrics::served_correct_, "adaptd_served_predictions_correct_total",
           "Label stores: of those, predictions whose served top-1 label was the true one"},
          {&Metrics::feedback_delay_, "adaptd_feedback_delay_seconds_total",
           "Sum of the seconds from each applied feedback item's prediction to its feedback"},
          {&Metrics::remembered_dropped_, "adaptd_remembered_predictions_dropped_total",
           "Predictions remembered for feedback and dropped, by tenant (bounded) and reason "
           "(window: a newer one took the place; age: older than the window; pressure: the "
           "memory budget or the tenant's quota)"},
          {&Metrics::durable_records_, "adaptd_durable_log_committed_records_total",
           "Records committed to the durable log in etcd"},
          {&Metrics::durable_objects_, "adaptd_durable_log_objects_total",
           "Objects the durable log wrote to object storage, by what (payload, state, readout) and "
           "result (ok, error)"},
          {&Metrics::durable_object_bytes_, "adaptd_durable_log_object_bytes_total",
           "Bytes of the objects the durable log wrote to object storage, by what"},
          {&Metrics::durable_restores_, "adaptd_durable_log_restores_total",
           "Stores rebuilt from their stored state and the durable log"},
          {&Metrics::durable_fence_failures_, "adaptd_durable_log_fence_failures_total",
           "Appends to the durable log refused because another server holds its claim"},
          {&Metrics::durable_errors_, "adaptd_durable_log_errors_total",
           "Failed calls of the durable log, by service (etcd, s3)"},
          {&Metrics::cluster_claims_, "adaptd_cluster_claims_total",
           "Shards this member of a cluster on etcd claimed, by reason (new: unheld at the "
           "start; restart: its own, kept through a restart; failover: its holder's lease "
           "lapsed; move: its holder released it)"},
          {&Metrics::cluster_releases_, "adaptd_cluster_releases_total",
           "Shards this member of a cluster on etcd stopped holding, by reason (move: to their "
           "desired owner; drain: this member drains; lost: its lease lapsed)"},
      });
}

// The gauges, in the order a scrape lists them (the kinds' gauges follow).
void Metrics::RegisterGauges() {
  RegisterFamilies<prometheus::Gauge>(
      this, *registry_, prometheus::BuildGauge,
      {
          {&Metrics::queue_depth_, "adaptd_queue_depth",
           "Request work items waiting for a worker, sampled at scrape"},
          {&Metrics::build_info_, "adaptd_build_info",
           "1, labelled with the server's version, its BLAS library, the BLAS kernels in use "
           "(blas_core) and who chose them (blas_core_source: cpu, library, flag or environment; "
           "docs/BLAS.md)"},
          {&Metrics::resident_bytes_, "adaptd_resident_bytes",
           "Memory loaded stores hold (with a memory budget)"},
          {&Metrics::memory_budget_, "adaptd_memory_budget_bytes",
           "The memory budget (--memory-budget-bytes); absent when unlimited"},
          {&Metrics::stores_, "adaptd_stores",
           "Stores hosted, by kind and tier (hot: in memory; cold: in the state database only)"},
          {&Metrics::memory_, "adaptd_memory_bytes",
           "Memory held by hot and warm stores (sum of StoreInfo.memory_bytes), by kind"},
          {&Metrics::remembered_bytes_, "adaptd_remembered_prediction_bytes",
           "Memory the predictions remembered for feedback hold (docs/FEEDBACK.md)"},
          {&Metrics::tenant_remembered_bytes_, "adaptd_tenant_remembered_prediction_bytes",
           "Memory the predictions remembered for feedback hold, by tenant (bounded), at scrape"},
          {&Metrics::snapshot_lag_, "adaptd_durable_log_snapshot_lag_seconds",
           "Age of the oldest change in the durable log not yet in object storage, at scrape (0 "
           "when every store's state is there)"},
          {&Metrics::cluster_shards_, "adaptd_cluster_shards",
           "Shards of the cluster on etcd this member holds (state=held, as etcd records its "
           "claims) and has opened (state=adopted), at scrape"},
          {&Metrics::cluster_restores_in_flight_, "adaptd_cluster_restores_in_flight",
           "Stores named by the hot lists of adopted shards whose background load is queued or "
           "under way, at scrape"},
          {&Metrics::cluster_lease_age_, "adaptd_cluster_lease_age_seconds",
           "Seconds since etcd last acknowledged a keep-alive of this member's lease, at scrape "
           "(the member stops once it reaches the TTL)"},
          {&Metrics::cluster_lease_ttl_, "adaptd_cluster_lease_ttl_seconds",
           "The TTL of this member's lease in etcd (0 outside a cluster on etcd)"},
          {&Metrics::cluster_unheld_, "adaptd_cluster_shards_without_holder",
           "Shards of the cluster on etcd no member holds, in the claims as this member sees "
           "them, at scrape (their stores answer UNAVAILABLE)"},
      });
}

// The histograms, in the order a scrape lists them.
void Metrics::RegisterHistograms() {
  RegisterFamilies<prometheus::Histogram>(
      this, *registry_, prometheus::BuildHistogram,
      {
          {&Metrics::latency_, "adaptd_request_duration_seconds",
           "Call latency by method and transport (grpc, http), from arrival to the final "
           "status"},
          {&Metrics::queue_time_, "adaptd_queue_time_seconds",
           "Time request work waited in the queue before a worker started it"},
          {&Metrics::batch_size_, "adaptd_batch_size",
           "Items per request: inputs of a Predict, examples of one Adapt or Forget message"},
          {&Metrics::fsync_, "adaptd_log_fsync_duration_seconds",
           "Latency of fsync on the write-ahead log"},
          {&Metrics::load_seconds_, "adaptd_store_load_duration_seconds",
           "Time to read a store from the state database and restore it"},
          {&Metrics::compile_seconds_, "adaptd_compile_duration_seconds",
           "Duration of store compiles"},
          {&Metrics::durable_commit_seconds_, "adaptd_durable_log_commit_duration_seconds",
           "Duration of one group transaction of the durable log in etcd"},
          {&Metrics::durable_restore_seconds_, "adaptd_durable_log_restore_duration_seconds",
           "Time to rebuild a store from its stored state and the durable log"},
          {&Metrics::cluster_restore_seconds_, "adaptd_cluster_restore_seconds",
           "Time the background restore took to load one store of an adopted shard's hot list"},
      });
}

// The series without labels that exist from the start.
void Metrics::AddUnlabelledSeries() {
  // A histogram with zero observations is true before the log exists: nothing was synced.
  fsync_->Add({}, FsyncBuckets());
  queue_time_->Add({}, LatencyBuckets());
  queue_depth_->Add({});
}

// adaptd_memory_bytes for each registered kind, and the gauges the kinds contribute.
void Metrics::RegisterKindGauges() {
  for (const StoreKind* kind : StoreKinds::Global().All()) {
    kind_names_.push_back(kind->name);
    memory_->Add({{"kind", kind->name}});
    for (const KindGauge& gauge : kind->gauges) {
      auto& family =
          prometheus::BuildGauge().Name(gauge.name).Help(gauge.help).Register(*registry_);
      kind_gauges_.push_back({kind->id, &gauge, &family});
    }
    for (const CompileGauge& gauge : kind->compile_gauges) {
      auto& family =
          prometheus::BuildGauge().Name(gauge.name).Help(gauge.help).Register(*registry_);
      compile_gauges_.push_back({kind->id, &gauge, &family});
    }
  }
}

Metrics::~Metrics() { static_cast<Collector*>(collectable_.get())->Detach(); }

void Metrics::RecordRequest(const std::string& method, const std::string& code,
                            const std::string& transport, double seconds) {
  requests_->Add({{"method", method}, {"code", code}, {"transport", transport}}).Increment();
  latency_->Add({{"method", method}, {"transport", transport}}, LatencyBuckets()).Observe(seconds);
}

void Metrics::RecordQueueWait(double seconds) {
  queue_time_->Add({}, LatencyBuckets()).Observe(seconds);
}

void Metrics::SetQueueDepthSource(std::function<size_t()> source) {
  absl::MutexLock lock(&refresh_mu_);
  queue_depth_source_ = std::move(source);
}

void Metrics::RecordBatch(const std::string& method, double size) {
  batch_size_->Add({{"method", method}}, BatchBuckets()).Observe(size);
}

void Metrics::RecordLogFsync(double seconds) { fsync_->Add({}, FsyncBuckets()).Observe(seconds); }

void Metrics::RecordCheckpoint(uint64_t written, uint64_t failed) {
  checkpoint_stores_->Add({{"result", "written"}}).Increment(static_cast<double>(written));
  checkpoint_stores_->Add({{"result", "failed"}}).Increment(static_cast<double>(failed));
}

void Metrics::AddExamples(const std::string& kind, double count) {
  examples_->Add({{"kind", kind}}).Increment(count);
}

void Metrics::RecordCompile(bool ok, bool automatic, double seconds) {
  compiles_->Add({{"trigger", automatic ? "auto" : "request"}, {"result", ok ? "ok" : "error"}})
      .Increment();
  if (ok) compile_seconds_->Add({}, LatencyBuckets()).Observe(seconds);
}

void Metrics::MoveStore(const std::string& kind, adapt::v1::Tier from, adapt::v1::Tier to,
                        uint64_t warm_bytes) {
  if ((from == adapt::v1::TIER_WARM) != (to == adapt::v1::TIER_WARM)) {
    absl::MutexLock lock(&refresh_mu_);
    const int64_t bytes = static_cast<int64_t>(warm_bytes);
    warm_bytes_[kind] += to == adapt::v1::TIER_WARM ? bytes : -bytes;
  }
  const auto tier = [](adapt::v1::Tier t) {
    return t == adapt::v1::TIER_HOT ? "hot" : t == adapt::v1::TIER_WARM ? "warm" : "cold";
  };
  if (from != adapt::v1::TIER_UNSPECIFIED) {
    stores_->Add({{"kind", kind}, {"tier", tier(from)}}).Decrement();
  }
  if (to != adapt::v1::TIER_UNSPECIFIED) {
    stores_->Add({{"kind", kind}, {"tier", tier(to)}}).Increment();
  }
}

void Metrics::RecordLoad(const std::string& kind, double seconds) {
  loads_->Add({{"kind", kind}}).Increment();
  load_seconds_->Add({{"kind", kind}}, LatencyBuckets()).Observe(seconds);
}

void Metrics::RecordEviction(const std::string& kind) {
  evictions_->Add({{"kind", kind}}).Increment();
}

void Metrics::RecordTruncatedTexts(const std::string& encoder, uint64_t texts) {
  truncated_texts_->Add({{"encoder", encoder}}).Increment(static_cast<double>(texts));
}

void Metrics::SetBuildInfo(const std::map<std::string, std::string>& labels) {
  absl::MutexLock lock(&build_info_mu_);
  if (build_info_series_ != nullptr) build_info_->Remove(build_info_series_);
  build_info_series_ = &build_info_->Add(labels);
  build_info_series_->Set(1);
}

void Metrics::RecordForwarded(const std::string& method, const std::string& code) {
  forwarded_->Add({{"method", method}, {"code", code}}).Increment();
}

void Metrics::SetResidentBytes(double bytes) { resident_bytes_->Add({}).Set(bytes); }

void Metrics::SetMemoryBudget(double bytes) { memory_budget_->Add({}).Set(bytes); }

void Metrics::RecordCompileGauges(adapt::v1::StoreKind kind,
                                  const adapt::v1::CompileResponse& response) {
  for (const CompileGaugeFamily& g : compile_gauges_) {
    if (g.kind == kind) g.family->Add({}).Set(g.gauge->value(response));
  }
}

void Metrics::ObserveStore(const std::shared_ptr<const void>& owner,
                           const adapt::v1::StoreInfo& info) {
  absl::MutexLock lock(&refresh_mu_);
  // Amortised: a sweep after as many new entries as the last sweep left (at least 64).
  if (stores_seen_.size() >= std::max<size_t>(64, 2 * swept_size_)) SweepExpiredLocked();
  StoreEntry& e = stores_seen_[owner.get()];
  e.owner = owner;
  e.info = info;
  e.info.clear_labels();  // not needed for the aggregates
}

void Metrics::SweepExpiredLocked() {
  for (auto it = stores_seen_.begin(); it != stores_seen_.end();) {
    it = it->second.owner.expired() ? stores_seen_.erase(it) : std::next(it);
  }
  swept_size_ = stores_seen_.size();
}

void Metrics::ForgetStore(const void* key) {
  absl::MutexLock lock(&refresh_mu_);
  stores_seen_.erase(key);
}

size_t Metrics::observed_stores() const {
  absl::MutexLock lock(&refresh_mu_);
  return stores_seen_.size();
}

void Metrics::RefreshStore(const void* key, const adapt::v1::StoreInfo& info) {
  absl::MutexLock lock(&refresh_mu_);
  auto it = stores_seen_.find(key);
  if (it == stores_seen_.end()) return;
  it->second.info = info;
  it->second.info.clear_labels();
}

void Metrics::Refresh() {
  absl::MutexLock lock(&refresh_mu_);
  if (queue_depth_source_) queue_depth_->Add({}).Set(static_cast<double>(queue_depth_source_()));

  std::map<std::string, double> memory;
  for (const std::string& kind : kind_names_) memory[kind] = 0;
  std::vector<GaugeTotals> totals(kind_gauges_.size());
  for (auto it = stores_seen_.begin(); it != stores_seen_.end();) {
    if (it->second.owner.expired()) {
      it = stores_seen_.erase(it);
      continue;
    }
    const adapt::v1::StoreInfo& info = it->second.info;
    auto bytes = memory.find(KindName(info.spec().kind()));
    if (bytes != memory.end()) bytes->second += info.memory_bytes();
    for (size_t g = 0; g < kind_gauges_.size(); ++g) {
      if (kind_gauges_[g].kind == info.spec().kind()) {
        totals[g].Add(kind_gauges_[g].gauge->value(info));
      }
    }
    ++it;
  }
  for (const auto& [kind, bytes] : warm_bytes_) {
    auto total = memory.find(kind);
    if (total != memory.end()) total->second += static_cast<double>(bytes);
  }
  for (const auto& [kind, bytes] : memory) memory_->Add({{"kind", kind}}).Set(bytes);
  // The aggregates of a kind with no store are undefined: their series disappear.
  for (size_t g = 0; g < kind_gauges_.size(); ++g) {
    const KindGauge& gauge = *kind_gauges_[g].gauge;
    for (KindGauge::Aggregate a : gauge.aggregates) {
      const prometheus::Labels labels = AggregateLabels(gauge, a);
      if (totals[g].stores > 0) {
        kind_gauges_[g].family->Add(labels).Set(totals[g].Get(a));
      } else {
        RemoveIfPresent(*kind_gauges_[g].family, labels);
      }
    }
  }
}

std::string Metrics::TenantLabel(const std::string& tenant, double traffic) {
  TenantLabels::Decision d = tenants_.Observe(tenant, traffic);
  if (!d.evicted.empty()) {
    auto it = tenant_series_.find(d.evicted);
    if (it != tenant_series_.end()) {
      for (auto& [family, counter] : it->second) family->Remove(counter);
      tenant_series_.erase(it);
    }
  }
  return d.label;
}

prometheus::Counter& Metrics::TenantCounter(prometheus::Family<prometheus::Counter>& family,
                                            const prometheus::Labels& labels) {
  const bool existed = family.Has(labels);
  prometheus::Counter& c = family.Add(labels);
  if (!existed) tenant_series_[labels.at("tenant")].emplace_back(&family, &c);
  return c;
}

void Metrics::RecordPredict(const std::string& tenant, const std::string& kind, double inputs) {
  RecordBatch("Predict", inputs);
  absl::MutexLock lock(&tenant_mu_);
  const std::string label = TenantLabel(tenant, inputs);
  TenantCounter(*tenant_predictions_, {{"tenant", label}, {"kind", kind}}).Increment(inputs);
}

void Metrics::RecordAdapt(const std::string& tenant, const std::string& kind,
                          const std::string& output, double examples, double evaluated,
                          double correct, double loss_sum) {
  absl::MutexLock lock(&tenant_mu_);
  const std::string label = TenantLabel(tenant, examples);
  TenantCounter(*tenant_examples_, {{"tenant", label}, {"kind", kind}}).Increment(examples);
  const prometheus::Labels labels{{"tenant", label}, {"kind", kind}, {"output", output}};
  TenantCounter(*prequential_evaluated_, labels).Increment(evaluated);
  TenantCounter(*prequential_loss_, labels).Increment(loss_sum);
  if (output == "labels") TenantCounter(*prequential_correct_, labels).Increment(correct);
}

void Metrics::RecordFeedback(const std::string& tenant, const std::string& kind, double applied,
                             double duplicates, double served_evaluated, double served_correct,
                             double delay_seconds_sum) {
  absl::MutexLock lock(&tenant_mu_);
  const std::string label = TenantLabel(tenant, applied + duplicates);
  TenantCounter(*feedback_items_, {{"tenant", label}, {"kind", kind}, {"result", "applied"}})
      .Increment(applied);
  TenantCounter(*feedback_items_, {{"tenant", label}, {"kind", kind}, {"result", "duplicate"}})
      .Increment(duplicates);
  const prometheus::Labels labels{{"tenant", label}, {"kind", kind}};
  TenantCounter(*served_evaluated_, labels).Increment(served_evaluated);
  TenantCounter(*served_correct_, labels).Increment(served_correct);
  TenantCounter(*feedback_delay_, labels).Increment(delay_seconds_sum);
}

void Metrics::AddRememberedBytes(const std::string& tenant, double delta) {
  remembered_bytes_->Add({}).Increment(delta);
  absl::MutexLock lock(&tenant_mu_);
  int64_t& held = remembered_by_tenant_[tenant];
  held += static_cast<int64_t>(delta);
  if (held == 0) remembered_by_tenant_.erase(tenant);
}

void Metrics::RecordRememberedDrops(const std::string& tenant, double window, double age,
                                    double pressure) {
  absl::MutexLock lock(&tenant_mu_);
  const std::string label = TenantLabel(tenant, 0);
  for (const auto& [reason, count] :
       {std::pair{"window", window}, std::pair{"age", age}, std::pair{"pressure", pressure}}) {
    if (count > 0) {
      TenantCounter(*remembered_dropped_, {{"tenant", label}, {"reason", reason}}).Increment(count);
    }
  }
}

void Metrics::RefreshTenantRemembered() {
  absl::MutexLock lock(&tenant_mu_);
  // Summed by label: tenants past the top K share "other", whose admission may have changed
  // since the last scrape.
  std::map<std::string, double> by_label;
  for (const auto& [tenant, bytes] : remembered_by_tenant_) {
    by_label[TenantLabel(tenant, 0)] += static_cast<double>(bytes);
  }
  for (const std::string& label : remembered_labels_) {
    if (!by_label.contains(label)) RemoveIfPresent(*tenant_remembered_bytes_, {{"tenant", label}});
  }
  remembered_labels_.clear();
  for (const auto& [label, bytes] : by_label) {
    tenant_remembered_bytes_->Add({{"tenant", label}}).Set(bytes);
    remembered_labels_.push_back(label);
  }
}

}  // namespace adaptd
