// Shards through the Engine (docs/CLUSTER_ETCD.md): two engines standing for two members of a
// cluster on etcd, over EtcdDurability kept by shard (8 shards) on a real etcd and SeaweedFS.
// The first holds every shard; it releases one (its stores' writes stop, their states are
// written out, their slots go), and the second, once it claimed the shard, adopts it: its
// stores answer there as they answered at the first, take new writes, and the first's other
// stores go on as before.
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/core/testing/engine_calls.h"
#include "server/durability/testing/etcd_harness.h"
#include "server/quota/tenant_quotas.h"

namespace adaptd {
namespace {

constexpr int kDim = 6;

class EngineShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    harness_ = std::make_unique<EtcdShardedHarness>(backend_.get());
  }

  std::unique_ptr<Engine> Start(Engine::DurabilityOpener open,
                                const adapt::v1::ServerConfig& config = DefaultConfig()) {
    absl::StatusOr<std::unique_ptr<Engine>> engine =
        Engine::CreateOver(config, backend_.get(), nullptr, std::move(open));
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  absl::Status Create(Engine& engine, const std::string& store) {
    return testing_util::CreateFaast(engine, "acme", store);
  }
  // Four examples with ids ID-0..ID-3, one Adapt call; how many were resends.
  absl::StatusOr<uint64_t> Adapt(Engine& engine, const std::string& store, const std::string& id) {
    ASSIGN_OR_RETURN(adapt::v1::AdaptResponse done,
                     testing_util::AdaptRandom(engine, "acme", store, kDim, rng_, id));
    return done.duplicates();
  }
  static absl::Status Compile(Engine& engine, const std::string& store) {
    return testing_util::CompileNow(engine, "acme", store);
  }
  static absl::StatusOr<std::string> Answer(Engine& engine, const std::string& store) {
    return testing_util::AnswerOf(engine, "acme", store, kDim);
  }

  // A second member: fresh fences that took `shard`, and an engine over them (null on a
  // failure, reported); the caller adopts the shard.
  std::unique_ptr<Engine> SecondTaking(int shard) {
    absl::StatusOr<std::shared_ptr<TestShardFences>> theirs = harness_->NewFences(8);
    EXPECT_TRUE(theirs.ok()) << theirs.status();
    if (!theirs.ok() || !(*theirs)->Take(shard).ok()) return nullptr;
    return Start([this, theirs = *theirs](
                     std::vector<RecoveredStore>*) -> absl::StatusOr<std::unique_ptr<Durability>> {
      ASSIGN_OR_RETURN(std::unique_ptr<EtcdDurability> member, harness_->OpenMember(theirs));
      return std::unique_ptr<Durability>(std::move(member));
    });
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<EtcdShardedHarness> harness_;
  std::mt19937 rng_{7};
};

TEST_F(EngineShardsTest, AReleasedShardIsAdoptedByAnotherMemberWithItsStores) {
  std::unique_ptr<Engine> first =
      Start([this](std::vector<RecoveredStore>* recovered) { return harness_->Open(recovered); });
  ASSERT_NE(first, nullptr);
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back(absl::StrCat("s", i));
  for (const std::string& name : names) {
    ASSERT_TRUE(Create(*first, name).ok());
    ASSERT_TRUE(Adapt(*first, name, name).ok());
    ASSERT_TRUE(Compile(*first, name).ok());
  }
  TestShardFences& fences = *harness_->fences();
  const int shard = fences.ShardOf("acme", "s0");
  std::set<std::string> of_shard;
  std::map<std::string, std::string> answers;
  for (const std::string& name : names) {
    if (fences.ShardOf("acme", name) == shard) of_shard.insert(name);
    absl::StatusOr<std::string> answer = Answer(*first, name);
    ASSERT_TRUE(answer.ok()) << answer.status();
    answers[name] = *answer;
  }

  auto in_shard = [&](const std::string& tenant, const std::string& store) {
    return fences.ShardOf(tenant, store) == shard;
  };
  absl::StatusOr<size_t> released = first->ReleaseShard(shard, in_shard);
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(*released, of_shard.size());
  ASSERT_TRUE(fences.Release(shard).ok());
  EXPECT_FALSE(Answer(*first, "s0").ok());
  EXPECT_FALSE(first->Holds("acme", "s0"));

  std::unique_ptr<Engine> second = SecondTaking(shard);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->AdoptShard(shard).ok());
  for (const std::string& name : names) {
    if (of_shard.count(name) > 0) {
      absl::StatusOr<std::string> there = Answer(*second, name);
      ASSERT_TRUE(there.ok()) << name << ": " << there.status();
      EXPECT_EQ(*there, answers[name]) << name;
      EXPECT_TRUE(Adapt(*second, name, name + "-later").ok()) << name;
    } else {
      EXPECT_FALSE(second->Holds("acme", name));
      EXPECT_TRUE(Adapt(*first, name, name + "-later").ok()) << name;
    }
  }
  // A resend of examples the first member acknowledged is known at the second: skipped.
  absl::StatusOr<uint64_t> resent = Adapt(*second, "s0", "s0");
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(*resent, 4u);
}

// A call that found its store before the shard was released and commits after: UNAVAILABLE,
// not NOT_FOUND (the store moved, it was not deleted), with nothing applied, so that the
// client resends it to the new holder. A store deleted meanwhile is still NOT_FOUND.
TEST_F(EngineShardsTest, AWriteOverlappingAReleaseAnswersUnavailableNotNotFound) {
  std::unique_ptr<Engine> first =
      Start([this](std::vector<RecoveredStore>* recovered) { return harness_->Open(recovered); });
  ASSERT_NE(first, nullptr);
  TestShardFences& fences = *harness_->fences();
  const int shard = fences.ShardOf("acme", "s0");
  std::string other;
  for (int i = 1; other.empty(); ++i) {
    if (fences.ShardOf("acme", absl::StrCat("s", i)) != shard) other = absl::StrCat("s", i);
  }
  for (const std::string& name : {std::string("s0"), other}) {
    ASSERT_TRUE(Create(*first, name).ok());
    ASSERT_TRUE(Adapt(*first, name, name).ok());
  }
  auto staged = [&](const std::string& name) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    adapt::v1::Example* e = examples.Add();
    e->set_label("odd");
    e->set_id(name + "-overlap");
    for (int j = 0; j < kDim; ++j) e->mutable_input()->mutable_vector()->add_values(0.5f);
    std::unique_ptr<WriteSession> session = first->StartWrite(TxnKind::kAdapt);
    EXPECT_TRUE(session->Add("acme", name, examples).ok());
    return session;
  };
  std::unique_ptr<WriteSession> moving = staged("s0");
  std::unique_ptr<WriteSession> deleted = staged(other);

  absl::StatusOr<size_t> released = first->ReleaseShard(
      shard,
      [&](const std::string& t, const std::string& s) { return fences.ShardOf(t, s) == shard; });
  ASSERT_TRUE(released.ok()) << released.status();
  absl::StatusOr<adapt::v1::AdaptResponse> after_release = moving->Finish();
  EXPECT_EQ(after_release.status().code(), absl::StatusCode::kUnavailable)
      << after_release.status();
  EXPECT_NE(after_release.status().message().find("moved to another member"), std::string::npos)
      << after_release.status();

  adapt::v1::DeleteStoreRequest remove;
  remove.set_tenant("acme");
  remove.set_store(other);
  ASSERT_TRUE(first->DeleteStore(remove).ok());
  absl::StatusOr<adapt::v1::AdaptResponse> after_delete = deleted->Finish();
  EXPECT_EQ(after_delete.status().code(), absl::StatusCode::kNotFound) << after_delete.status();

  // Nothing of the overlapping call was applied: the new holder takes its resend as new.
  ASSERT_TRUE(fences.Release(shard).ok());
  std::unique_ptr<Engine> second = SecondTaking(shard);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->AdoptShard(shard).ok());
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("s0");
  absl::StatusOr<adapt::v1::StoreInfo> info = second->GetStore(get);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->examples(), 4u);
}

// A failover (docs/CLUSTER_ETCD.md, "Failover"): the holder's claims lapse without a release,
// its stores' logs holding writes past their stored states. The new holder opens the shard
// from the entries alone (nothing rebuilt), and each store's first call replays its log: a
// predict answers with the logged writes, a description or a list counts their examples, a
// resend of their ids is skipped. Each store is rebuilt once, by its first call.
TEST_F(EngineShardsTest, AFailedOverShardIsOpenedWithoutReplayAndEachStoreReplaysOnItsFirstCall) {
  std::unique_ptr<Engine> first =
      Start([this](std::vector<RecoveredStore>* recovered) { return harness_->Open(recovered); });
  ASSERT_NE(first, nullptr);
  TestShardFences& fences = *harness_->fences();
  // Four stores of one shard: one asked first by a predict, one by a description, one by a
  // resend, one by a list.
  const int shard = fences.ShardOf("acme", "s0");
  std::vector<std::string> names;
  for (int i = 0; names.size() < 4; ++i) {
    const std::string name = absl::StrCat("s", i);
    if (fences.ShardOf("acme", name) == shard) names.push_back(name);
  }
  std::map<std::string, std::string> answers;
  for (const std::string& name : names) {
    ASSERT_TRUE(Create(*first, name).ok());
    ASSERT_TRUE(Adapt(*first, name, name).ok());
    ASSERT_TRUE(Compile(*first, name).ok());
  }
  ASSERT_TRUE(first->Flush().ok());  // stored states (with read-outs) of 4 examples each
  for (const std::string& name : names) {
    ASSERT_TRUE(Adapt(*first, name, name + "-tail").ok());  // logged past the stored state
    ASSERT_TRUE(Compile(*first, name).ok());
    absl::StatusOr<std::string> answer = Answer(*first, name);
    ASSERT_TRUE(answer.ok()) << answer.status();
    answers[name] = *answer;
  }

  fences.Revoke();  // the first's lease lapses: its claims go, it releases nothing
  std::atomic<int> rebuilt{0};
  harness_->set_on_restore([&rebuilt](double) { ++rebuilt; });
  std::unique_ptr<Engine> second = SecondTaking(shard);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->AdoptShard(shard).ok());
  EXPECT_EQ(rebuilt.load(), 0);  // the adoption read the entries alone
  for (const std::string& name : names) EXPECT_TRUE(second->Holds("acme", name)) << name;

  absl::StatusOr<std::string> predicted = Answer(*second, names[0]);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(*predicted, answers[names[0]]);
  EXPECT_EQ(rebuilt.load(), 1);

  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store(names[1]);
  absl::StatusOr<adapt::v1::StoreInfo> described = second->GetStore(get);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->examples(), 8u);
  EXPECT_TRUE(described->failure().empty()) << described->failure();
  EXPECT_EQ(rebuilt.load(), 2);

  absl::StatusOr<uint64_t> resent = Adapt(*second, names[2], names[2] + "-tail");
  ASSERT_TRUE(resent.ok()) << resent.status();
  EXPECT_EQ(*resent, 4u);
  EXPECT_EQ(rebuilt.load(), 3);

  adapt::v1::ListStoresRequest list;
  list.set_tenant("acme");
  absl::StatusOr<adapt::v1::ListStoresResponse> listed = second->ListStores(list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->stores_size(), 4);
  for (const adapt::v1::StoreInfo& info : listed->stores()) {
    EXPECT_EQ(info.examples(), 8u) << info.store();
  }
  EXPECT_EQ(rebuilt.load(), 4);

  for (const std::string& name : names) {
    absl::StatusOr<std::string> there = Answer(*second, name);
    ASSERT_TRUE(there.ok()) << name << ": " << there.status();
    if (name != names[2]) {
      EXPECT_EQ(*there, answers[name]) << name;
    }
    get.set_store(name);
    described = second->GetStore(get);
    ASSERT_TRUE(described.ok()) << described.status();
    EXPECT_EQ(described->examples(), 8u) << name;
    absl::StatusOr<uint64_t> again = Adapt(*second, name, name + "-tail");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, 4u) << name;
  }
  EXPECT_EQ(rebuilt.load(), 4);  // loaded once each
}

// Store quotas over the members (docs/CLUSTER_ETCD.md, "Quotas and base stores"): each engine
// holds half the shards and only its part of the tenant's stores; the count in etcd refuses
// the create past max_stores on either, as a single server words it, and a delete frees a slot.
TEST_F(EngineShardsTest, MembersRefuseAStorePastTheTenantsLimitTogether) {
  adapt::v1::ServerConfig config = DefaultConfig();
  (*config.mutable_tenant_quotas())["acme"].set_max_stores(3);
  absl::StatusOr<std::unique_ptr<TenantQuotas>> limits = TenantQuotas::Create(config);
  ASSERT_TRUE(limits.ok()) << limits.status();
  harness_->set_store_limits(*std::move(limits));
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::shared_ptr<TestShardFences>> fences;
  for (int half = 0; half < 2; ++half) {
    absl::StatusOr<std::shared_ptr<TestShardFences>> mine = harness_->NewFences(8);
    ASSERT_TRUE(mine.ok()) << mine.status();
    for (int shard = 4 * half; shard < 4 * half + 4; ++shard) {
      ASSERT_TRUE((*mine)->Take(shard).ok());
    }
    fences.push_back(*mine);
    engines.push_back(Start(
        [&](std::vector<RecoveredStore>*) -> absl::StatusOr<std::unique_ptr<Durability>> {
          ASSIGN_OR_RETURN(std::unique_ptr<EtcdDurability> member, harness_->OpenMember(*mine));
          return std::unique_ptr<Durability>(std::move(member));
        },
        config));
    ASSERT_NE(engines.back(), nullptr);
    for (int shard = 4 * half; shard < 4 * half + 4; ++shard) {
      ASSERT_TRUE(engines.back()->AdoptShard(shard).ok());
    }
  }
  // Names of each member's shards, tried in turn: the first member's, the second's, ...
  std::vector<std::string> names[2];
  for (int i = 0; names[0].size() < 6 || names[1].size() < 6; ++i) {
    const std::string name = absl::StrCat("s", i);
    std::vector<std::string>& of = names[fences[0]->ShardOf("acme", name) < 4 ? 0 : 1];
    if (of.size() < 6) of.push_back(name);
  }
  std::vector<std::string> created;
  for (int i = 0; i < 10; ++i) {
    const std::string& name = names[i % 2][i / 2];
    absl::Status status = Create(*engines[i % 2], name);
    if (status.ok()) {
      created.push_back(name);
      continue;
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    EXPECT_EQ(status.message(),
              "quota max_stores: tenant 'acme' may hold at most 3 stores and holds 3");
    EXPECT_FALSE(engines[i % 2]->Holds("acme", name));
  }
  // The first member holds two, the second one: each alone is under the limit.
  ASSERT_EQ(created, (std::vector<std::string>{names[0][0], names[1][0], names[0][1]}));
  adapt::v1::DeleteStoreRequest remove;
  remove.set_tenant("acme");
  remove.set_store(names[0][0]);
  ASSERT_TRUE(engines[0]->DeleteStore(remove).ok());
  EXPECT_TRUE(Create(*engines[1], names[1][5]).ok());
  EXPECT_EQ(Create(*engines[0], names[0][5]).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace adaptd
