// EtcdDurability as a member of a cluster on etcd (Options::shards): the durability contract
// with every store's keys under its shard and its writes fenced by the shard's claim (8 shards,
// all held by the member the harness opens), and what a cluster adds: a shard closed by one
// member and opened by another with its stores as acknowledged, and a holder whose claims
// lapsed (another member claimed the shard meanwhile) refused and changing nothing.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/durability/durability_contract.h"
#include "server/durability/etcd_durability.h"
#include "server/durability/testing/etcd_harness.h"

namespace adaptd {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(EtcdSharded, DurabilityContract, EtcdShardedHarness);

class ShardedEtcdDurabilityTest : public DurabilityContract<EtcdShardedHarness> {
 protected:
  int ShardOf(const std::string& name) { return harness_->fences()->ShardOf("t", name); }

  // Another member holding `shard`, opened on it; its recovered stores by name, loaded.
  std::unique_ptr<EtcdDurability> OtherMemberWith(int shard,
                                                  std::map<std::string, std::string>* states) {
    absl::StatusOr<std::shared_ptr<TestShardFences>> fences = harness_->NewFences(8);
    EXPECT_TRUE(fences.ok()) << fences.status();
    if (!fences.ok()) return nullptr;
    absl::Status taken = (*fences)->Take(shard);
    EXPECT_TRUE(taken.ok()) << taken;
    absl::StatusOr<std::unique_ptr<EtcdDurability>> other = harness_->OpenMember(*fences);
    EXPECT_TRUE(other.ok()) << other.status();
    if (!other.ok()) return nullptr;
    std::vector<RecoveredStore> recovered;
    absl::Status opened = (*other)->OpenShard(shard, &recovered);
    EXPECT_TRUE(opened.ok()) << opened;
    for (RecoveredStore& r : recovered) {
      absl::StatusOr<std::shared_ptr<Store>> loaded =
          r.store != nullptr ? r.store : (*other)->Load(r.tenant, r.name);
      EXPECT_TRUE(loaded.ok()) << loaded.status();
      if (loaded.ok()) (*states)[r.name] = StateOf(**loaded);
    }
    other_fences_ = *fences;
    return *std::move(other);
  }

  std::shared_ptr<TestShardFences> other_fences_;
};

TEST_F(ShardedEtcdDurabilityTest, AShardClosedByOneMemberOpensAtAnotherAsAcknowledged) {
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) names.push_back(absl::StrCat("s", i));
  for (const std::string& name : names) {
    ASSERT_NE(Create(name), nullptr);
    ASSERT_TRUE(Write(name, Batch(3, 7), {name + "-1"}).ok());
  }
  // Every key of the stores lives under its shard's root.
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::vector<mvccpb::KeyValue>> flat =
      (*client)->RangePrefix(harness_->EtcdPrefix() + "stores/", /*keys_only=*/true);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_TRUE(flat->empty());
  const int shard = ShardOf("s0");
  absl::StatusOr<std::vector<mvccpb::KeyValue>> under = (*client)->RangePrefix(
      absl::StrFormat("%sshards/%04x/stores/", harness_->EtcdPrefix(), shard), true);
  ASSERT_TRUE(under.ok()) << under.status();
  std::set<std::string> of_shard;
  for (const std::string& name : names) {
    if (ShardOf(name) == shard) of_shard.insert(name);
  }
  EXPECT_EQ(under->size(), of_shard.size());
  const std::map<std::string, std::string> before = States();
  std::vector<std::string> closed;
  ASSERT_TRUE(static_cast<EtcdDurability*>(durability_.get())->CloseShard(shard, &closed).ok());
  std::set<std::string> closed_names;
  for (const std::string& key : closed) closed_names.insert(key.substr(2));  // "t/NAME"
  EXPECT_EQ(closed_names, of_shard);
  ASSERT_TRUE(harness_->fences()->Release(shard).ok());
  // This member no longer writes the shard's stores.
  absl::StatusOr<CommitResult> refused = Write("s0", Batch(1, 8), {"after-close"});
  EXPECT_FALSE(refused.ok());

  std::map<std::string, std::string> states;
  std::unique_ptr<EtcdDurability> other = OtherMemberWith(shard, &states);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(states.size(), of_shard.size());
  for (const auto& [name, state] : states) EXPECT_EQ(state, before.at(name)) << name;
  // Stores of other shards stay with this member.
  for (const std::string& name : names) {
    if (of_shard.count(name) == 0) {
      EXPECT_TRUE(Write(name, Batch(1, 9), {name + "-2"}).ok());
    }
  }
  other->Close();
}

TEST_F(ShardedEtcdDurabilityTest, AHolderWhoseClaimLapsedIsRefusedAndChangesNothing) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(3, 1), {"before"}).ok());
  const std::string acknowledged = States().at("a");
  // This member's lease lapses (it does not know), and another member claims a's shard.
  harness_->fences()->Revoke();
  std::map<std::string, std::string> states;
  std::unique_ptr<EtcdDurability> other = OtherMemberWith(ShardOf("a"), &states);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(states.count("a"), 1u);
  EXPECT_EQ(states.at("a"), acknowledged);
  // The stale holder's write fails its fence and is not applied.
  std::atomic<int> applied{0};
  absl::StatusOr<CommitResult> stale =
      Write("a", Batch(2, 2), {"stale"}, /*forget=*/false, /*fence=*/nullptr, &applied);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(IsOwnershipLost(stale.status())) << stale.status();
  EXPECT_EQ(applied.load(), 0);
  EXPECT_EQ(StateOf(*stores_["a"]), acknowledged);
  // What the new holder reads of the log holds nothing of it.
  std::vector<RecoveredStore> again;
  std::vector<std::string> closed;
  ASSERT_TRUE(other->CloseShard(ShardOf("a"), &closed).ok());
  ASSERT_TRUE(other->OpenShard(ShardOf("a"), &again).ok());
  absl::StatusOr<std::shared_ptr<Store>> reread = other->Load("t", "a");
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(StateOf(**reread), acknowledged);
  EXPECT_FALSE(other->Applied("t", "a", reread->get(), "stale"));
  EXPECT_TRUE(other->Applied("t", "a", reread->get(), "before"));
  other->Close();
}

}  // namespace
}  // namespace adaptd
