#include "server/metrics/tenant_labels.h"

#include <algorithm>

namespace adaptd {

TenantLabels::TenantLabels(const std::vector<std::string>& allow_list, size_t top_k,
                           size_t max_tracked)
    : allow_(allow_list.begin(), allow_list.end()), top_k_(top_k), max_tracked_(max_tracked) {
  allow_.erase(kOther);
}

TenantLabels::Decision TenantLabels::Observe(const std::string& tenant, double traffic) {
  Decision d;
  if (allow_.contains(tenant)) {
    d.label = tenant;
    return d;
  }
  d.label = kOther;
  if (tenant == kOther || top_k_ == 0) return d;

  auto it = traffic_.find(tenant);
  if (it == traffic_.end()) {
    if (traffic_.size() >= max_tracked_) return d;
    it = traffic_.emplace(tenant, 0.0).first;
  }
  it->second += std::max(0.0, traffic);

  if (admitted_.contains(tenant)) {
    d.label = tenant;
    return d;
  }
  if (admitted_.size() < top_k_) {
    admitted_.insert(tenant);
    d.label = tenant;
    return d;
  }
  // The admitted tenant with the least traffic (ties: the smallest name, for determinism).
  const std::string* weakest = nullptr;
  double weakest_traffic = 0;
  for (const std::string& a : admitted_) {
    const double t = traffic_[a];
    if (weakest == nullptr || t < weakest_traffic || (t == weakest_traffic && a < *weakest)) {
      weakest = &a;
      weakest_traffic = t;
    }
  }
  if (it->second > 2.0 * weakest_traffic) {
    d.evicted = *weakest;
    admitted_.erase(d.evicted);
    admitted_.insert(tenant);
    d.label = tenant;
  }
  return d;
}

std::vector<std::string> TenantLabels::Admitted() const {
  std::vector<std::string> out(admitted_.begin(), admitted_.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace adaptd
