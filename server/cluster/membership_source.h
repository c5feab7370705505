// MembershipSource: where a member learns the membership it routes by (docs/CLUSTER_ETCD.md),
// announces each change of it, and says until when this member's ownership under it is valid.
// ClusterRegistry (members registered in etcd under leases that lapse) says its ownership ends
// at the last acknowledged keep-alive's send time + TTL - a margin.
//
// MembershipFeed is the part every source shares: the current membership and its
// subscribers, with the delivery guarantees of Watch.
//
// Thread-safety: every method of a source and of a feed may be called concurrently.
// Ownership: a Subscription must be destroyed before its source.
#ifndef ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_H_
#define ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/cluster/membership.h"

namespace adaptd::cluster {

// Ends a Watch when destroyed: once the destructor returned, its callback never runs again
// (a delivery under way is waited for). Must not be destroyed from inside its own callback.
class Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  Subscription(Subscription&& other) noexcept : cancel_(std::exchange(other.cancel_, nullptr)) {}
  Subscription& operator=(Subscription&& other) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription() { Cancel(); }

  void Cancel();

 private:
  std::function<void()> cancel_;
};

using MembershipCallback = std::function<void(std::shared_ptr<const Membership>)>;

class MembershipSource {
 public:
  virtual ~MembershipSource() = default;

  // The membership this member routes by now (never null).
  virtual std::shared_ptr<const Membership> Current() const = 0;
  // Until when this member's ownership under Current() is valid (calls at or past it are
  // refused): absl::InfiniteFuture() for a source whose ownership never lapses.
  virtual absl::Time ValidUntil() const = 0;
  // Calls `changed` first with Current(), before Watch returns, then with each new membership
  // (drains included) in the order they became current: one call at a time, never two at
  // once, and none once the Subscription is destroyed. While `changed` runs, Current() is the
  // membership it was given. `changed` must not call Watch, change the source, or destroy its
  // own Subscription (they wait for the delivery under way).
  virtual Subscription Watch(MembershipCallback changed) = 0;
};

// The current membership and its subscribers; sources publish through Update.
class MembershipFeed {
 public:
  explicit MembershipFeed(std::shared_ptr<const Membership> initial);

  std::shared_ptr<const Membership> Current() const ABSL_LOCKS_EXCLUDED(state_mu_);
  Subscription Watch(MembershipCallback changed) ABSL_LOCKS_EXCLUDED(deliver_mu_);

  // `next` computes the new membership from the current one, one Update at a time: null for
  // no change, or an error, which Update returns with nothing published. A new membership is
  // Current() and delivered to every subscriber before Update returns.
  using Next = absl::FunctionRef<absl::StatusOr<std::shared_ptr<const Membership>>(
      const std::shared_ptr<const Membership>& current)>;
  absl::Status Update(Next next) ABSL_LOCKS_EXCLUDED(deliver_mu_, state_mu_);

 private:
  void Unsubscribe(uint64_t id) ABSL_LOCKS_EXCLUDED(deliver_mu_);

  // Held while a membership is computed and delivered, and while subscribers come and go:
  // deliveries are serial and none reaches a removed subscriber.
  absl::Mutex deliver_mu_ ABSL_ACQUIRED_BEFORE(state_mu_);
  std::map<uint64_t, MembershipCallback> subscribers_ ABSL_GUARDED_BY(deliver_mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(deliver_mu_) = 0;

  mutable absl::Mutex state_mu_;
  std::shared_ptr<const Membership> current_ ABSL_GUARDED_BY(state_mu_);
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_H_
