// TenantQuotas: each tenant's limits (stores, memory bytes, examples per second) from the
// config's default quota and per-tenant overrides, and the token buckets that meter examples.
// A refusal is RESOURCE_EXHAUSTED naming the limit, its value and the tenant. Thread-safe:
// limits are immutable after Create; the buckets sit behind a mutex. No gRPC header.
#ifndef ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_
#define ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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

  // Before creating one more store when the tenant holds `current` stores.
  absl::Status CheckStores(const std::string& tenant, uint64_t current) const;
  // Before a change that would bring the tenant's memory from `current` to `current + added`.
  absl::Status CheckMemory(const std::string& tenant, uint64_t current, uint64_t added) const;
  // Takes `count` examples from the tenant's bucket, or refuses and takes nothing.
  absl::Status TakeExamples(const std::string& tenant, uint64_t count);

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time refilled;
  };
  TenantQuotas() = default;

  QuotaLimits defaults_;
  absl::flat_hash_map<std::string, QuotaLimits> overrides_;
  bool limits_memory_ = false;
  Clock clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_QUOTA_TENANT_QUOTAS_H_
