#include "server/quota/tenant_quotas.h"

#include <algorithm>
#include <cmath>
#include <vector>

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
  quotas->limits_rate_ = quotas->defaults_.examples_per_second > 0;
  for (const auto& [tenant, quota] : config.tenant_quotas()) {
    const std::string field = absl::StrCat("tenant_quotas[", tenant, "]");
    if (tenant.empty()) {
      return absl::InvalidArgumentError("tenant_quotas: a key is empty; name the tenant");
    }
    if (auto s = CheckRate(field, quota); !s.ok()) return s;
    const QuotaLimits limits = Apply(quotas->defaults_, quota);
    quotas->limits_memory_ |= limits.max_memory_bytes > 0;
    quotas->limits_rate_ |= limits.examples_per_second > 0;
    quotas->overrides_[tenant] = limits;
  }
  absl::MutexLock lock(&quotas->mu_);
  quotas->demand_since_ = quotas->clock_();
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
  if (limit == 0) return absl::OkStatus();
  uint64_t elsewhere = 0, then = 0;
  size_t members = 1;
  {
    absl::ReaderMutexLock lock(&mu_);
    members = members_;
    if (const auto it = peers_.find(tenant); it != peers_.end())
      elsewhere = it->second.memory_bytes;
    if (const auto it = mine_.find(tenant); it != mine_.end()) then = it->second;
  }
  const std::string needs =
      added > 0 ? absl::StrCat(" and this change needs ", added, " more") : "";
  if (current + elsewhere + added > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("quota max_memory_bytes: tenant '", tenant, "' may use at most ", limit,
                     " bytes; its stores use ", current + elsewhere,
                     members > 1 ? absl::StrCat(" (", current, " on this member)") : "", needs));
  }
  if (members <= 1) return absl::OkStatus();
  // This member's part of the headroom the last exchange left.
  const uint64_t headroom = limit - std::min(limit, then + elsewhere);
  const uint64_t allowance = then + headroom / members;
  if (current + added <= allowance) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "quota max_memory_bytes: tenant '", tenant, "' may use at most ", limit,
      " bytes across the cluster and its stores use ", current + elsewhere, " (", current,
      " on this member)", needs, "; until the members next exchange usage this member may hold ",
      allowance, " bytes (its part of the headroom): retry in a second"));
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
  // In a cluster the bucket fills at this member's share, and holds that share of the burst
  // (but always room for this message, so a small share delays a large message, never
  // starves it).
  const double rate = RateShareLocked(tenant, limits.examples_per_second);
  const double room =
      std::max(capacity * rate / limits.examples_per_second, static_cast<double>(count));
  if (members_ > 1) asked_[tenant] += count;
  auto [it, inserted] = buckets_.try_emplace(tenant, Bucket{room, now});
  Bucket& b = it->second;
  if (!inserted) {
    const double elapsed = std::max(0.0, absl::ToDoubleSeconds(now - b.refilled));
    b.tokens = std::min(room, b.tokens + elapsed * rate);
    b.refilled = now;
  }
  if (b.tokens >= static_cast<double>(count)) {
    b.tokens -= static_cast<double>(count);
    return absl::OkStatus();
  }
  const double wait = (static_cast<double>(count) - b.tokens) / rate;
  return absl::ResourceExhaustedError(absl::StrCat(
      "quota examples_per_second: tenant '", tenant, "' is limited to ", limits.examples_per_second,
      " examples per second (burst ", capacity, ")",
      members_ > 1 ? absl::StrCat(" across the cluster, ", rate, " on this member") : "",
      "; retry in ", absl::FormatDuration(absl::Seconds(wait))));
}

void TenantQuotas::SetPeerUsage(size_t members, absl::flat_hash_map<std::string, PeerUsage> usage,
                                absl::flat_hash_map<std::string, uint64_t> mine) {
  absl::MutexLock lock(&mu_);
  members_ = std::max<size_t>(1, members);
  peers_ = std::move(usage);
  mine_ = std::move(mine);
}

absl::flat_hash_map<std::string, double> TenantQuotas::UpdateDemand() {
  const absl::Time now = clock_();
  absl::MutexLock lock(&mu_);
  const double elapsed = absl::ToDoubleSeconds(now - demand_since_);
  if (elapsed <= 0) return demand_;
  demand_since_ = now;
  absl::flat_hash_map<std::string, double> next;
  for (const auto& [tenant, asked] : asked_) next[tenant] = static_cast<double>(asked) / elapsed;
  // Half the last window, half what came before: a tenant's share follows its demand within
  // a few windows without jumping on one window's noise.
  for (const auto& [tenant, before] : demand_) {
    const double smoothed = 0.5 * before + 0.5 * next[tenant];
    if (smoothed < 1e-3) {
      next.erase(tenant);
    } else {
      next[tenant] = smoothed;
    }
  }
  asked_.clear();
  demand_ = std::move(next);
  return demand_;
}

double TenantQuotas::RateShare(const std::string& tenant) const {
  const double limit = LimitsOf(tenant).examples_per_second;
  absl::ReaderMutexLock lock(&mu_);
  return RateShareLocked(tenant, limit);
}

double TenantQuotas::RateShareLocked(const std::string& tenant, double limit) const {
  if (members_ <= 1 || limit <= 0) return limit;
  const auto mine = demand_.find(tenant);
  const double here = mine == demand_.end() ? 0 : mine->second;
  std::vector<double> all{here};
  if (const auto peer = peers_.find(tenant); peer != peers_.end()) {
    all.insert(all.end(), peer->second.demands.begin(), peer->second.demands.end());
  }
  double total = 0;
  for (double d : all) total += d;
  const double n = static_cast<double>(members_);
  if (total <= limit) return here + (limit - total) / n;
  // Max-min fair: the level L where sum(min(d_i, L)) = limit.
  std::sort(all.begin(), all.end());
  double left = limit;
  double level = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const double even = left / static_cast<double>(all.size() - i);
    if (all[i] > even) {
      level = even;
      break;
    }
    left -= all[i];
  }
  // A member the tenant has not asked yet keeps a sliver (1% of an even share), so its first
  // examples wait for the next exchange rather than for ever.
  return std::max(limit / (100 * n), std::min(here, level));
}

}  // namespace adaptd
