// ClusterBases: base stores (docs/BASE_STORES.md) that live on another member of a cluster
// (docs/CLUSTER.md, "Base stores").
//
// A store and its base may have different owners (and a move may part them). A create from a
// base, or a refresh_base compile, reads the base's spec and published read-out (never its
// statistics) from the member that owns it (ClusterBase READ); a read for a create keeps the
// base from deletion there for StoreDirectory::kBaseLease. Deleting a store first asks every other
// member whether it holds stores created from it (ClusterBase DEPENDANTS), so a base in use is
// not deleted wherever its dependants are; a member that does not answer is passed over (its
// dependants keep their copy of the base), so one member down holds up no delete elsewhere.
// Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/cluster/handoff.h"
#include "server/core/engine.h"
#include "server/core/remote_bases.h"

namespace adaptd {

class ClusterBases final : public RemoteBases {
 public:
  // `handoff` and `engine` must outlive this object.
  ClusterBases(HandOff* handoff, Engine* engine) : handoff_(handoff), engine_(engine) {}

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
  HandOff* const handoff_;
  Engine* const engine_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_BASES_H_
