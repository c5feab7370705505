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

// The one check of a spec's output, for a kind that serves vectors up to `max_vector_dim` wide
// and (`next`) next-item outputs or not (`kind_name` says which kind refuses them): a labels
// output (the default, filled in when the kind is unset) and a next output take no width; a
// vector output takes a width in [1, max_vector_dim]. InvalidArgument naming
// `spec.output.<field>`.
absl::Status NormalizeOutput(const adapt::v1::OutputSpec& output, bool next,
                             uint32_t max_vector_dim, const char* kind_name,
                             adapt::v1::OutputSpec* normalized);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_SPEC_CHECKS_H_
