// The contract every MembershipSource keeps (membership_source.h), as typed gtest suites that
// each implementation instantiates with a harness (test code; membership_source_test.cc runs
// them on FakeMembership, cluster_registry_test.cc on ClusterRegistry over a real etcd).
//
// MembershipSourceContract<H>: H() builds a source whose list is members a (this member), b
// and c, all owning stores; `MembershipSource& source()`; `SetOwning(name, owning)` makes b or
// c own stores or not (drained, or gone from the list) and returns once the source published
// the change (nothing when it is so already).
//
// LeasedMembershipSourceContract<H>, for sources whose ownership expires: in addition,
// `absl::Time Now()` (the clock ValidUntil is on), `Wait(duration)` (time passes),
// `absl::Duration ttl()`, `bool KeepAlive(name)` (renews a live lease) and `Register(name)`
// (a fresh lease, returning once the source published the change).
#ifndef ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_CONTRACT_H_
#define ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_CONTRACT_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/cluster/membership.h"
#include "server/cluster/membership_source.h"

namespace adaptd::cluster {

// Whether `name` is in the list and owns stores.
inline bool Owns(const Membership& m, const std::string& name) {
  return m.Find(name) != nullptr && !m.IsDraining(name);
}

template <typename H>
class MembershipSourceContract : public ::testing::Test {
 protected:
  H h_;
};

TYPED_TEST_SUITE_P(MembershipSourceContract);

TYPED_TEST_P(MembershipSourceContract, WatchStartsWithTheCurrentMembership) {
  MembershipSource& source = this->h_.source();
  std::vector<std::shared_ptr<const Membership>> got;
  Subscription watch = source.Watch([&](std::shared_ptr<const Membership> m) { got.push_back(m); });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], source.Current());
  EXPECT_EQ(got[0]->self().name, "a");
  for (const char* name : {"a", "b", "c"}) EXPECT_TRUE(Owns(*got[0], name)) << name;
}

TYPED_TEST_P(MembershipSourceContract, EachChangeIsDeliveredInOrderAndIsCurrentMeanwhile) {
  MembershipSource& source = this->h_.source();
  std::vector<std::shared_ptr<const Membership>> got, current_then;
  Subscription watch = source.Watch([&](std::shared_ptr<const Membership> m) {
    got.push_back(m);
    current_then.push_back(source.Current());
  });
  for (int i = 0; i < 6; ++i) {
    const bool owning = i % 2 == 1;
    this->h_.SetOwning("b", owning);
    ASSERT_EQ(got.size(), static_cast<size_t>(i) + 2);
    EXPECT_EQ(got.back(), source.Current());
    EXPECT_EQ(Owns(*got.back(), "b"), owning);
    EXPECT_TRUE(Owns(*got.back(), "c"));
  }
  EXPECT_EQ(got, current_then);
  this->h_.SetOwning("b", true);  // so already
  EXPECT_EQ(got.size(), 7u);
  EXPECT_EQ(got.back(), source.Current());
}

TYPED_TEST_P(MembershipSourceContract, NothingIsDeliveredOnceTheSubscriptionIsGone) {
  MembershipSource& source = this->h_.source();
  int first = 0, second = 0;
  auto watch = std::make_unique<Subscription>(
      source.Watch([&](std::shared_ptr<const Membership>) { ++first; }));
  Subscription other = source.Watch([&](std::shared_ptr<const Membership>) { ++second; });
  this->h_.SetOwning("b", false);
  EXPECT_EQ(first, 2);
  watch.reset();
  this->h_.SetOwning("b", true);
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 3);
  // A moved subscription still watches; one cancelled does not.
  Subscription moved = std::move(other);
  this->h_.SetOwning("c", false);
  EXPECT_EQ(second, 4);
  moved.Cancel();
  this->h_.SetOwning("c", true);
  EXPECT_EQ(second, 4);
}

// Changes from several threads, a subscriber leaving meanwhile, and readers of Current():
// deliveries never overlap, each is Current() while it runs, none comes after its
// subscription went, and the last delivered is Current().
TYPED_TEST_P(MembershipSourceContract, ConcurrentChangesDeliverOneAtATime) {
  MembershipSource& source = this->h_.source();
  std::atomic<int> inside{0}, overlaps{0}, stale{0}, late{0}, leaving_calls{0};
  std::atomic<bool> left{false}, done{false};
  std::shared_ptr<const Membership> last;  // written by deliveries only: one at a time
  Subscription watch = source.Watch([&](std::shared_ptr<const Membership> m) {
    if (inside.fetch_add(1) != 0) ++overlaps;
    if (source.Current() != m) ++stale;
    last = m;
    std::this_thread::yield();
    inside.fetch_sub(1);
  });
  auto leaving =
      std::make_unique<Subscription>(source.Watch([&](std::shared_ptr<const Membership>) {
        if (left.load()) ++late;
        ++leaving_calls;
      }));
  std::vector<std::thread> threads;
  for (const char* name : {"b", "c"}) {
    threads.emplace_back([&, name] {
      for (int i = 0; i < 200; ++i) this->h_.SetOwning(name, i % 2 == 1);
    });
  }
  std::atomic<int> bad_reads{0};
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!done.load()) {
        std::shared_ptr<const Membership> m = source.Current();
        if (m == nullptr || m->self().name != "a" || !Owns(*m, "a")) ++bad_reads;
      }
    });
  }
  while (leaving_calls.load() < 20) std::this_thread::yield();
  leaving.reset();
  left.store(true);
  threads[0].join();
  threads[1].join();
  done.store(true);
  threads[2].join();
  threads[3].join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(late.load(), 0);
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(last, source.Current());
  EXPECT_TRUE(Owns(*last, "b"));
  EXPECT_TRUE(Owns(*last, "c"));
}

REGISTER_TYPED_TEST_SUITE_P(MembershipSourceContract, WatchStartsWithTheCurrentMembership,
                            EachChangeIsDeliveredInOrderAndIsCurrentMeanwhile,
                            NothingIsDeliveredOnceTheSubscriptionIsGone,
                            ConcurrentChangesDeliverOneAtATime);

template <typename H>
class LeasedMembershipSourceContract : public ::testing::Test {
 protected:
  // Whether this member's ownership under the source's list holds now (what a member checks
  // before it serves a store).
  bool OwnershipValid() { return h_.Now() < h_.source().ValidUntil(); }

  H h_;
};

TYPED_TEST_SUITE_P(LeasedMembershipSourceContract);

TYPED_TEST_P(LeasedMembershipSourceContract, ValidUntilIsFiniteAndAdvancesOnRenewal) {
  MembershipSource& source = this->h_.source();
  const absl::Time before = source.ValidUntil();
  EXPECT_NE(before, absl::InfiniteFuture());
  EXPECT_GT(before, this->h_.Now());
  EXPECT_LE(before, this->h_.Now() + this->h_.ttl());
  const absl::Duration waited = this->h_.ttl() / 2;
  this->h_.Wait(waited);
  EXPECT_EQ(source.ValidUntil(), before) << "time alone moves nothing";
  ASSERT_TRUE(this->h_.KeepAlive("a"));
  EXPECT_GE(source.ValidUntil(), before + waited);
}

TYPED_TEST_P(LeasedMembershipSourceContract, PastValidUntilOwnershipLapsesUntilRegisteredAgain) {
  MembershipSource& source = this->h_.source();
  ASSERT_TRUE(this->OwnershipValid());
  // b and c renew; this member does not.
  while (this->OwnershipValid()) {
    ASSERT_TRUE(this->h_.KeepAlive("b"));
    ASSERT_TRUE(this->h_.KeepAlive("c"));
    this->h_.Wait(this->h_.ttl() / 4);
  }
  EXPECT_FALSE(this->OwnershipValid()) << "time alone gives no validity back";
  this->h_.Register("a");
  EXPECT_GT(source.ValidUntil(), this->h_.Now());
  EXPECT_TRUE(this->OwnershipValid());
}

TYPED_TEST_P(LeasedMembershipSourceContract, AMemberWhoseLeaseLapsesLeavesAndComesBack) {
  MembershipSource& source = this->h_.source();
  std::vector<std::shared_ptr<const Membership>> got;
  Subscription watch = source.Watch([&](std::shared_ptr<const Membership> m) { got.push_back(m); });
  const absl::Time lapses = this->h_.Now() + this->h_.ttl();
  while (this->h_.Now() < lapses) {
    ASSERT_TRUE(this->h_.KeepAlive("a"));
    ASSERT_TRUE(this->h_.KeepAlive("c"));
    ASSERT_EQ(got.size(), 1u) << "b left before its lease lapsed";
    this->h_.Wait(this->h_.ttl() / 4);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.back(), source.Current());
  EXPECT_EQ(got.back()->Find("b"), nullptr);
  EXPECT_TRUE(Owns(*got.back(), "c"));
  EXPECT_FALSE(this->h_.KeepAlive("b")) << "a lapsed lease is not renewed";
  this->h_.Register("b");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(Owns(*got.back(), "b"));
  EXPECT_EQ(got.back(), source.Current());
}

REGISTER_TYPED_TEST_SUITE_P(LeasedMembershipSourceContract, ValidUntilIsFiniteAndAdvancesOnRenewal,
                            PastValidUntilOwnershipLapsesUntilRegisteredAgain,
                            AMemberWhoseLeaseLapsesLeavesAndComesBack);

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_MEMBERSHIP_SOURCE_CONTRACT_H_
