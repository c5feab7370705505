// StaticCluster: the parts of a member of a static-list cluster (docs/CLUSTER.md), built
// together from the config's `cluster` and stopped together: the forwarder (channels to the
// other members, and calls relayed there), this member's own calls to them (MemberCalls, over
// gRPC), the hand-off (routing while stores move), the tenant quotas that hold over
// every member (the store counts' slots, and the usage exchange for memory and examples per
// second), and base stores read from other members (set on the engine).
#ifndef ADAPTD_SERVER_CLUSTER_STATIC_CLUSTER_H_
#define ADAPTD_SERVER_CLUSTER_STATIC_CLUSTER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/auth/token_authorizer.h"
#include "server/cluster/cluster_bases.h"
#include "server/cluster/cluster_quotas.h"
#include "server/cluster/forwarding.h"
#include "server/cluster/handoff.h"
#include "server/cluster/member_calls.h"
#include "server/cluster/usage_exchange.h"
#include "server/core/engine.h"
#include "server/metrics/metrics.h"

namespace adaptd {

class StaticCluster {
 public:
  // `engine`, `auth` (nullable) and `metrics` (nullable) must outlive the cluster.
  static absl::StatusOr<std::unique_ptr<StaticCluster>> Create(
      const adapt::v1::ServerConfig& config, Engine* engine, const TokenAuthorizer* auth,
      Metrics* metrics);

  // Starts the hand-off's and the quota exchange's background threads.
  void Start();
  // Stops them (a move cut short resumes at the next start; admin calls waiting on moves
  // answer UNAVAILABLE). Before the engine goes.
  void Stop();

  Forwarder* forwarder() const { return forwarder_.get(); }
  HandOff* handoff() const { return handoff_.get(); }
  ClusterQuotas* quotas() const { return quotas_.get(); }
  UsageExchange* usage() const { return usage_.get(); }
  ClusterBases* bases() const { return bases_.get(); }

 private:
  StaticCluster() = default;

  std::unique_ptr<Forwarder> forwarder_;
  std::unique_ptr<MemberCalls> calls_;  // this member's own calls to the others
  // The exchange's peers: the configured members other than this one.
  std::unique_ptr<MemberUsagePeers> usage_peers_;
  std::unique_ptr<UsageExchange> usage_;
  // Declared before the hand-off, so it outlives the hand-off's admin threads, which may free
  // its slots.
  std::unique_ptr<ClusterQuotas> quotas_;
  std::unique_ptr<HandOffBases> base_locator_;
  std::unique_ptr<ClusterBases> bases_;
  std::unique_ptr<HandOff> handoff_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_STATIC_CLUSTER_H_
