// Builds stores from a spec or a snapshot; the one place that knows every store kind.
#ifndef ADAPTD_SERVER_STORES_STORE_FACTORY_H_
#define ADAPTD_SERVER_STORES_STORE_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "kernels/backend.h"
#include "server/stores/store.h"

namespace adaptd {

// Validates `spec` (errors name the field, e.g. "spec.faast.rcond"), fills defaults and builds
// an empty store. `backend` must outlive the store. Falcon and FwPKM answer Unimplemented.
absl::StatusOr<std::unique_ptr<Store>> CreateStore(const adapt::v1::StoreSpec& spec,
                                                   kernels::Backend* backend);

// Rebuilds a store from Store::Snapshot() output; a snapshot that does not hold together
// (sizes, values) answers InvalidArgument. A store that had a published version publishes it
// again before returning.
absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORE_FACTORY_H_
