// EtcdCluster: this server as a member of a cluster on etcd (docs/CLUSTER_ETCD.md), built from
// the config (a `cluster` without `members`, and a `durable_log`): its ClusterMember (the
// registration under a lease, the claims of shards, the engine's shards following them), the
// routing of each call by the claims recorded in etcd, and the forwarder that passes a call
// for a shard another member holds to that member's advertised address. The tenants' memory
// and examples-per-second quotas hold over the registered members by the usage exchange
// (UsageExchange, ClusterQuota USAGE to each with the member token); store counts are exact
// through etcd.
//
// Start-up: Register (STARTING), the engine opened over Engine::DurableLogOf(..., fences()),
// Attach, the transports listening, then Serve (claims, READY). A SIGTERM: Freeze, the calls
// drained and the engine flushed, then HandOverForRestart keeps the shards for the restart grace.
//
// Thread-safety: every method may be called concurrently once Serve returned.
#ifndef ADAPTD_SERVER_CLUSTER_ETCD_CLUSTER_H_
#define ADAPTD_SERVER_CLUSTER_ETCD_CLUSTER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "server/cluster/admin_threads.h"
#include "server/cluster/cluster_bases.h"
#include "server/cluster/cluster_member.h"
#include "server/cluster/forwarding.h"
#include "server/cluster/member_calls.h"
#include "server/cluster/membership.h"
#include "server/cluster/routing.h"
#include "server/cluster/usage_exchange.h"
#include "server/core/engine.h"
#include "server/durability/etcd_fence.h"
#include "server/etcd/etcd_client.h"
#include "server/metrics/metrics.h"

namespace adaptd {

class EtcdCluster final : public BaseLocator {
 public:
  // Connects to etcd (config.durable_log's endpoints and TLS) and registers this member
  // (STARTING) as config.cluster.self at config.cluster.advertise_address. Another live process
  // of the same name makes it fail, naming that process's address. `on_lease_lost` runs once,
  // on the lease keeper's thread, when this member's lease lapses (its shards are gone).
  // `metrics` (null for none; it must outlive this) counts the claims, releases and restores
  // and samples the adaptd_cluster_* gauges from this member until it is destroyed.
  static absl::StatusOr<std::unique_ptr<EtcdCluster>> Register(
      const adapt::v1::ServerConfig& config, Metrics* metrics, std::function<void()> on_lease_lost);
  // Stops claiming (what is held stays claimed until the lease lapses or moved to the grace
  // lease); before the engine goes.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // The fences of the shards this member holds, for the engine's durability.
  std::shared_ptr<const ShardFences> fences() const { return member_->fences(); }
  // Gives the engine (which must outlive this) the base stores other members hold, and builds
  // the usage exchange over its quotas; before the transports start.
  void Attach(Engine* engine);
  // Starts claiming shards for `engine` (which must outlive this), waits until those first won
  // are adopted, sets this member READY, and starts the usage exchange.
  absl::Status Serve(Engine* engine);

  // Where a call for tenant/store runs, by the claims in etcd: null for here (this member holds
  // the shard, has opened it, and its lease is known valid), else the member holding the shard.
  // UNAVAILABLE (retryable) while nobody holds the shard, while it is being opened here, while
  // its holder is restarting, past this member's lease, and for a call another member
  // forwarded here that this member does not serve (never forwarded twice).
  absl::StatusOr<const cluster::Member*> Route(const cluster::CallOrigin& origin,
                                               const std::string& tenant,
                                               const std::string& store) const;
  // The other registered members (a listing gathers their pages).
  std::vector<const cluster::Member*> Peers() const;
  // The route table clients call holders by (ClusterRoutes): the members holding shards and
  // each shard's holder, from the claims as this member last saw them (no etcd read).
  // UNAVAILABLE while this member starts (before Serve).
  absl::StatusOr<adapt::v1::ClusterRoutesResponse> Routes() const;
  // The holder hint of a call for tenant/store that Route sent to `holder`: "SSSS NAME
  // HOST:PORT REVISION" (the shard in 4 hex digits, the claim's revision); "" when the claims
  // name no holder of the shard now.
  std::string HolderHint(const std::string& tenant, const std::string& store,
                         const cluster::Member& holder) const;

  // --- Operating it (ClusterStatus, DrainMember; an admin token) -------------------------
  // This member's status: its registered state, the shards it holds, its lease's remaining
  // validity, its restores in flight.
  adapt::v1::MemberStatus LocalStatus() const;
  // Every registered member's status, each other member asked for its own (ClusterStatus with
  // `local`, through the forwarder, carrying `authorization` when given) until `deadline`; one
  // that did not answer is listed with its error and what etcd says of it. Blocks.
  adapt::v1::ClusterStatusResponse Gather(absl::Time deadline,
                                          const std::optional<std::string>& authorization) const;
  // Sets `name` DRAINING (it wins no shard and releases those it holds), or READY again with
  // `undo`. NotFound when no such member is registered.
  absl::Status Drain(const std::string& name, bool undo);
  // How many shards `name` holds, by the claims.
  int ShardsHeldBy(const std::string& name) const;
  // Runs `fn` on a thread of its own (a status gathered, a drain waited for); false once the
  // member stops (Freeze), when it does not run.
  bool RunAdmin(std::function<void()> fn);
  // Whether a stop began (Freeze): admin waits end.
  bool stopping() const { return stopping_.load(); }

  // A stop begins: no shard is claimed or released from here on, and the usage exchange ends
  // (the quotas keep the others' usage it last heard).
  void Freeze();
  // After the last calls and the engine's final flush (each changed store written out): moves
  // the registration (RESTARTING) and every claim to a lease of the restart grace, so the
  // shards stay here until this member starts again or the grace ends.
  absl::Status HandOverForRestart();

  // Base stores another member holds (ClusterBase calls to it, with the member token); a
  // ClusterBase call from another member is answered by bases()->Answer.
  ClusterBases* bases() const { return bases_.get(); }
  // The memory and examples-per-second usage exchange with the registered members; a
  // ClusterQuota USAGE from another member is answered by usage()->Usage(). Null before Attach.
  UsageExchange* usage() const { return usage_.get(); }
  // BaseLocator: a base's holder by the claims.
  absl::StatusOr<const cluster::Member*> HolderOf(const std::string& tenant,
                                                  const std::string& store) const override;
  std::vector<const cluster::Member*> Others() const override { return Peers(); }
  absl::Status Absent(const std::string& tenant, const std::string& store) const override;

  Forwarder* forwarder() const { return forwarder_.get(); }
  cluster::ClusterMember& member() const { return *member_; }
  const std::string& self() const { return self_; }

 private:
  EtcdCluster() = default;
  // A stable Member for name at address (kept for the process's life: the routes returned
  // point at it).
  const cluster::Member* Intern(const std::string& name, const std::string& address) const;
  // The adaptd_cluster_* gauges, at scrape.
  Metrics::ClusterSample Sample() const;
  // Shards no member holds, by the claims as this member sees them; once Serve ran.
  int ShardsWithoutHolder() const;

  std::string self_;
  absl::Duration restart_grace_;
  absl::Duration lease_ttl_;
  absl::Duration usage_interval_;
  Metrics* metrics_ = nullptr;  // samples this member until it goes
  std::unique_ptr<etcd::EtcdClient> client_;
  std::unique_ptr<Forwarder> forwarder_;
  std::unique_ptr<MemberCalls> calls_;  // this member's own calls to the others
  std::unique_ptr<ClusterBases> bases_;
  std::unique_ptr<MemberUsagePeers> usage_peers_;   // the registered members, but this one
  std::unique_ptr<UsageExchange> usage_;            // stopped first: it reads the registry
  std::unique_ptr<cluster::ClusterMember> member_;  // declared after the client it uses
  std::atomic<bool> serving_{false};                // Serve ran: the claims exist
  std::atomic<bool> stopping_{false};

  AdminThreads admin_;

  mutable absl::Mutex mu_;
  mutable std::map<std::pair<std::string, std::string>, std::unique_ptr<cluster::Member>> interned_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_ETCD_CLUSTER_H_
