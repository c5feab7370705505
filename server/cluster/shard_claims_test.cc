// ShardClaims against a real etcd (cluster_etcd_test_util.h), with members in one process,
// each a ClusterRegistry and its ShardClaims over 64 shards: every shard held once by its
// desired owner; a killed member's shards taken by the others; a restart within the grace
// moving nothing; a new member winning about a quarter and a drain giving them back; a member
// in its settle time taking nothing from the others; a claim whose lease ended counted a
// failover even while its holder still looks registered. A recorder of the hooks fails the test
// when a shard is acquired while another member still holds it.
#include "server/cluster/shard_claims.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/cluster/cluster_etcd_test_util.h"

namespace adaptd::cluster {
namespace {

using adapt::v1::ClusterMemberRecord;

constexpr int kShards = 64;

TEST(ShardMapTest, ShardsAndDesiredOwnersArePinned) {
  // Fixed by docs/CLUSTER_ETCD.md: every member of every version computes them alike.
  EXPECT_EQ(ShardOf("acme", "intents"), ShardOf("acme", "intents", 4096));
  EXPECT_EQ(ShardName(7), "0007");
  EXPECT_EQ(ShardName(4095), "0fff");
  EXPECT_NE(ShardOf("acme", "intents"), ShardOf("acme", "intentz"));
  // fnv1a64("a/b") mod 4096, by the definition.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : std::string("a/b")) h = (h ^ c) * 0x100000001b3ull;
  EXPECT_EQ(ShardOf("a", "b"), static_cast<int>(h % 4096));
  EXPECT_EQ(DesiredOwner({}, 3), "");
  EXPECT_EQ(DesiredOwner({"x"}, 3), "x");
  const std::string of_three = DesiredOwner({"a", "b", "c"}, 3);
  EXPECT_EQ(DesiredOwner({"c", "b", "a"}, 3), of_three) << "the order of the list does not matter";
  // Removing a member that does not own the shard changes nothing.
  std::vector<std::string> without;
  for (const char* m : {"a", "b", "c"}) {
    if (m != of_three) without.push_back(m);
  }
  EXPECT_EQ(DesiredOwner({of_three, without[0]}, 3), of_three);
}

// The hooks of every member: who holds each shard by the hooks, and what each member did.
class Recorder {
 public:
  ShardClaims::Hooks HooksOf(const std::string& member) {
    return {
        [this, member](int shard, int64_t fence, ClaimReason reason) {
          absl::MutexLock lock(&mu_);
          if (!holders_[shard].empty()) {
            ADD_FAILURE() << member << " acquired shard " << shard << " while "
                          << *holders_[shard].begin() << " held it";
          }
          holders_[shard].insert(member);
          acquired_[member][reason].push_back(shard);
          fences_[shard].push_back(fence);
        },
        [this, member](int shard) {
          absl::MutexLock lock(&mu_);
          holders_[shard].erase(member);
          ++released_[member];
          return absl::OkStatus();
        },
        [this, member](int shard) {
          absl::MutexLock lock(&mu_);
          holders_[shard].erase(member);
          ++lost_[member];
        },
    };
  }
  // A member gone without a word (as killed): it holds nothing by the hooks any more.
  void Forget(const std::string& member) {
    absl::MutexLock lock(&mu_);
    for (auto& [shard, holders] : holders_) holders.erase(member);
  }
  std::vector<int> Acquired(const std::string& member, ClaimReason reason) {
    absl::MutexLock lock(&mu_);
    return acquired_[member][reason];
  }
  size_t AcquiredCount(const std::string& member) {
    absl::MutexLock lock(&mu_);
    size_t n = 0;
    for (const auto& [reason, shards] : acquired_[member]) n += shards.size();
    return n;
  }
  std::vector<int64_t> Fences(int shard) {
    absl::MutexLock lock(&mu_);
    return fences_[shard];
  }

 private:
  absl::Mutex mu_;
  std::map<int, std::set<std::string>> holders_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::map<ClaimReason, std::vector<int>>> acquired_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::vector<int64_t>> fences_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> released_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> lost_ ABSL_GUARDED_BY(mu_);
};

class ShardClaimsTest : public ::testing::Test {
 protected:
  struct Node {
    std::unique_ptr<ClusterRegistry> registry;
    std::unique_ptr<ShardClaims> claims;
  };

  // Registers `name`, starts its claims and sets it READY.
  void Add(const std::string& name, absl::Duration settle = absl::ZeroDuration()) {
    Node& node = nodes_[name];
    node.registry = Register(OptionsOf(prefix_, name, settle));
    ASSERT_NE(node.registry, nullptr);
    ShardClaims::Options options;
    options.prefix = prefix_;
    options.shards = kShards;
    options.tick = absl::Milliseconds(100);
    absl::StatusOr<std::unique_ptr<ShardClaims>> claims = ShardClaims::Start(
        SharedEtcd::Get().client(), node.registry.get(), options, recorder_.HooksOf(name));
    ASSERT_TRUE(claims.ok()) << claims.status();
    node.claims = std::move(*claims);
    ASSERT_TRUE(node.registry->SetState(ClusterMemberRecord::READY).ok());
  }
  // Stops `name` as a SIGKILL would: nothing revoked, nothing released.
  void Kill(const std::string& name) {
    nodes_.erase(name);
    recorder_.Forget(name);
  }
  std::set<int> HeldBy(const std::string& name) {
    std::vector<int> held = nodes_.at(name).claims->Held();
    return {held.begin(), held.end()};
  }
  // Every node settled, and the nodes' held sets disjoint and covering every shard.
  bool AllSettled() {
    std::set<int> all;
    size_t total = 0;
    for (auto& [name, node] : nodes_) {
      if (!node.claims->Settled()) return false;
      std::vector<int> held = node.claims->Held();
      total += held.size();
      all.insert(held.begin(), held.end());
    }
    return total == kShards && all.size() == kShards;
  }
  // Every node counts `name` eligible (it saw `name` READY): until then the others are settled
  // without it.
  bool AllSee(const std::string& name) {
    for (auto& [node_name, node] : nodes_) {
      const std::vector<std::string> eligible = node.registry->Eligible();
      if (std::find(eligible.begin(), eligible.end(), name) == eligible.end()) return false;
    }
    return true;
  }
  // Each claim of `shard` had a fence above the one before (a re-claim is a new fence too).
  void ExpectRisingFences(int shard) {
    const std::vector<int64_t> fences = recorder_.Fences(shard);
    ASSERT_GE(fences.size(), 2u) << shard;
    for (size_t i = 1; i < fences.size(); ++i) EXPECT_LT(fences[i - 1], fences[i]) << shard;
  }
  std::map<int, std::string> Holders() {
    std::map<int, std::string> holders;
    for (auto& [name, node] : nodes_) {
      for (int shard : node.claims->Held()) holders[shard] = name;
    }
    return holders;
  }

  const std::string prefix_ = SharedEtcd::Get().NewPrefix();
  Recorder recorder_;
  std::map<std::string, Node> nodes_;
};

TEST_F(ShardClaimsTest, EveryShardIsHeldOnceByItsDesiredOwner) {
  for (const char* name : {"a", "b", "c"}) Add(name);
  ASSERT_TRUE(
      Eventually([&] { return AllSee("a") && AllSee("b") && AllSee("c") && AllSettled(); }));
  for (int shard = 0; shard < kShards; ++shard) {
    const std::string owner = DesiredOwner({"a", "b", "c"}, shard);
    EXPECT_EQ(HeldBy(owner).count(shard), 1u) << shard;
    for (auto& [name, node] : nodes_) {
      std::optional<ShardHolder> holder = node.claims->HolderOf(shard);
      ASSERT_TRUE(holder.has_value()) << shard;
      EXPECT_EQ(holder->member, owner);
      absl::StatusOr<int64_t> fence = node.claims->FenceOf(shard);
      if (name == owner) {
        ASSERT_TRUE(fence.ok()) << fence.status();
        EXPECT_EQ(*fence, holder->fence);
      } else {
        EXPECT_TRUE(absl::IsUnavailable(fence.status()));
        EXPECT_NE(fence.status().message().find("held by member '" + owner + "'"),
                  std::string::npos)
            << fence.status();
      }
    }
  }
  // The whole table (ClusterRoutes' source) agrees with HolderOf, at a revision no claim is
  // newer than.
  for (auto& [name, node] : nodes_) {
    const ShardClaims::Table table = node.claims->Holders();
    ASSERT_EQ(table.holders.size(), static_cast<size_t>(kShards));
    for (int shard = 0; shard < kShards; ++shard) {
      ASSERT_TRUE(table.holders[shard].has_value()) << shard;
      EXPECT_EQ(table.holders[shard]->member, node.claims->HolderOf(shard)->member);
      EXPECT_LE(table.holders[shard]->fence, table.revision) << shard;
    }
  }
  for (const char* name : {"a", "b", "c"}) {  // a healthy start: no failover, no restart
    EXPECT_TRUE(recorder_.Acquired(name, ClaimReason::kFailover).empty());
    EXPECT_TRUE(recorder_.Acquired(name, ClaimReason::kRestart).empty());
  }
}

TEST_F(ShardClaimsTest, AKilledMembersShardsAreTakenByTheOthers) {
  for (const char* name : {"a", "b", "c"}) Add(name);
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  const std::set<int> of_c = HeldBy("c");
  ASSERT_FALSE(of_c.empty());
  Kill("c");
  // After c's lease lapses (2 s), a and b hold every shard.
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  std::set<int> failed_over;
  for (const char* name : {"a", "b"}) {
    for (int shard : recorder_.Acquired(name, ClaimReason::kFailover)) failed_over.insert(shard);
  }
  EXPECT_EQ(failed_over, of_c);
  for (int shard : of_c) ExpectRisingFences(shard);
}

TEST_F(ShardClaimsTest, AClaimWhoseLeaseEndedIsAFailoverThoughItsHolderLooksRegistered) {
  // What a member sees for a moment when its members' table lags the claims' watch: the
  // claim's lease ended, yet its holder's record is still there. Here the holder's record lives
  // on under another lease than its claim, so that view lasts.
  std::unique_ptr<ClusterRegistry> c = Register(OptionsOf(prefix_, "c"));  // never READY
  ASSERT_NE(c, nullptr);
  etcd::EtcdClient& client = *SharedEtcd::Get().client();
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> lease = client.GrantLease(absl::Seconds(30));
  ASSERT_TRUE(lease.ok()) << lease.status();
  adapt::v1::ShardClaim claim;
  claim.set_member("c");
  claim.set_lease_id(lease->id());
  etcdserverpb::PutRequest put;
  put.set_key(absl::StrCat(prefix_, "claims/", ShardName(7)));
  put.set_value(claim.SerializeAsString());
  put.set_lease(lease->id());
  ASSERT_TRUE(client.Put(put).ok());
  for (const char* name : {"a", "b"}) Add(name);
  ASSERT_TRUE(Eventually([&] { return Holders().size() == kShards - 1u; }));
  EXPECT_EQ(Holders().count(7), 0u);
  ASSERT_TRUE(client.RevokeLease(lease->id()).ok());
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  std::set<int> failed_over;
  for (const char* name : {"a", "b"}) {
    for (int shard : recorder_.Acquired(name, ClaimReason::kFailover)) failed_over.insert(shard);
    const std::vector<int> moved = recorder_.Acquired(name, ClaimReason::kMove);
    EXPECT_EQ(std::count(moved.begin(), moved.end(), 7), 0) << name;  // b's from a may be
  }
  EXPECT_EQ(failed_over, std::set<int>{7});
}

TEST_F(ShardClaimsTest, ARestartWithinTheGraceMovesNothing) {
  for (const char* name : {"a", "b", "c"}) Add(name);
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  const std::map<int, std::string> before = Holders();
  const std::set<int> of_b = HeldBy("b");
  const size_t taken_by_others = recorder_.AcquiredCount("a") + recorder_.AcquiredCount("c");
  Node& b = nodes_.at("b");
  b.claims->Freeze();
  ASSERT_TRUE(b.registry->HandOverForRestart(absl::Seconds(30), b.claims->HeldKeys()).ok());
  Kill("b");
  absl::SleepFor(kTtl + absl::Seconds(1));  // b's own lease lapsed meanwhile
  EXPECT_EQ(recorder_.AcquiredCount("a") + recorder_.AcquiredCount("c"), taken_by_others)
      << "a or c took one of b's shards while b restarted";
  Add("b");
  EXPECT_TRUE(nodes_.at("b").registry->restarted());
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  EXPECT_EQ(Holders(), before);
  const std::vector<int> reclaimed = recorder_.Acquired("b", ClaimReason::kRestart);
  EXPECT_EQ(std::set<int>(reclaimed.begin(), reclaimed.end()), of_b);
  for (int shard : of_b) ExpectRisingFences(shard);
}

TEST_F(ShardClaimsTest, ANewMemberWinsAboutAQuarterAndADrainGivesThemBack) {
  for (const char* name : {"a", "b", "c"}) Add(name);
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  const std::map<int, std::string> of_three = Holders();
  Add("d");
  ASSERT_TRUE(Eventually([&] { return AllSee("d") && AllSettled(); }));
  const std::map<int, std::string> of_four = Holders();
  const std::set<int> of_d = HeldBy("d");
  EXPECT_GE(of_d.size(), kShards / 8u);
  EXPECT_LE(of_d.size(), kShards / 2u);
  for (int shard = 0; shard < kShards; ++shard) {
    if (of_d.count(shard) == 0) {
      EXPECT_EQ(of_four.at(shard), of_three.at(shard)) << shard;
    }
  }
  const std::vector<int> moved = recorder_.Acquired("d", ClaimReason::kMove);
  EXPECT_EQ(std::set<int>(moved.begin(), moved.end()), of_d);
  ASSERT_TRUE(nodes_.at("a").registry->SetStateOf("d", ClusterMemberRecord::DRAINING).ok());
  ASSERT_TRUE(Eventually([&] { return HeldBy("d").empty() && AllSettled(); }));
  EXPECT_EQ(Holders(), of_three);
}

TEST_F(ShardClaimsTest, AMemberInItsSettleTimeTakesNothingFromTheOthers) {
  const absl::Duration settle = absl::Milliseconds(1500);
  Add("a", settle);
  Add("b", settle);
  ASSERT_TRUE(Eventually([&] { return AllSettled(); }));
  const absl::Time ready = absl::Now();
  Add("c", settle);
  absl::SleepFor(settle / 2);
  EXPECT_TRUE(HeldBy("c").empty())
      << "new " << recorder_.Acquired("c", ClaimReason::kNew).size() << " move "
      << recorder_.Acquired("c", ClaimReason::kMove).size() << " failover "
      << recorder_.Acquired("c", ClaimReason::kFailover).size();
  ASSERT_TRUE(Eventually([&] { return !HeldBy("c").empty() && AllSettled(); }));
  EXPECT_GE(absl::Now() - ready, settle);
}

}  // namespace
}  // namespace adaptd::cluster
