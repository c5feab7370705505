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
// The hot lists (docs/CLUSTER_ETCD.md, "Failover"; HotStores): every `hot_interval` the member
// writes PREFIX/hot/SSSS for each shard it serves whose list of most recently used stores
// changed, compared at the shard's fence and under no lease (the next holder reads it after
// this member's lease lapsed), and once more as it releases a shard. After adopting a shard it
// reads the shard's list and loads those stores in the background, most recent first, on
// `restore_threads` threads (adoption and READY do not wait; a call for a store being
// restored waits for that load); the shard's other stores stay cold until their first call.
//
// Thread-safety: every method may be called concurrently once Serve returned.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/cluster/cluster_registry.h"
#include "server/cluster/hot_stores.h"
#include "server/cluster/shard_claims.h"
#include "server/core/engine.h"
#include "server/durability/etcd_fence.h"

namespace adaptd::cluster {

// Why a shard is no longer held here: released to its desired owner, released as this member
// drains, or lost with this member's lease.
enum class ReleaseReason { kMove, kDrain, kLost };

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
    // How often the hot lists of the shards served here are written (those that changed), and
    // how many stores each names at most.
    absl::Duration hot_interval = absl::Seconds(30);
    size_t hot_size = kHotListSize;
    // Threads loading the hot stores of adopted shards.
    int restore_threads = 2;
    // Each store the background restore loaded, and its seconds (the server's
    // adaptd_cluster_restore_seconds); called on a restore thread.
    std::function<void(double seconds)> on_restore;
    // Each shard claimed, and why (the server's adaptd_cluster_claims_total); on the claims
    // thread or one of its open threads (the shards of a batch open side by side), before the
    // shard's adoption.
    std::function<void(ClaimReason reason)> on_claim;
    // Each shard no longer held here, and why (adaptd_cluster_releases_total): on the claims
    // thread once a release succeeded, on the watcher's when a shard is lost.
    std::function<void(ReleaseReason reason)> on_release;
  };

  // Registers this member (STARTING). `client` must outlive the member.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Register(etcd::EtcdClient* client,
                                                                 Options options);
  // Stops claiming and restoring; what is held stays claimed until the lease lapses (or a
  // restart hand-over moved it).
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
  // Stores named by the hot lists of adopted shards whose background load is queued or under
  // way (the server's adaptd_cluster_restores_in_flight).
  int restores_in_flight() const;
  // Since etcd last acknowledged a keep-alive of this member's lease (the server's
  // adaptd_cluster_lease_age_seconds); the lease is lost once it reaches the TTL.
  absl::Duration LeaseAge() const;
  // Writes the hot list of each shard served here whose list changed, as every hot_interval;
  // how many were written.
  int WriteHotLists();

  ClusterRegistry& registry() { return *registry_; }
  ShardClaims& claims() { return *claims_; }

 private:
  class Fences;
  ClusterMember() = default;
  // A store of the hot list of `shard` to load, or (key empty) the list to read.
  struct RestoreTask {
    int shard = 0;
    std::string key;
  };
  void Acquired(int shard);
  // Whether this member's record is DRAINING.
  bool Draining() const;
  // The shard is no longer served here (its hot list written first when `graceful`); the
  // engine releases its stores.
  absl::Status Release(int shard, bool graceful);
  std::string HotKey(int shard) const;
  absl::StatusOr<std::vector<std::string>> ReadHotList(int shard);
  // Puts the shard's list (deletes it when empty) compared at the shard's fence.
  absl::Status WriteHotList(int shard, const std::vector<std::string>& list);
  // The uses of the stores of `shards` held here, by shard.
  std::map<int, std::vector<StoreUse>> UsesOf(const std::set<int>& shards) const;
  // Writes the shard's list when it changed (a failure on stderr); whether it did.
  bool WriteHotListIfChanged(int shard, const std::vector<StoreUse>& uses);
  // Drops the shard's queued restores and waits for those under way.
  void CancelRestores(int shard) ABSL_LOCKS_EXCLUDED(restore_mu_);
  void RunRestores();
  void RunRestore(const RestoreTask& task);
  void RunHotLists();

  etcd::EtcdClient* client_ = nullptr;
  Options options_;
  std::unique_ptr<ClusterRegistry> registry_;
  std::shared_ptr<Fences> fences_;
  std::unique_ptr<ShardClaims> claims_;
  Engine* engine_ = nullptr;

  mutable absl::Mutex mu_;
  std::set<int> adopted_ ABSL_GUARDED_BY(mu_);

  std::unique_ptr<HotStores> hot_;
  mutable absl::Mutex restore_mu_;
  std::deque<RestoreTask> restores_ ABSL_GUARDED_BY(restore_mu_);
  std::map<int, int> restoring_ ABSL_GUARDED_BY(restore_mu_);  // shard -> tasks under way
  int stores_pending_ ABSL_GUARDED_BY(restore_mu_) = 0;        // queued or under way
  bool stopping_ ABSL_GUARDED_BY(restore_mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_MEMBER_H_
