// RemoteBases: how the engine reaches base stores (docs/BASE_STORES.md) that another member of
// a cluster holds (docs/CLUSTER.md, "Base stores"). The cluster layer sets one on the engine; a
// single server has none and reads every base where it is. No gRPC header.
#ifndef ADAPTD_SERVER_CORE_REMOTE_BASES_H_
#define ADAPTD_SERVER_CORE_REMOTE_BASES_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/store.h"

namespace adaptd {

// A base as a new store (or a refresh_base compile) takes it: its spec, for the checks, and its
// published read-out, or why it has none to give.
struct ExportedBase {
  adapt::v1::StoreSpec spec;
  absl::Status readout_status;
  BaseReadout readout;  // when readout_status is OK
  bool remote = false;  // read from another member
};

class RemoteBases {
 public:
  virtual ~RemoteBases() = default;
  // Base tenant/store: nullopt when this member owns it (read it here); otherwise what the
  // member holding it answers (NotFound when it has no such store; Unavailable when it cannot
  // be asked, or the store is in motion). `for_create`: a create from it follows, so that
  // member keeps it from deletion for a while (StoreDirectory::kBaseLease).
  virtual absl::StatusOr<std::optional<ExportedBase>> Read(const std::string& tenant,
                                                           const std::string& store,
                                                           bool for_create) = 0;
  // Before deleting `name` ("tenant/store") here: FailedPrecondition naming the stores created
  // from it that other members hold (those that answer).
  virtual absl::Status CheckNoDependantsElsewhere(const std::string& name) = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_REMOTE_BASES_H_
