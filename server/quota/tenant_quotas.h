// TenantQuotas: each tenant's limits (stores, memory bytes, examples per second) from the
// config's default quota and per-tenant overrides, and the token buckets that meter examples.
// A refusal is RESOURCE_EXHAUSTED naming the limit, its value and the tenant. Thread-safe:
// limits are immutable after Create; the buckets sit behind a mutex. No gRPC header.
//
// In a cluster (docs/CLUSTER.md, "Quotas") the limits hold over every member: the members
// exchange each tenant's usage (SetPeerUsage). Each member then lets the tenant grow by its
// part of the memory headroom left at the exchange, and meters examples at a max-min fair
// share of the rate given every member's demand (RateShare). The store count is kept by the
// tenant's home member, outside this class.
#ifndef ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_
#define ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/config.pb.h"

namespace adaptd {

// 0 means unlimited.
struct QuotaLimits {
  uint64_t max_stores = 0;
  uint64_t max_memory_bytes = 0;
  double examples_per_second = 0;
  double examples_burst = 0;  // the bucket's capacity; 0 means one second's worth
};

// What the other members of a cluster report of one tenant.
struct PeerUsage {
  uint64_t memory_bytes = 0;    // summed over them
  std::vector<double> demands;  // examples per second asked of each that asked any
};

class TenantQuotas {
 public:
  using Clock = std::function<absl::Time()>;

  // InvalidArgument naming the field for a negative or non-finite rate or burst, or a
  // tenant override whose name is empty.
  static absl::StatusOr<std::unique_ptr<TenantQuotas>> Create(
      const adapt::v1::ServerConfig& config, Clock clock = [] { return absl::Now(); });

  // The tenant's limits: its override's fields where set, the default's elsewhere.
  QuotaLimits LimitsOf(const std::string& tenant) const;
  // True when some tenant has some memory limit (the engine only then sums memory).
  bool limits_memory() const { return limits_memory_; }
  // True when some tenant has an example-rate limit.
  bool limits_rate() const { return limits_rate_; }

  // Before creating one more store when the tenant holds `current` stores.
  absl::Status CheckStores(const std::string& tenant, uint64_t current) const;
  // Before a change that would bring the tenant's memory from `current` to `current + added`.
  absl::Status CheckMemory(const std::string& tenant, uint64_t current, uint64_t added) const;
  // Takes `count` examples from the tenant's bucket, or refuses and takes nothing.
  absl::Status TakeExamples(const std::string& tenant, uint64_t count) ABSL_LOCKS_EXCLUDED(mu_);

  // Cluster: `members` counts every member (this one too); `usage` is what the others report
  // per tenant (a tenant absent uses nothing there); `mine` the memory each tenant held here
  // when they were asked. Replaces what was set before. A member whose tenant's memory is M
  // here and E elsewhere may then hold M + (limit - M - E) / members until the next call, so
  // the members together never pass the limit between two exchanges.
  void SetPeerUsage(size_t members, absl::flat_hash_map<std::string, PeerUsage> usage,
                    absl::flat_hash_map<std::string, uint64_t> mine) ABSL_LOCKS_EXCLUDED(mu_);
  // Cluster: the examples each tenant with a rate limit asked of this member since the last
  // call, as a rate per second smoothed over the calls; this member's demand for RateShare.
  absl::flat_hash_map<std::string, double> UpdateDemand() ABSL_LOCKS_EXCLUDED(mu_);
  // The example rate this member grants `tenant`: the whole limit on a single server; in a
  // cluster, with d this member's demand, D every member's and R the limit: when D <= R,
  // d + (R - D) / members (every member has what it asks and an even part of the rest); else
  // min(d, L) with L the level at which the members' min(d_i, L) sum to R (max-min fair:
  // members asking less than an even part have all they ask, the rest split what is left
  // evenly). The shares sum to R.
  double RateShare(const std::string& tenant) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time refilled;
  };
  TenantQuotas() = default;
  double RateShareLocked(const std::string& tenant, double limit) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  QuotaLimits defaults_;
  absl::flat_hash_map<std::string, QuotaLimits> overrides_;
  bool limits_memory_ = false;
  bool limits_rate_ = false;
  Clock clock_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
  size_t members_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<std::string, PeerUsage> peers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, uint64_t> mine_ ABSL_GUARDED_BY(mu_);
  // Examples asked since UpdateDemand last ran, and the smoothed rate it computed.
  absl::flat_hash_map<std::string, uint64_t> asked_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, double> demand_ ABSL_GUARDED_BY(mu_);
  absl::Time demand_since_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_
