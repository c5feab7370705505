// TenantLabels: the rule that bounds the cardinality of per-tenant series. A tenant gets its
// own label value when it is on the configured allow-list, or while it is among the top K
// tenants by traffic; every other tenant's traffic is counted under the label "other".
//
// Top K: the first K tenants seen take the K slots; afterwards a tenant outside them takes the
// slot of the admitted tenant with the least traffic once its own traffic exceeds twice that
// (the factor keeps two tenants of similar traffic from swapping back and forth). Traffic is
// cumulative since the server started. An evicted tenant's series should be removed by the
// caller; its later traffic goes to "other", so each event is still counted exactly once.
// At most `max_tracked` tenants are tracked; traffic of tenants beyond that counts as "other"
// without competing for a slot. A tenant literally named "other" shares the overflow series.
//
// Not thread-safe: the owner serialises calls.
#ifndef ADAPTD_SERVER_METRICS_TENANT_LABELS_H_
#define ADAPTD_SERVER_METRICS_TENANT_LABELS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "server/config/defaults.h"

namespace adaptd {

class TenantLabels {
 public:
  static constexpr char kOther[] = "other";
  static constexpr size_t kDefaultTopK = defaults::kMetricsTopTenants;
  static constexpr size_t kDefaultMaxTracked = 100000;

  TenantLabels(const std::vector<std::string>& allow_list, size_t top_k,
               size_t max_tracked = kDefaultMaxTracked);

  struct Decision {
    std::string label;    // the tenant's name or "other"
    std::string evicted;  // non-empty: this tenant lost its slot; remove its series
  };

  // Adds `traffic` (examples or inputs, ≥ 0) to `tenant` and says which label it is counted
  // under.
  Decision Observe(const std::string& tenant, double traffic);

  // The tenants that currently have their own series (allow-list excluded), for tests.
  std::vector<std::string> Admitted() const;

 private:
  absl::flat_hash_set<std::string> allow_;
  size_t top_k_;
  size_t max_tracked_;
  absl::flat_hash_map<std::string, double> traffic_;
  absl::flat_hash_set<std::string> admitted_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_METRICS_TENANT_LABELS_H_
