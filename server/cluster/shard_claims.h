// Shards and their claims in etcd, for the cluster on etcd (docs/CLUSTER_ETCD.md, "Shards" and
// "Claims and the fence").
//
// - ShardOf: a store's shard, fnv1a64("tenant/store") mod the shard count (4,096).
// - DesiredOwner: the rendezvous (docs/CLUSTER.md's weight) over the given members by the
//   shard's key "shard-SSSS".
// - ShardClaims: this member's claims. It follows PREFIX/claims/ with an EtcdWatcher (so
//   HolderOf answers who holds any shard, as etcd records it) and, on a thread of its own,
//   every `tick` and whenever the claims or the members change:
//     * claims the free shards it is the desired owner of (a transaction per batch, each claim
//       created only when absent, under this member's lease); the claim's mod revision is the
//       shard's fence;
//     * re-claims, at start, the claims that name it under another lease (a restart within its
//       grace: a put under the new lease, compared at the claim's revision: a new fence);
//     * releases the shards whose desired owner is another eligible member (or all of them
//       while this member drains): `on_release` first (the shard's writes stop and its stores
//       are written out), then a delete compared at the fence.
//   The desired owner is computed over the eligible members plus this member unless it drains,
//   so a member in its settle time keeps what it holds (the others give it nothing until it is
//   eligible), and it claims a free shard only while no member is eligible (a cluster
//   starting).
//   A claim of this member's that etcd deletes or another member puts (its lease lapsed) is
//   lost: `on_lost`, and it is no longer held.
//
// Thread-safety: every method may be called concurrently; the hooks run on the claims thread
// (on_acquired, also on its open threads for the shards of one batch at once; on_release) or
// the watcher's (on_lost), never two at once for one shard.
#ifndef ADAPTD_SERVER_CLUSTER_SHARD_CLAIMS_H_
#define ADAPTD_SERVER_CLUSTER_SHARD_CLAIMS_H_

#include <cstdint>
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
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/cluster/cluster_registry.h"
#include "server/etcd/etcd_client.h"
#include "server/etcd/etcd_watcher.h"

namespace adaptd::cluster {

inline constexpr int kDefaultShards = 4096;

// The shard of tenant/store among `shards`.
int ShardOf(absl::string_view tenant, absl::string_view store, int shards = kDefaultShards);
// "SSSS": the shard's number in 4 hex digits (its claim key's last component).
std::string ShardName(int shard);
// Of `members` (any order), the one of highest rendezvous weight for the key "shard-SSSS";
// "" when there is none.
std::string DesiredOwner(const std::vector<std::string>& members, int shard);

struct ShardHolder {
  std::string member;
  int64_t lease = 0;
  int64_t fence = 0;  // the claim's mod revision
};

enum class ClaimReason { kNew, kRestart, kFailover, kMove };

class ShardClaims {
 public:
  struct Options {
    std::string prefix = "/adaptd/";
    int shards = kDefaultShards;
    absl::Duration tick = absl::Milliseconds(500);
    size_t batch = 100;  // claims, reclaims or releases per transaction
    // Threads opening the shards of one claimed batch at once (on_acquired), so a failover's
    // many shards are read from etcd and object storage side by side.
    int open_threads = 8;
    etcd::EtcdWatcher::Options watch;
  };
  struct Hooks {
    // A shard this member now holds, under `fence` (FenceOf answers it already): open it
    // (read its stores' entries). The shards of one batch are opened on up to
    // Options::open_threads threads at once; the next batch is claimed once all are open.
    std::function<void(int shard, int64_t fence, ClaimReason reason)> on_acquired;
    // Before a release: stop the shard's writes, write its changed stores out, unload them. An
    // error keeps the shard held, and the release is tried again next tick.
    std::function<absl::Status(int shard)> on_release;
    // A shard held no longer, without a release (this member's lease lapsed): drop it.
    std::function<void(int shard)> on_lost;
  };

  // Starts following the claims and claiming; `registry` must outlive it.
  static absl::StatusOr<std::unique_ptr<ShardClaims>> Start(etcd::EtcdClient* client,
                                                            ClusterRegistry* registry,
                                                            Options options, Hooks hooks);
  // Stops claiming and releasing; claims stay in etcd under the lease (they go with it, or
  // move with a restart hand-over).
  ~ShardClaims();
  ShardClaims(const ShardClaims&) = delete;
  ShardClaims& operator=(const ShardClaims&) = delete;

  // Who holds `shard` as etcd records it (as this member last saw it); nullopt when nobody.
  std::optional<ShardHolder> HolderOf(int shard) const;
  // Who holds every shard (indexed by shard), as of the etcd revision `revision`.
  struct Table {
    std::vector<std::optional<ShardHolder>> holders;
    int64_t revision = 0;
  };
  Table Holders() const;
  // The fence of a shard this member holds; Unavailable naming the holder otherwise.
  absl::StatusOr<int64_t> FenceOf(int shard) const;
  // The shards this member holds, and their claims as keys at their revisions (for
  // ClusterRegistry::HandOverForRestart).
  std::vector<int> Held() const;
  std::vector<KeyAtRevision> HeldKeys() const;
  // Stops claiming and releasing (a graceful stop under way), once the round under way ended;
  // what is held stays held.
  void Freeze();
  // Whether every shard is held, each by its desired owner over the eligible members.
  bool Settled() const;
  int shards() const { return options_.shards; }
  std::string ClaimKey(int shard) const;

 private:
  ShardClaims(etcd::EtcdClient* client, ClusterRegistry* registry, Options options, Hooks hooks);
  void Reset(const std::vector<mvccpb::KeyValue>& kvs, int64_t revision);
  void Apply(const std::vector<mvccpb::Event>& events);
  // A claim of this member's that etcd no longer records as its own, under `mu_`: lost.
  void LoseUnless(int shard, const std::optional<ShardHolder>& now, std::vector<int>* lost)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run();
  void Round();
  // Takes this member's own claims of an earlier process (a restart) under its lease, in
  // batches of Options::batch, each compared at the fence the table holds; opens them as Claim.
  void Reclaim(const std::vector<int>& shards);
  // Sorts free shards whose last holder is still in the members' table: released (a move) when
  // the holder's lease lives, lapsed (a failover) when it ended.
  void SortByLease(const std::map<int64_t, std::vector<int>>& by_lease, std::vector<int>* move,
                   std::vector<int>* failover);
  void Claim(const std::vector<int>& shards, ClaimReason reason);
  // Runs on_acquired for each of `shards` (claimed in one transaction), open_threads at once.
  void Open(const std::vector<int>& shards, int64_t fence, ClaimReason reason);
  void Release(int shard);
  int ShardOfKey(const std::string& key) const;

  etcd::EtcdClient* client_;
  ClusterRegistry* registry_;
  const Options options_;
  const Hooks hooks_;
  std::unique_ptr<etcd::EtcdWatcher> watcher_;
  Subscription membership_;

  mutable absl::Mutex mu_;
  std::vector<std::optional<ShardHolder>> table_ ABSL_GUARDED_BY(mu_);  // by shard
  int64_t table_revision_ ABSL_GUARDED_BY(mu_) = 0;                     // table_ as of it
  std::map<int, int64_t> held_ ABSL_GUARDED_BY(mu_);                    // shard -> fence
  std::set<int> releasing_ ABSL_GUARDED_BY(mu_);
  // Who last held each shard, under which lease (for the claim's reason: a holder whose lease
  // lives released it, one whose lease ended lapsed).
  std::map<int, ShardHolder> last_holder_ ABSL_GUARDED_BY(mu_);
  bool table_ready_ ABSL_GUARDED_BY(mu_) = false;
  bool frozen_ ABSL_GUARDED_BY(mu_) = false;
  bool round_running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_SHARD_CLAIMS_H_
