// FakeMembership (test code): a membership source whose members hold leases on a clock the
// test moves, as a lease-based source (etcd) would: a member registers under a lease of `ttl`
// and renews it by keep-alives; a lease not renewed lapses `ttl` after its last renewal, and
// the member leaves the list; registering again brings it back. This member's ownership ends
// `margin` before its own lease lapses (ValidUntil). This member stays in its own list
// (Membership needs it there): past ValidUntil its list is stale and routing refuses calls.
//
// Thread-safe. Registering, renewing and moving the clock publish under the feed's delivery
// lock, so they must not be called from a Watch callback.
#ifndef ADAPTD_SERVER_CLUSTER_FAKE_MEMBERSHIP_H_
#define ADAPTD_SERVER_CLUSTER_FAKE_MEMBERSHIP_H_

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/base/status_macros.h"
#include "server/cluster/membership.h"
#include "server/cluster/membership_source.h"

namespace adaptd::cluster {

class FakeMembership final : public MembershipSource {
 public:
  // `self` and `others` register at `start`.
  FakeMembership(const Member& self, const std::vector<Member>& others, absl::Duration ttl,
                 absl::Duration margin, absl::Time start = absl::FromUnixSeconds(1700000000))
      : self_(self.name),
        ttl_(ttl),
        margin_(margin),
        now_(start),
        feed_(std::make_shared<const Membership>(Initial(self, others))) {
    absl::MutexLock lock(&mu_);
    leases_[self.name] = {self, start + ttl};
    for (const Member& m : others) leases_[m.name] = {m, start + ttl};
  }

  std::shared_ptr<const Membership> Current() const override { return feed_.Current(); }
  absl::Time ValidUntil() const override {
    absl::MutexLock lock(&mu_);
    return leases_.at(self_).expires - margin_;
  }
  Subscription Watch(MembershipCallback changed) override {
    return feed_.Watch(std::move(changed));
  }

  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  absl::Duration ttl() const { return ttl_; }

  // Moves the clock; the members whose leases lapsed leave.
  void Advance(absl::Duration by) {
    Change([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { now_ += by; });
  }
  // A lease of `ttl` from now: the member joins, or rejoins after its lease lapsed.
  void Register(const Member& member) {
    Change([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      leases_[member.name] = {member, now_ + ttl_};
    });
  }
  // Renews a live lease (false, renewing nothing, once it lapsed: register again).
  bool KeepAlive(const std::string& name) {
    absl::MutexLock lock(&mu_);
    auto it = leases_.find(name);
    if (it == leases_.end() || it->second.expires <= now_) return false;
    it->second.expires = now_ + ttl_;
    return true;
  }
  // The member's lease ends now (a member leaving on purpose).
  void Revoke(const std::string& name) {
    Change([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (name != self_ && leases_.count(name) > 0) leases_[name].expires = now_;
    });
  }

 private:
  struct Lease {
    Member member;
    absl::Time expires;  // lapsed at and after it
  };

  // A test's mistake (a malformed member) ends the test binary.
  static void Check(const absl::Status& status) {
    if (status.ok()) return;
    std::fprintf(stderr, "FakeMembership: %s\n", status.ToString().c_str());
    std::abort();
  }

  static Membership Initial(const Member& self, std::vector<Member> others) {
    others.push_back(self);
    absl::StatusOr<Membership> m = Membership::Create(self.name, std::move(others));
    Check(m.status());
    return *std::move(m);
  }

  // Applies `change` to the leases, then publishes the list of the members with live leases
  // (and this one) when it differs from the current one.
  template <typename F>
  void Change(F change) {
    const absl::Status status =
        feed_.Update([&](const std::shared_ptr<const Membership>& current)
                         -> absl::StatusOr<std::shared_ptr<const Membership>> {
          std::vector<Member> live;
          {
            absl::MutexLock lock(&mu_);
            change();
            for (const auto& [name, lease] : leases_) {
              if (name == self_ || lease.expires > now_) live.push_back(lease.member);
            }
          }
          if (live == current->members()) return std::shared_ptr<const Membership>();
          ASSIGN_OR_RETURN(Membership next, Membership::Create(self_, std::move(live)));
          return std::make_shared<const Membership>(std::move(next));
        });
    Check(status);
  }

  const std::string self_;
  const absl::Duration ttl_;
  const absl::Duration margin_;
  mutable absl::Mutex mu_;
  std::map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  MembershipFeed feed_;
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_FAKE_MEMBERSHIP_H_
