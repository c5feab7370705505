// ClusterQuotas: tenant quotas that hold over every member of a static cluster (docs/CLUSTER.md,
// "Quotas"), not over each member alone.
//
// - Stores, exactly. A tenant's count is kept by its home member (Membership::HomeOf). Before a
//   member creates (or a client imports) one of the tenant's stores, it asks the home for a
//   slot (RESERVE). The home, one request of a tenant at a time, unites the names of the
//   tenant's stores that every member holds (STORE_NAMES; a store in motion, held twice for a
//   moment, counts once) with the slots it granted whose creates are still running, and grants
//   one more only under the limit. The creating member frees the slot once its create ended
//   (RELEASE, which waits for a count of the tenant in progress, since that count may have
//   asked the store's member before the store existed; a slot not freed lapses after
//   kSlotLifetime). A member that cannot be asked makes
//   the count unknown: the create is refused UNAVAILABLE (retryable), naming it.
// - Memory and examples per second, within about 10%: the members' usage exchange
//   (UsageExchange, usage_exchange.h), which this class answers USAGE from. It is apart
//   because a cluster on etcd runs it too, with its store counts kept exact through etcd.
//
// Tenants without a store limit cost nothing: no slot. Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_QUOTAS_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_QUOTAS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "server/cluster/handoff.h"
#include "server/cluster/usage_exchange.h"
#include "server/core/engine.h"

namespace adaptd {

class ClusterQuotas {
 public:
  // How long a granted slot counts when its create never reports back (a member killed).
  static constexpr absl::Duration kSlotLifetime = absl::Seconds(60);

  // `handoff`, `engine` and `usage` (whose Usage answers USAGE) must outlive this object.
  ClusterQuotas(HandOff* handoff, Engine* engine, const UsageExchange* usage);

  // Runs `create`, which makes tenant/store here (a CreateStore, or an ImportStore that is not
  // a move), under the tenant's store count of the cluster: a slot from its home first
  // (RESOURCE_EXHAUSTED at the limit, UNAVAILABLE when the count cannot be made), freed after.
  // Blocks on the home (and the home on the others): call it off the gRPC threads.
  absl::Status Create(const std::string& tenant, const std::string& store, absl::Time deadline,
                      const std::function<absl::Status()>& create);

  // Answers another member's ClusterQuota call. RESERVE blocks on the other members: call it
  // off the gRPC threads (the others are answered at once).
  absl::Status Answer(const adapt::v1::ClusterQuotaRequest& request, absl::Time deadline,
                      adapt::v1::ClusterQuotaResponse* response) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A slot granted (as home) for a create that has not reported back.
  struct Slot {
    int creates = 0;  // of this name, at once (a client's retry may race its first try)
    absl::Time expires;
  };

  // The home's side of RESERVE and RELEASE.
  absl::Status ReserveHere(const std::string& tenant, const std::string& store,
                           const std::string& fingerprint, absl::Time deadline,
                           adapt::v1::ClusterQuotaResponse* response) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseHere(const std::string& tenant, const std::string& store) ABSL_LOCKS_EXCLUDED(mu_);
  // RESERVE or RELEASE at the tenant's home (here or another member).
  absl::Status AskHome(adapt::v1::ClusterQuotaRequest request, absl::Time deadline);
  absl::Mutex* TenantLock(const std::string& tenant) ABSL_LOCKS_EXCLUDED(mu_);

  HandOff* const handoff_;
  Engine* const engine_;
  const UsageExchange* const usage_;

  absl::Mutex mu_;
  // Slots granted (as home) whose creates have not reported: tenant -> store -> slot.
  std::map<std::string, std::map<std::string, Slot>> slots_ ABSL_GUARDED_BY(mu_);
  // One lock per tenant with a store limit: its RESERVEs count one at a time.
  std::map<std::string, std::unique_ptr<absl::Mutex>> tenant_locks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_QUOTAS_H_
