#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/fake_membership.h"
#include "server/cluster/membership_source_contract.h"

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

using Sources = ::testing::Types<FakeHarness>;
INSTANTIATE_TYPED_TEST_SUITE_P(Membership, MembershipSourceContract, Sources);
using LeasedSources = ::testing::Types<FakeHarness>;
INSTANTIATE_TYPED_TEST_SUITE_P(LeasedMembership, LeasedMembershipSourceContract, LeasedSources);

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
