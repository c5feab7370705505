// What a client needs to call a store's holder directly in a cluster on etcd
// (docs/CLUSTER_OPERATIONS.md, "Clients route to holders"): the shard a store belongs to, the
// route table a member's ClusterRoutes answers, and the holder hints members put on the
// answers of calls they forwarded. Values only; a RouteTable is not thread-safe (Router guards
// its own).
#ifndef ADAPTD_CLIENT_CPP_ROUTES_H_
#define ADAPTD_CLIENT_CPP_ROUTES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

// The shard count of a cluster on etcd (docs/CLUSTER_ETCD.md, "Shards").
inline constexpr int kClusterShards = 4096;
// The response header of a forwarded call: "SSSS NAME HOST:PORT REVISION".
inline constexpr char kHolderHeader[] = "adaptd-holder";

// The shard of tenant/store: 64-bit FNV-1a of the bytes of "tenant/store", mod `shards`.
int StoreShard(absl::string_view tenant, absl::string_view store, int shards = kClusterShards);

// One `adaptd-holder` header: the shard (4 hex digits), the member holding it, its address and
// the etcd revision of its claim.
struct HolderHint {
  int shard = 0;
  std::string name;
  std::string address;
  int64_t revision = 0;
};
// INVALID_ARGUMENT naming the part that is wrong; `shards` bounds the shard.
absl::StatusOr<HolderHint> ParseHolderHint(absl::string_view header, int shards = kClusterShards);

// Who holds each shard: ClusterRoutes' answer, validated, with the hints seen since.
class RouteTable {
 public:
  // INVALID_ARGUMENT naming the field when the answer is not a table: no shards, a holder
  // index out of range, a member without a name or an address.
  static absl::StatusOr<RouteTable> Parse(const adapt::v1::ClusterRoutesResponse& routes);

  int shards() const { return static_cast<int>(holders_.size()); }
  int64_t revision() const { return revision_; }
  // The address of the member holding `shard`; empty when none does (or out of range).
  const std::string& HolderAddress(int shard) const;
  // Every member's address.
  const std::vector<std::string>& addresses() const { return addresses_; }
  // Takes a hint whose revision is newer than what the table knows of its shard; false (and
  // nothing changed) otherwise, or when it names the holder the table has.
  bool Apply(const HolderHint& hint);

 private:
  RouteTable() = default;
  int AddressIndex(const std::string& address);

  std::vector<std::string> addresses_;  // by member index
  std::vector<int> holders_;            // by shard: an index into addresses_, or -1
  std::vector<int64_t> learned_;        // by shard: the revision a hint set it at, else 0
  int64_t revision_ = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_CLIENT_CPP_ROUTES_H_
