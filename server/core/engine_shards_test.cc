// Shards through the Engine (docs/CLUSTER_ETCD.md): two engines standing for two members of a
// cluster on etcd, over EtcdDurability kept by shard (8 shards) on a real etcd and SeaweedFS.
// The first holds every shard; it releases one (its stores' writes stop, their states are
// written out, their slots go), and the second, once it claimed the shard, adopts it: its
// stores answer there as they answered at the first, take new writes, and the first's other
// stores go on as before.
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

namespace adaptd {
namespace {

constexpr int kDim = 6;

class EngineShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    harness_ = std::make_unique<EtcdShardedHarness>(backend_.get());
  }

  std::unique_ptr<Engine> Start(Engine::DurabilityOpener open) {
    absl::StatusOr<std::unique_ptr<Engine>> engine =
        Engine::CreateOver(DefaultConfig(), backend_.get(), nullptr, std::move(open));
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

  absl::StatusOr<std::shared_ptr<TestShardFences>> theirs = harness_->NewFences(8);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ASSERT_TRUE((*theirs)->Take(shard).ok());
  std::unique_ptr<Engine> second = Start([&](std::vector<RecoveredStore>*) {
    absl::StatusOr<std::unique_ptr<EtcdDurability>> member = harness_->OpenMember(*theirs);
    if (!member.ok()) return absl::StatusOr<std::unique_ptr<Durability>>(member.status());
    return absl::StatusOr<std::unique_ptr<Durability>>(*std::move(member));
  });
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

}  // namespace
}  // namespace adaptd
