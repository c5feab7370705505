// The checks every store kind's snapshot validator makes on its state message, with one
// wording: "snapshot.<kind>.<field>: <why>" (InvalidArgument). Stateless; thread-safe.
#ifndef ADAPTD_SERVER_STORES_SNAPSHOT_CHECKS_H_
#define ADAPTD_SERVER_STORES_SNAPSHOT_CHECKS_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace adaptd {

class SnapshotChecks {
 public:
  // `kind`: the state field of StoreSnapshot ("faast", "falcon", ...).
  explicit SnapshotChecks(absl::string_view kind) : prefix_(absl::StrCat("snapshot.", kind, ".")) {}

  absl::Status Bad(absl::string_view field, absl::string_view why) const {
    return absl::InvalidArgumentError(absl::StrCat(prefix_, field, ": ", why));
  }

  // A repeated field holds exactly `expected` entries.
  template <typename Repeated>
  absl::Status Size(const Repeated& values, int64_t expected, absl::string_view field) const {
    if (static_cast<int64_t>(values.size()) == expected) return absl::OkStatus();
    return Bad(field, absl::StrCat("has ", values.size(), " entries, expected ", expected));
  }

  // Every entry of a repeated float or double field is finite.
  template <typename Repeated>
  absl::Status Finite(const Repeated& values, absl::string_view field) const {
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
      if (!std::isfinite(values[i])) {
        return Bad(field, absl::StrCat("entry ", i, " is not finite"));
      }
    }
    return absl::OkStatus();
  }

  // Both: `expected` finite entries.
  template <typename Repeated>
  absl::Status FiniteOfSize(const Repeated& values, int64_t expected,
                            absl::string_view field) const {
    if (absl::Status s = Size(values, expected, field); !s.ok()) return s;
    return Finite(values, field);
  }

  // Label names: non-empty and distinct; an error names the entry ("labels[3]").
  template <typename Repeated>
  absl::Status Labels(const Repeated& labels, absl::string_view field = "labels") const {
    absl::flat_hash_set<std::string> seen;
    for (int64_t i = 0; i < static_cast<int64_t>(labels.size()); ++i) {
      const std::string entry = absl::StrCat(field, "[", i, "]");
      if (labels[i].empty()) return Bad(entry, "is empty");
      if (!seen.insert(std::string(labels[i])).second) {
        return Bad(entry, absl::StrCat("repeats '", labels[i], "'"));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string prefix_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_SNAPSHOT_CHECKS_H_
