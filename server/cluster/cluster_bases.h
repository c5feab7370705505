// ClusterBases: base stores (docs/BASE_STORES.md) that live on another member of a cluster
// (docs/CLUSTER_ETCD.md, "Quotas and base stores").
//
// A store and its base may be in shards of different holders. A create from a base, or a
// refresh_base compile, reads the base's spec and published read-out (never its statistics)
// from the member that holds it (ClusterBase READ); a read for a create keeps the
// base from deletion there for StoreDirectory::kBaseLease. Deleting a store first asks every other
// member whether it holds stores created from it (ClusterBase DEPENDANTS), so a base in use is
// not deleted wherever its dependants are; a member that does not answer is passed over (its
// dependants keep their copy of the base), so one member down holds up no delete elsewhere.
// The claims say which member holds a base (EtcdCluster, a BaseLocator). Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/cluster/member_calls.h"
#include "server/cluster/membership.h"
#include "server/core/engine.h"
#include "server/core/remote_bases.h"

namespace adaptd {

// Where base stores are, for ClusterBases: by the claims of a cluster on etcd (EtcdCluster).
class BaseLocator {
 public:
  virtual ~BaseLocator() = default;
  // The member holding tenant/store (kept for the process's life): null for this member; an
  // error (Unavailable) when nobody can be asked now.
  virtual absl::StatusOr<const cluster::Member*> HolderOf(const std::string& tenant,
                                                          const std::string& store) const = 0;
  // The other members, each asked for stores made from a base before it is deleted.
  virtual std::vector<const cluster::Member*> Others() const = 0;
  // Asked here for a base this member does not have: Unavailable naming why when the store may
  // be on its way (its shard changing holder), OK when its absence is the answer (NotFound
  // follows).
  virtual absl::Status Absent(const std::string& tenant, const std::string& store) const = 0;
};

class ClusterBases final : public RemoteBases {
 public:
  // `locator`, `calls` and `engine` must outlive this object.
  ClusterBases(const BaseLocator* locator, MemberCalls* calls, Engine* engine)
      : locator_(locator), calls_(calls), engine_(engine) {}

  // RemoteBases, for the engine.
  absl::StatusOr<std::optional<ExportedBase>> Read(const std::string& tenant,
                                                   const std::string& store,
                                                   bool for_create) override;
  absl::Status CheckNoDependantsElsewhere(const std::string& name) override;

  // Answers another member's ClusterBase call from this member's stores (a READ of a cold
  // store loads it).
  absl::Status Answer(const adapt::v1::ClusterBaseRequest& request,
                      adapt::v1::ClusterBaseResponse* response);

 private:
  const BaseLocator* const locator_;
  MemberCalls* const calls_;
  Engine* const engine_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_
