// Validation of tenant and store names: 1-63 characters of [A-Za-z0-9._-], starting with a
// letter or a digit. Names appear in paths and metric labels, so the alphabet is kept small.
#ifndef ADAPTD_SERVER_BASE_NAMES_H_
#define ADAPTD_SERVER_BASE_NAMES_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace adaptd {

inline constexpr size_t kMaxNameLength = 63;

// InvalidArgument naming `field` and the reason when `name` is not a valid name.
absl::Status ValidateName(absl::string_view field, absl::string_view name);

// Both names of a store: InvalidArgument naming `tenant` or `store`.
absl::Status ValidateStoreNames(absl::string_view tenant, absl::string_view store);

// The (tenant, store) a StoreSpec.base names: "TENANT/STORE", or "STORE" of `tenant` (the
// creating one). InvalidArgument naming spec.base when either name is not valid.
absl::StatusOr<std::pair<std::string, std::string>> ParseBaseName(absl::string_view tenant,
                                                                  absl::string_view base);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_NAMES_H_
