// ClusterMember: one member of a cluster on etcd (docs/CLUSTER_ETCD.md), its registration
// (ClusterRegistry), its claims of shards (ShardClaims) and the engine's shards following them:
// a shard claimed is adopted by the engine (its stores recovered from etcd and object storage),
// a shard released or lost is released by it (its stores' writes stopped, their states written
// out where the fence still allows, their slots removed).
//
// Start-up: Register (the member is STARTING), then open the engine over a durability kept by
// shard whose fences are fences() (EtcdDurability::Options::shards), then Serve(engine): the
// claims start, and the member is READY once its first round of claims is adopted.
//
// Thread-safety: every method may be called concurrently once Serve returned.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/cluster/cluster_registry.h"
#include "server/cluster/shard_claims.h"
#include "server/core/engine.h"
#include "server/durability/etcd_fence.h"

namespace adaptd::cluster {

class ClusterMember {
 public:
  struct Options {
    ClusterRegistry::Options registry;
    ShardClaims::Options claims;
    // How long Serve waits for the shards this member first wins to be adopted.
    absl::Duration ready_wait = absl::Seconds(30);
    // Runs once, on the lease keeper's thread, when this member's lease is lost (its shards go
    // to the others); after a line on stderr.
    std::function<void()> on_lease_lost;
  };

  // Registers this member (STARTING). `client` must outlive the member.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Register(etcd::EtcdClient* client,
                                                                 Options options);
  // Stops claiming; what is held stays claimed until the lease lapses (or a restart hand-over
  // moved it).
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  // The fences of the shards this member holds, for the engine's durability. Until Serve,
  // none is held.
  std::shared_ptr<const ShardFences> fences() const;
  // Starts claiming shards for `engine` (which must outlive the member), waits until the shards
  // it first wins are adopted, and sets this member READY.
  absl::Status Serve(Engine* engine);

  // Where tenant/store is served: "" here (this member holds its shard and the engine has
  // adopted it), or the name of the member holding its shard; Unavailable while nobody holds
  // it, or this member holds it and is still opening it.
  absl::StatusOr<std::string> Route(const std::string& tenant, const std::string& store) const;
  // The shards this member holds and the engine has adopted.
  std::set<int> Adopted() const;

  ClusterRegistry& registry() { return *registry_; }
  ShardClaims& claims() { return *claims_; }

 private:
  class Fences;
  ClusterMember() = default;
  void Acquired(int shard);
  // The shard is no longer served here; the engine releases its stores.
  absl::Status Release(int shard);

  etcd::EtcdClient* client_ = nullptr;
  Options options_;
  std::unique_ptr<ClusterRegistry> registry_;
  std::shared_ptr<Fences> fences_;
  std::unique_ptr<ShardClaims> claims_;
  Engine* engine_ = nullptr;

  mutable absl::Mutex mu_;
  std::set<int> adopted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_
