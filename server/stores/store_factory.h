// Builds stores from a spec or a snapshot, for every kind registered in StoreKinds
// (store_kind.h).
#ifndef ADAPTD_SERVER_STORES_STORE_FACTORY_H_
#define ADAPTD_SERVER_STORES_STORE_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "kernels/backend.h"
#include "server/stores/store.h"
#include "server/stores/store_state.h"

namespace adaptd {

// Validates `spec` (errors name the field, e.g. "spec.faast.rcond"), fills defaults and builds
// an empty store of its kind. `backend` must outlive the store.
absl::StatusOr<std::unique_ptr<Store>> CreateStore(const adapt::v1::StoreSpec& spec,
                                                   kernels::Backend* backend);

// Rebuilds a store from Store::Snapshot() output; a snapshot that does not hold together
// (kind, sizes, values) answers InvalidArgument naming "snapshot.<field>". A store that had a
// published version publishes it again before returning.
absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    kernels::Backend* backend);

// The same for a snapshot whose arrays travel in `arrays` (a decoded format-2 file,
// server/stores/snapshot_file.h); `arrays` must outlive the call only. A kind without
// restore_arrays (store_kind.h) refuses sections.
absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot& snapshot,
                                                    const StateArrays& arrays,
                                                    kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORE_FACTORY_H_
