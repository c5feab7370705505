#include "server/cluster/static_membership.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"

namespace adaptd::cluster {

absl::StatusOr<std::unique_ptr<StaticMembership>> StaticMembership::Create(
    Membership configured, const std::set<std::string>& draining) {
  ASSIGN_OR_RETURN(Membership current, configured.Draining(draining));
  return std::unique_ptr<StaticMembership>(new StaticMembership(
      std::move(configured), std::make_shared<const Membership>(std::move(current))));
}

absl::Status StaticMembership::SetDraining(const std::string& member, bool draining,
                                           const Record& record) {
  if (configured_.Find(member) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("member: \"", member, "\" is not among the cluster's members (",
                     absl::StrJoin(configured_.members(), ", ",
                                   [](std::string* out, const Member& m) { out->append(m.name); }),
                     ")"));
  }
  return feed_.Update([&](const std::shared_ptr<const Membership>& current)
                          -> absl::StatusOr<std::shared_ptr<const Membership>> {
    std::set<std::string> names = current->draining();
    if (draining) {
      names.insert(member);
    } else {
      names.erase(member);
    }
    if (names == current->draining()) return std::shared_ptr<const Membership>();  // so already
    ASSIGN_OR_RETURN(Membership next, configured_.Draining(names));
    if (record != nullptr) RETURN_IF_ERROR(record(next));
    return std::make_shared<const Membership>(std::move(next));
  });
}

}  // namespace adaptd::cluster
