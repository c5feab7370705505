#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/fake_membership.h"
#include "server/cluster/membership_source_contract.h"
#include "server/cluster/static_membership.h"

namespace adaptd::cluster {
namespace {

std::vector<Member> Members() {
  return {{"a", "127.0.0.1:7001"}, {"b", "127.0.0.1:7002"}, {"c", "127.0.0.1:7003"}};
}

Member Named(const std::string& name) {
  for (const Member& m : Members()) {
    if (m.name == name) return m;
  }
  ADD_FAILURE() << "no member " << name;
  return {};
}

std::unique_ptr<StaticMembership> MakeStatic(const std::set<std::string>& draining) {
  absl::StatusOr<std::unique_ptr<StaticMembership>> source =
      StaticMembership::Create(*Membership::Create("a", Members()), draining);
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? *std::move(source) : nullptr;
}

class StaticHarness {
 public:
  StaticHarness() : source_(MakeStatic({})) {}
  MembershipSource& source() { return *source_; }
  void SetOwning(const std::string& name, bool owning) {
    const absl::Status status = source_->SetDraining(name, !owning, nullptr);
    EXPECT_TRUE(status.ok()) << status;
  }

 private:
  std::unique_ptr<StaticMembership> source_;
};

constexpr absl::Duration kTtl = absl::Seconds(10);
constexpr absl::Duration kMargin = absl::Seconds(1);

class FakeHarness {
 public:
  FakeHarness() : source_(Named("a"), {Named("b"), Named("c")}, kTtl, kMargin) {}
  MembershipSource& source() { return source_; }
  void SetOwning(const std::string& name, bool owning) {
    if (owning) {
      source_.Register(Named(name));
    } else {
      source_.Revoke(name);
    }
  }
  absl::Time Now() const { return source_.Now(); }
  void Wait(absl::Duration d) { source_.Advance(d); }
  absl::Duration ttl() const { return source_.ttl(); }
  bool KeepAlive(const std::string& name) { return source_.KeepAlive(name); }
  void Register(const std::string& name) { source_.Register(Named(name)); }

 private:
  FakeMembership source_;
};

using Sources = ::testing::Types<StaticHarness, FakeHarness>;
INSTANTIATE_TYPED_TEST_SUITE_P(Membership, MembershipSourceContract, Sources);
using LeasedSources = ::testing::Types<FakeHarness>;
INSTANTIATE_TYPED_TEST_SUITE_P(LeasedMembership, LeasedMembershipSourceContract, LeasedSources);

TEST(StaticMembershipTest, IsTheConfiguredListLessTheDrainedAndNeverExpires) {
  std::unique_ptr<StaticMembership> source = MakeStatic({"b", "gone"});
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->ValidUntil(), absl::InfiniteFuture());
  EXPECT_EQ(source->Current()->draining(), std::set<std::string>{"b"});
  EXPECT_EQ(source->Current()->members(), Members());
  EXPECT_TRUE(source->configured().draining().empty());

  absl::StatusOr<std::unique_ptr<StaticMembership>> none =
      StaticMembership::Create(*Membership::Create("a", Members()), {"a", "b", "c"});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(StaticMembershipTest, ADrainIsPublishedOnlyOnceRecorded) {
  std::unique_ptr<StaticMembership> source = MakeStatic({});
  ASSERT_NE(source, nullptr);
  int delivered = 0;
  Subscription watch = source->Watch([&](std::shared_ptr<const Membership>) { ++delivered; });
  const std::shared_ptr<const Membership> before = source->Current();

  absl::Status status = source->SetDraining("b", true, [](const Membership& next) {
    EXPECT_EQ(next.draining(), std::set<std::string>{"b"});
    return absl::UnavailableError("disk full");
  });
  EXPECT_EQ(status, absl::UnavailableError("disk full"));
  EXPECT_EQ(source->Current(), before);
  EXPECT_EQ(delivered, 1);

  std::set<std::string> recorded;
  status = source->SetDraining("b", true, [&](const Membership& next) {
    recorded = next.draining();
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(recorded, std::set<std::string>{"b"});
  EXPECT_EQ(source->Current()->draining(), recorded);
  EXPECT_EQ(delivered, 2);
}

TEST(StaticMembershipTest, RefusesAStrangerAndADrainOfEveryMember) {
  std::unique_ptr<StaticMembership> source = MakeStatic({"b", "c"});
  ASSERT_NE(source, nullptr);
  absl::Status status = source->SetDraining("d", true, nullptr);
  EXPECT_EQ(status, absl::InvalidArgumentError(
                        "member: \"d\" is not among the cluster's members (a, b, c)"));
  status = source->SetDraining("a", true, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(source->Current()->IsDraining("a"));
}

TEST(FakeMembershipTest, OwnershipEndsAMarginBeforeTheLeaseLapses) {
  FakeMembership source(Named("a"), {Named("b")}, kTtl, kMargin);
  const absl::Time start = source.Now();
  EXPECT_EQ(source.ValidUntil(), start + kTtl - kMargin);
  source.Advance(kTtl - absl::Seconds(1));
  ASSERT_TRUE(source.KeepAlive("a"));
  EXPECT_EQ(source.ValidUntil(), start + 2 * kTtl - absl::Seconds(1) - kMargin);
  source.Advance(kTtl);
  EXPECT_FALSE(source.KeepAlive("a"));
  EXPECT_EQ(source.Current()->Find("b"), nullptr);
  EXPECT_NE(source.Current()->Find("a"), nullptr) << "this member stays in its own list";
}

}  // namespace
}  // namespace adaptd::cluster
