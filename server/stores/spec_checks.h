// Checks on a StoreSpec that every store kind shares. Pure functions; thread-safe.
#ifndef ADAPTD_SERVER_STORES_SPEC_CHECKS_H_
#define ADAPTD_SERVER_STORES_SPEC_CHECKS_H_

#include "absl/status/status.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

// InvalidArgument naming `spec.<params>` when the spec carries parameters of another kind
// than `spec.kind()` (no parameters at all is fine: defaults apply).
absl::Status CheckParamsMatchKind(const adapt::v1::StoreSpec& spec);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_SPEC_CHECKS_H_
