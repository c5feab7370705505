// ClusterRegistry against a real etcd (one member, started once for the binary): the
// membership source contract with three registries in one process, and the registration's own
// cases: a name kept alive elsewhere refused, a killed member's record gone with its lease, a
// restart within the grace keeping the record and what moved with it, the settle time, and a
// drain asked of another member.
#include "server/cluster/cluster_registry.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/cluster/cluster_etcd_test_util.h"
#include "server/cluster/membership_source_contract.h"

namespace adaptd::cluster {
namespace {

using adapt::v1::ClusterMemberRecord;

// Members a (this member), b and c, registered and READY, settle time 0: b and c own stores
// while READY and not while DRAINING.
class RegistryHarness {
 public:
  RegistryHarness() {
    const std::string prefix = SharedEtcd::Get().NewPrefix();
    for (const char* name : {"a", "b", "c"}) {
      registries_[name] = Register(OptionsOf(prefix, name));
      if (registries_[name] == nullptr) return;
      EXPECT_TRUE(registries_[name]->SetState(ClusterMemberRecord::READY).ok());
    }
    EXPECT_TRUE(Eventually([&] {
      std::shared_ptr<const Membership> m = source().Current();
      return Owns(*m, "a") && Owns(*m, "b") && Owns(*m, "c");
    }));
  }
  MembershipSource& source() { return *registries_.at("a"); }
  void SetOwning(const std::string& name, bool owning) {
    ASSERT_TRUE(registries_.at(name)
                    ->SetState(owning ? ClusterMemberRecord::READY : ClusterMemberRecord::DRAINING)
                    .ok());
    ASSERT_TRUE(Eventually([&] { return Owns(*source().Current(), name) == owning; }));
  }

 private:
  std::map<std::string, std::unique_ptr<ClusterRegistry>> registries_;
};

using Registries = ::testing::Types<RegistryHarness>;
INSTANTIATE_TYPED_TEST_SUITE_P(ClusterRegistry, MembershipSourceContract, Registries);
// The leased suite drives keep-alives and a clock by hand (FakeMembership); the registry's
// lease is etcd's, renewed by its keeper: its cases are the tests below (ValidUntil, a lapsed
// member leaving and registering again).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LeasedMembershipSourceContract);

// Each test registers under a prefix of its own; StartPair registers members a and b there.
class ClusterRegistryTest : public ::testing::Test {
 protected:
  void StartPair(absl::Duration settle = absl::ZeroDuration()) {
    a_ = Register(OptionsOf(prefix_, "a", settle));
    b_ = Register(OptionsOf(prefix_, "b", settle));
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
  }
  const std::string prefix_ = SharedEtcd::Get().NewPrefix();
  std::unique_ptr<ClusterRegistry> a_, b_;
};

TEST_F(ClusterRegistryTest, ValidUntilIsTheLeasesLessAMarginAndAdvances) {
  std::unique_ptr<ClusterRegistry> a = Register(OptionsOf(prefix_, "a"));
  ASSERT_NE(a, nullptr);
  const absl::Time first = a->ValidUntil();
  EXPECT_GT(first, absl::Now());
  EXPECT_LE(first, absl::Now() + kTtl - kTtl / 4);  // the margin: min(1 s, TTL/4)
  absl::SleepFor(kTtl);                             // keep-alives every third of the TTL
  EXPECT_GT(a->ValidUntil(), first + kTtl / 2);
  EXPECT_GT(a->ValidUntil(), absl::Now());
}

TEST_F(ClusterRegistryTest, ANameKeptAliveElsewhereIsRefused) {
  std::unique_ptr<ClusterRegistry> first = Register(OptionsOf(prefix_, "m1"));
  ASSERT_NE(first, nullptr);
  ClusterRegistry::Options second = OptionsOf(prefix_, "m1");
  second.register_wait = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<ClusterRegistry>> refused =
      ClusterRegistry::Start(SharedEtcd::Get().client(), second);
  ASSERT_TRUE(absl::IsAlreadyExists(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("cluster.self: member 'm1'"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("m1.adaptd:50051"), std::string::npos);
  EXPECT_EQ(first->Members().count("m1"), 1u);
}

TEST_F(ClusterRegistryTest, AKilledMembersRecordGoesWithItsLeaseAndTheNameIsFreeAgain) {
  StartPair();
  ASSERT_TRUE(Eventually([&] { return a_->Members().count("b") == 1; }));
  b_.reset();  // as a SIGKILL: nothing revoked, no keep-alive sent any more
  ASSERT_TRUE(Eventually([&] { return a_->Members().count("b") == 0; }));
  EXPECT_EQ(a_->Current()->Find("b"), nullptr);
  std::unique_ptr<ClusterRegistry> again = Register(OptionsOf(prefix_, "b"));
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(again->restarted());
  ASSERT_TRUE(Eventually([&] { return a_->Members().count("b") == 1; }));
}

TEST_F(ClusterRegistryTest, ARestartWithinTheGraceKeepsTheRecordAndWhatMovedWithIt) {
  StartPair();
  ASSERT_TRUE(b_->SetState(ClusterMemberRecord::READY).ok());
  etcd::EtcdClient& client = *SharedEtcd::Get().client();
  // A key under b's lease, as a claim is.
  const std::string claim = absl::StrCat(prefix_, "claims/0007");
  etcdserverpb::PutRequest put;
  put.set_key(claim);
  put.set_value("b");
  put.set_lease(b_->lease_id());
  absl::StatusOr<etcdserverpb::PutResponse> written = client.Put(put);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_TRUE(
      b_->HandOverForRestart(absl::Seconds(30), {{claim, "b", written->header().revision()}}).ok());
  b_.reset();
  absl::SleepFor(kTtl + absl::Seconds(1));  // b's own lease lapsed
  std::map<std::string, RegisteredMember> members = a_->Members();
  ASSERT_EQ(members.count("b"), 1u);
  EXPECT_EQ(members["b"].record.state(), ClusterMemberRecord::RESTARTING);
  etcdserverpb::RangeRequest read;
  read.set_key(claim);
  absl::StatusOr<etcdserverpb::RangeResponse> kept = client.Range(read);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->kvs_size(), 1);
  EXPECT_EQ(kept->kvs(0).value(), "b");
  // The restarted process takes the record over under its new lease.
  std::unique_ptr<ClusterRegistry> back = Register(OptionsOf(prefix_, "b"));
  ASSERT_NE(back, nullptr);
  EXPECT_TRUE(back->restarted());
  ASSERT_TRUE(Eventually([&] {
    std::map<std::string, RegisteredMember> now = a_->Members();
    return now.count("b") == 1 && now["b"].record.state() == ClusterMemberRecord::STARTING &&
           now["b"].record.lease_id() == back->lease_id();
  }));
  // A record RESTARTING keeps b in a's membership: nothing it wins moves meanwhile.
  EXPECT_NE(a_->Current()->Find("b"), nullptr);
}

TEST_F(ClusterRegistryTest, AMemberIsEligibleOnceReadyForTheSettleTime) {
  const absl::Duration settle = absl::Milliseconds(1500);
  StartPair(settle);
  ASSERT_TRUE(a_->SetState(ClusterMemberRecord::READY).ok());
  ASSERT_TRUE(Eventually([&] { return a_->Eligible() == std::vector<std::string>{"a"}; }));
  std::vector<std::shared_ptr<const Membership>> seen;
  absl::Mutex mu;
  Subscription watch = a_->Watch([&](std::shared_ptr<const Membership> m) {
    absl::MutexLock lock(&mu);
    seen.push_back(std::move(m));
  });
  const absl::Time ready = absl::Now();
  ASSERT_TRUE(b_->SetState(ClusterMemberRecord::READY).ok());
  ASSERT_TRUE(
      Eventually([&] { return a_->Members()["b"].record.state() == ClusterMemberRecord::READY; }));
  EXPECT_EQ(a_->Eligible(), std::vector<std::string>{"a"});
  EXPECT_TRUE(a_->Current()->IsDraining("b"));
  ASSERT_TRUE(Eventually([&] { return !a_->Current()->IsDraining("b"); }));
  EXPECT_GE(absl::Now() - ready, settle);
  EXPECT_EQ(a_->Eligible(), (std::vector<std::string>{"a", "b"}));
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(seen.empty());
  EXPECT_FALSE(seen.back()->IsDraining("b"));
}

TEST_F(ClusterRegistryTest, ADrainAskedOfAnotherMemberKeepsItsLease) {
  StartPair();
  ASSERT_TRUE(b_->SetState(ClusterMemberRecord::READY).ok());
  ASSERT_TRUE(a_->SetStateOf("b", ClusterMemberRecord::DRAINING).ok());
  ASSERT_TRUE(Eventually([&] {
    std::map<std::string, RegisteredMember> now = b_->Members();
    return now["b"].record.state() == ClusterMemberRecord::DRAINING;
  }));
  EXPECT_EQ(b_->Members()["b"].record.lease_id(), b_->lease_id());
  absl::Status missing = a_->SetStateOf("nobody", ClusterMemberRecord::DRAINING);
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  // Leaving revokes the lease: the record goes at once.
  ASSERT_TRUE(b_->Leave().ok());
  ASSERT_TRUE(Eventually([&] { return a_->Members().count("b") == 0; }));
}

}  // namespace
}  // namespace adaptd::cluster
