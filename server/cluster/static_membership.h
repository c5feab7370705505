// StaticMembership: the membership source of a static-list cluster (docs/CLUSTER.md,
// "Hand-off"): the configured members less those drained. A drain or its undoing publishes
// the new membership to the subscribers (HandOff); ownership never expires.
//
// Thread-safe; drains are applied one at a time.
#ifndef ADAPTD_SERVER_CLUSTER_STATIC_MEMBERSHIP_H_
#define ADAPTD_SERVER_CLUSTER_STATIC_MEMBERSHIP_H_

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/cluster/membership.h"
#include "server/cluster/membership_source.h"

namespace adaptd::cluster {

class StaticMembership final : public MembershipSource {
 public:
  // `configured`: the config's list (none draining); `draining`: the members drained (names
  // that are not members are ignored). FailedPrecondition when no member would own stores.
  static absl::StatusOr<std::unique_ptr<StaticMembership>> Create(
      Membership configured, const std::set<std::string>& draining);

  std::shared_ptr<const Membership> Current() const override { return feed_.Current(); }
  absl::Time ValidUntil() const override { return absl::InfiniteFuture(); }
  Subscription Watch(MembershipCallback changed) override {
    return feed_.Watch(std::move(changed));
  }

  // Whatever must hold before a new membership is published (a drain recorded durably); its
  // error stops the publication.
  using Record = std::function<absl::Status(const Membership& next)>;
  // Makes `member` drain (own no store) or, with `draining` false, own stores again, and
  // publishes the membership once `record` (nullable) accepted it. OK with nothing done when
  // it is so already; InvalidArgument for a name not among the members; FailedPrecondition
  // when no member would own stores.
  absl::Status SetDraining(const std::string& member, bool draining, const Record& record);

  // The configured list (none draining).
  const Membership& configured() const { return configured_; }

 private:
  StaticMembership(Membership configured, std::shared_ptr<const Membership> current)
      : configured_(std::move(configured)), feed_(std::move(current)) {}

  const Membership configured_;
  MembershipFeed feed_;
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_STATIC_MEMBERSHIP_H_
