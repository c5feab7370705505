// EtcdDurability's store counts as cluster members (Options::store_limits, docs/CLUSTER_ETCD.md
// "Quotas and base stores"), against a real etcd: members holding different shards create one
// tenant's stores at once and exactly max_stores succeed; the count follows deletes, re-creates,
// imports (one never acknowledged dropped at recovery) and failed creates; a count absent is
// made from the entries already there; a tenant without a limit writes no count.
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/durability/durability_contract.h"
#include "server/durability/etcd_durability.h"
#include "server/durability/testing/etcd_harness.h"
#include "server/quota/tenant_quotas.h"

namespace adaptd {
namespace {

constexpr int kShards = 8;

class EtcdStoreCountTest : public DurabilityContract<EtcdHarness> {
 protected:
  void TearDown() override {
    for (auto& member : members_) member->Close();
    members_.clear();
    DurabilityContract<EtcdHarness>::TearDown();
  }

  // Tenant t may hold `max_stores` stores; every other tenant any number.
  static std::shared_ptr<const TenantQuotas> Limits(uint64_t max_stores) {
    adapt::v1::ServerConfig config;
    (*config.mutable_tenant_quotas())["t"].set_max_stores(max_stores);
    absl::StatusOr<std::unique_ptr<TenantQuotas>> quotas = TenantQuotas::Create(config);
    EXPECT_TRUE(quotas.ok()) << quotas.status();
    return quotas.ok() ? std::shared_ptr<const TenantQuotas>(*std::move(quotas)) : nullptr;
  }

  // A member holding shards [first, last), counting stores with `limits` (null: not counting).
  EtcdDurability* Member(int first, int last, std::shared_ptr<const TenantQuotas> limits) {
    harness_->set_store_limits(std::move(limits));
    absl::StatusOr<std::shared_ptr<TestShardFences>> fences = harness_->NewFences(kShards);
    EXPECT_TRUE(fences.ok()) << fences.status();
    if (!fences.ok()) return nullptr;
    for (int shard = first; shard < last; ++shard) {
      absl::Status taken = (*fences)->Take(shard);
      EXPECT_TRUE(taken.ok()) << taken;
    }
    absl::StatusOr<std::unique_ptr<EtcdDurability>> member = harness_->OpenMember(*fences);
    EXPECT_TRUE(member.ok()) << member.status();
    if (!member.ok()) return nullptr;
    for (int shard = first; shard < last; ++shard) {
      std::vector<RecoveredStore> recovered;
      absl::Status opened = (*member)->OpenShard(shard, &recovered);
      EXPECT_TRUE(opened.ok()) << opened;
    }
    fences_.push_back(*fences);
    members_.push_back(*std::move(member));
    return members_.back().get();
  }
  // The last member opened goes, its claims with it.
  void LeaveLast() {
    members_.back()->Close();
    members_.pop_back();
    fences_.back()->Revoke();
    fences_.pop_back();
  }

  int ShardOf(const std::string& tenant, const std::string& name) const {
    return fences_.front()->ShardOf(tenant, name);
  }

  absl::Status CreateOn(EtcdDurability* member, const std::string& tenant, const std::string& name,
                        bool imported = false) {
    const adapt::v1::StoreSpec spec = Spec("faast");
    absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend_.get());
    if (!store.ok()) return store.status();
    return member
        ->AppendCreate(tenant, name, *std::move(store), spec, imported,
                       member->CurrentFence(tenant, name))
        .status();
  }
  absl::Status DeleteOn(EtcdDurability* member, const std::string& tenant,
                        const std::string& name) {
    return member->AppendDelete(tenant, name, member->CurrentFence(tenant, name)).status();
  }

  // The keys under PREFIX/tenants/ and their values.
  std::map<std::string, std::string> Counts() {
    std::map<std::string, std::string> counts;
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return counts;
    const std::string prefix = harness_->EtcdPrefix() + "tenants/";
    absl::StatusOr<std::vector<mvccpb::KeyValue>> kvs = (*client)->RangePrefix(prefix);
    EXPECT_TRUE(kvs.ok()) << kvs.status();
    if (!kvs.ok()) return counts;
    for (const mvccpb::KeyValue& kv : *kvs) counts[kv.key().substr(prefix.size())] = kv.value();
    return counts;
  }
  std::string CountOf(const std::string& tenant) {
    const std::map<std::string, std::string> counts = Counts();
    auto it = counts.find(tenant + "/stores");
    return it == counts.end() ? "absent" : it->second;
  }

  std::vector<std::unique_ptr<EtcdDurability>> members_;
  std::vector<std::shared_ptr<TestShardFences>> fences_;
};

TEST_F(EtcdStoreCountTest, MembersCreatingAtOnceStopAtTheLimitTogether) {
  const std::shared_ptr<const TenantQuotas> limits = Limits(5);
  EtcdDurability* first = Member(0, kShards / 2, limits);
  EtcdDurability* second = Member(kShards / 2, kShards, limits);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(first->CountsStores());
  // Two threads on each member, each with ten names of that member's shards.
  std::vector<std::vector<std::string>> names(4);
  for (int i = 0, placed = 0; placed < 40; ++i) {
    const std::string name = absl::StrCat("s", i);
    const int member = ShardOf("t", name) < kShards / 2 ? 0 : 1;
    std::vector<std::string>& mine =
        names[2 * member + (names[2 * member].size() <= names[2 * member + 1].size() ? 0 : 1)];
    if (mine.size() < 10) {
      mine.push_back(name);
      ++placed;
    }
  }
  std::atomic<int> created{0}, refused{0}, retried{0};
  std::vector<std::string> other_errors(4);
  std::vector<std::vector<std::string>> made(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      EtcdDurability* member = t < 2 ? first : second;
      for (const std::string& name : names[t]) {
        absl::Status status = CreateOn(member, "t", name);
        // Ten lost races in a row answer Unavailable: a client tries again.
        for (int again = 0; absl::IsUnavailable(status) && again < 5; ++again) {
          ++retried;
          status = CreateOn(member, "t", name);
        }
        if (status.ok()) {
          ++created;
          made[t].push_back(name);
        } else if (absl::IsResourceExhausted(status)) {
          ++refused;
          EXPECT_EQ(status.message(), limits->CheckStores("t", 5).message());
        } else {
          other_errors[t] = status.ToString();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : other_errors) EXPECT_EQ(error, "");
  EXPECT_EQ(created.load(), 5);
  EXPECT_EQ(refused.load(), 35);
  EXPECT_EQ(CountOf("t"), "5");
  std::printf("creates retried after ten lost races: %d\n", retried.load());

  // A delete frees one slot, taken by the next create on either member; then refused again.
  std::string gone;
  EtcdDurability* holder = nullptr;
  for (int t = 0; t < 4 && gone.empty(); ++t) {
    if (!made[t].empty()) {
      gone = made[t].front();
      holder = t < 2 ? first : second;
    }
  }
  ASSERT_TRUE(DeleteOn(holder, "t", gone).ok());
  EXPECT_EQ(CountOf("t"), "4");
  EtcdDurability* other = holder == first ? second : first;
  std::string fresh;
  for (int i = 0; fresh.empty(); ++i) {
    const std::string name = absl::StrCat("n", i);
    if ((ShardOf("t", name) < kShards / 2) == (other == first)) fresh = name;
  }
  ASSERT_TRUE(CreateOn(other, "t", fresh).ok());
  EXPECT_EQ(CountOf("t"), "5");
  absl::Status over = CreateOn(holder, "t", gone);
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_EQ(CountOf("t"), "5");
}

TEST_F(EtcdStoreCountTest, TheCountFollowsDeletesImportsAndFailuresFromTheEntriesThere) {
  // Stores made before the limit: no count.
  EtcdDurability* before = Member(0, kShards, nullptr);
  ASSERT_NE(before, nullptr);
  EXPECT_FALSE(before->CountsStores());
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(CreateOn(before, "t", name).ok());
  EXPECT_EQ(CountOf("t"), "absent");
  LeaveLast();

  const std::shared_ptr<const TenantQuotas> limits = Limits(4);
  EtcdDurability* member = Member(0, kShards, limits);
  ASSERT_NE(member, nullptr);
  // The first counted create counts the three entries there.
  ASSERT_TRUE(CreateOn(member, "t", "d").ok());
  EXPECT_EQ(CountOf("t"), "4");
  absl::Status over = CreateOn(member, "t", "e");
  EXPECT_TRUE(absl::IsResourceExhausted(over)) << over;
  EXPECT_EQ(over.message(), limits->CheckStores("t", 4).message());
  // A delete and a re-create of the name.
  ASSERT_TRUE(DeleteOn(member, "t", "a").ok());
  EXPECT_EQ(CountOf("t"), "3");
  ASSERT_TRUE(CreateOn(member, "t", "a").ok());
  EXPECT_EQ(CountOf("t"), "4");
  // A create that fails (the entry is in etcd already) counts nothing.
  ASSERT_TRUE(DeleteOn(member, "t", "d").ok());
  EXPECT_EQ(CountOf("t"), "3");
  EXPECT_EQ(CreateOn(member, "t", "b").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CountOf("t"), "3");
  // An import takes a slot; one never acknowledged is dropped at recovery, with its slot.
  ASSERT_TRUE(CreateOn(member, "t", "f", /*imported=*/true).ok());
  EXPECT_EQ(CountOf("t"), "4");
  LeaveLast();
  member = Member(0, kShards, limits);
  ASSERT_NE(member, nullptr);
  EXPECT_EQ(CountOf("t"), "3");
  // A shard moving to another member changes nothing.
  LeaveLast();
  member = Member(0, kShards, limits);
  ASSERT_NE(member, nullptr);
  EXPECT_EQ(CountOf("t"), "3");
  ASSERT_TRUE(CreateOn(member, "t", "g").ok());
  EXPECT_TRUE(absl::IsResourceExhausted(CreateOn(member, "t", "h")));
  EXPECT_EQ(CountOf("t"), "4");
}

TEST_F(EtcdStoreCountTest, ATenantWithoutALimitWritesNoCount) {
  EtcdDurability* member = Member(0, kShards, Limits(2));
  ASSERT_NE(member, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(CreateOn(member, "free", absl::StrCat("s", i)).ok());
  ASSERT_TRUE(DeleteOn(member, "free", "s0").ok());
  EXPECT_TRUE(Counts().empty());
  // A count an earlier limit left is dropped, so a limit set again counts afresh.
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok());
  etcdserverpb::PutRequest put;
  put.set_key(harness_->EtcdPrefix() + "tenants/free/stores");
  put.set_value("9");
  ASSERT_TRUE((*client)->Put(put).ok());
  ASSERT_TRUE(CreateOn(member, "free", "s9").ok());
  EXPECT_TRUE(Counts().empty());
}

}  // namespace
}  // namespace adaptd
