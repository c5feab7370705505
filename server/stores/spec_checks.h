// Checks on a StoreSpec that every store kind shares. Pure functions; thread-safe.
#ifndef ADAPTD_SERVER_STORES_SPEC_CHECKS_H_
#define ADAPTD_SERVER_STORES_SPEC_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

// The largest key dimension any store kind accepts (a kind may set a lower one).
inline constexpr uint32_t kMaxStoreDim = 65536;

// InvalidArgument naming `spec.<params>` when the spec carries the parameters of another kind
// than `spec.kind()` (no parameters at all is fine: defaults apply). The parameters of a kind
// are the StoreSpec.params field named like the kind (store_kind.h).
absl::Status CheckParamsMatchKind(const adapt::v1::StoreSpec& spec);

// What every kind's normalizer checks first: the spec is of `kind` (named `kind_name` in the
// error), carries no other kind's parameters, and its dimension is at most `max_dim`.
absl::Status CheckSpecKindAndDim(const adapt::v1::StoreSpec& spec, adapt::v1::StoreKind kind,
                                 const char* kind_name, uint32_t max_dim);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_SPEC_CHECKS_H_
