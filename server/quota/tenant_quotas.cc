#include "server/quota/tenant_quotas.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

absl::Status CheckRate(const std::string& field, const adapt::v1::QuotaConfig& q) {
  for (const auto& [name, value, set] :
       {std::tuple{"examples_per_second", q.examples_per_second(), q.has_examples_per_second()},
        std::tuple{"examples_burst", q.examples_burst(), q.has_examples_burst()}}) {
    if (set && (!std::isfinite(value) || value < 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".", name, ": must be a finite number >= 0, got ", value));
    }
  }
  return absl::OkStatus();
}

QuotaLimits Apply(QuotaLimits limits, const adapt::v1::QuotaConfig& q) {
  if (q.has_max_stores()) limits.max_stores = q.max_stores();
  if (q.has_max_memory_bytes()) limits.max_memory_bytes = q.max_memory_bytes();
  if (q.has_examples_per_second()) limits.examples_per_second = q.examples_per_second();
  if (q.has_examples_burst()) limits.examples_burst = q.examples_burst();
  return limits;
}

double Capacity(const QuotaLimits& limits) {
  return limits.examples_burst > 0 ? limits.examples_burst : limits.examples_per_second;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TenantQuotas>> TenantQuotas::Create(
    const adapt::v1::ServerConfig& config, Clock clock) {
  std::unique_ptr<TenantQuotas> quotas(new TenantQuotas());
  quotas->clock_ = std::move(clock);
  if (auto s = CheckRate("default_quota", config.default_quota()); !s.ok()) return s;
  quotas->defaults_ = Apply({}, config.default_quota());
  quotas->limits_memory_ = quotas->defaults_.max_memory_bytes > 0;
  for (const auto& [tenant, quota] : config.tenant_quotas()) {
    const std::string field = absl::StrCat("tenant_quotas[", tenant, "]");
    if (tenant.empty()) {
      return absl::InvalidArgumentError("tenant_quotas: a key is empty; name the tenant");
    }
    if (auto s = CheckRate(field, quota); !s.ok()) return s;
    const QuotaLimits limits = Apply(quotas->defaults_, quota);
    quotas->limits_memory_ |= limits.max_memory_bytes > 0;
    quotas->overrides_[tenant] = limits;
  }
  return quotas;
}

QuotaLimits TenantQuotas::LimitsOf(const std::string& tenant) const {
  const auto it = overrides_.find(tenant);
  return it == overrides_.end() ? defaults_ : it->second;
}

absl::Status TenantQuotas::CheckStores(const std::string& tenant, uint64_t current) const {
  const uint64_t limit = LimitsOf(tenant).max_stores;
  if (limit == 0 || current < limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("quota max_stores: tenant '", tenant,
                                                   "' may hold at most ", limit,
                                                   " stores and holds ", current));
}

absl::Status TenantQuotas::CheckMemory(const std::string& tenant, uint64_t current,
                                       uint64_t added) const {
  const uint64_t limit = LimitsOf(tenant).max_memory_bytes;
  if (limit == 0 || current + added <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("quota max_memory_bytes: tenant '", tenant, "' may use at most ", limit,
                   " bytes; its stores use ", current,
                   added > 0 ? absl::StrCat(" and this change needs ", added, " more") : ""));
}

absl::Status TenantQuotas::TakeExamples(const std::string& tenant, uint64_t count) {
  const QuotaLimits limits = LimitsOf(tenant);
  if (limits.examples_per_second <= 0 || count == 0) return absl::OkStatus();
  const double capacity = Capacity(limits);
  if (static_cast<double>(count) > capacity) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "quota examples_per_second: tenant '", tenant, "' is limited to ",
        limits.examples_per_second, " examples per second with bursts of ", capacity,
        "; one message of ", count, " examples exceeds the burst: send smaller messages"));
  }
  const absl::Time now = clock_();
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = buckets_.try_emplace(tenant, Bucket{capacity, now});
  Bucket& b = it->second;
  if (!inserted) {
    const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - b.refilled));
    b.tokens = std::min(capacity, b.tokens + elapsed * limits.examples_per_second);
    b.refilled = now;
  }
  if (b.tokens >= static_cast<double>(count)) {
    b.tokens -= static_cast<double>(count);
    return absl::OkStatus();
  }
  const double wait = (static_cast<double>(count) - b.tokens) / limits.examples_per_second;
  return absl::ResourceExhaustedError(
      absl::StrCat("quota examples_per_second: tenant '", tenant, "' is limited to ",
                   limits.examples_per_second, " examples per second (burst ", capacity,
                   "); retry in ", absl::FormatDuration(absl::Seconds(wait))));
}

}  // namespace adaptd
