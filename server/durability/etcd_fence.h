// The fence of a durable write in etcd, and where a cluster member's fences come from
// (docs/DURABLE_LOG.md, "The claim and the fence"; docs/CLUSTER_ETCD.md, "Claims and the fence").
#ifndef ADAPTD_SERVER_DURABILITY_ETCD_FENCE_H_
#define ADAPTD_SERVER_DURABILITY_ETCD_FENCE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"

namespace adaptd {

// What a durable write compares in etcd (docs/DURABLE_LOG.md, "The claim and the fence"): the
// key of the claim that lets this server write the store, and the claim's revision when it was
// made: its create revision for a single server's claim of the prefix, its mod revision for a
// cluster member's claim of a shard (every re-claim puts it again).
struct EtcdFence {
  std::string key;
  int64_t revision = 0;
  bool by_mod_revision = false;

  // The comparison that holds while the claim is this one.
  etcdserverpb::Compare Compare() const;
  // The claim's revision as this fence counts it, from the key as etcd holds it.
  int64_t RevisionOf(const mvccpb::KeyValue& claim) const;
  // "KEY@REVISION": the Durability::Fence token.
  std::string Token() const;
};

// Where a cluster member's fences come from: the shard of each store and this member's claim
// of it (server/cluster's ShardClaims behind an adapter). Thread-safe.
class ShardFences {
 public:
  virtual ~ShardFences() = default;
  virtual int ShardOf(const std::string& tenant, const std::string& name) const = 0;
  // The fence of the shard's writes while this member holds it; an error naming the holder
  // otherwise (the durability reports it as OwnershipLostError).
  virtual absl::StatusOr<EtcdFence> FenceOf(int shard) const = 0;
  // OK while this member holds the shard under a lease known valid; Unavailable otherwise.
  virtual absl::Status ReadsAllowed(int shard) const = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_ETCD_FENCE_H_
