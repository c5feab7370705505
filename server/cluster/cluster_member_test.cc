// ClusterMember end to end in one process (docs/CLUSTER_ETCD.md): members, each a registry, its
// claims and an engine over EtcdDurability kept by shard, on a real etcd and SeaweedFS
// (server/durability/testing/shared_services.h). A first member serves every store; a second
// joins and wins about half of the 16 shards, whose stores then answer there as they answered
// before, with no data copied between the members; the second drains, and every store answers
// at the first again, as acknowledged, and takes writes. A failed-over shard's hot stores are
// loaded by the new holder before any call, the others on their first call; etcd's upkeep runs
// on the holder of shard 0 alone. The claims and releases are reported with their reasons.
#include "server/cluster/cluster_member.h"

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/base/status_macros.h"
#include "server/config/config.h"
#include "server/core/testing/engine_calls.h"
#include "server/durability/etcd_durability.h"
#include "server/durability/testing/shared_services.h"

namespace adaptd::cluster {
namespace {

constexpr int kShards = 16;
constexpr int kDim = 4;

class ClusterMemberTest : public ::testing::Test {
 protected:
  struct Node {
    std::unique_ptr<etcd::EtcdClient> client;
    std::unique_ptr<ClusterMember> member;
    std::unique_ptr<Engine> engine;
    EtcdDurability* durability = nullptr;  // the engine's
  };

  void SetUp() override { backend_ = kernels::MakeCpuBackend(1); }
  void TearDown() override {
    for (auto& [name, node] : nodes_) node.member.reset();  // claims stop before the engines go
    nodes_.clear();
  }

  void Join(const std::string& name,
            const std::function<void(ClusterMember::Options&)>& tune = nullptr,
            EtcdDurability::Options::Hooks hooks = {}) {
    Node& node = nodes_[name];
    etcd::testing::EtcdCluster* etcd = testing_util::SharedEtcd();
    ASSERT_NE(etcd, nullptr);
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = etcd->Client();
    ASSERT_TRUE(client.ok()) << client.status();
    node.client = *std::move(client);
    ClusterMember::Options options;
    options.registry.prefix = prefix_;
    options.registry.self = name;
    options.registry.address = absl::StrCat(name, ".adaptd:50051");
    options.registry.lease_ttl = absl::Seconds(2);
    options.registry.settle = absl::ZeroDuration();
    options.claims.shards = kShards;
    options.claims.tick = absl::Milliseconds(100);
    if (tune) tune(options);
    absl::StatusOr<std::unique_ptr<ClusterMember>> member =
        ClusterMember::Register(node.client.get(), options);
    ASSERT_TRUE(member.ok()) << member.status();
    node.member = *std::move(member);
    ClusterMember* joined = node.member.get();
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::CreateOver(
        DefaultConfig(), backend_.get(), nullptr,
        [&, joined](
            std::vector<RecoveredStore>* recovered) -> absl::StatusOr<std::unique_ptr<Durability>> {
          ASSIGN_OR_RETURN(std::unique_ptr<etcd::EtcdClient> own, etcd->Client());
          ASSIGN_OR_RETURN(std::unique_ptr<S3ObjectStore> bucket,
                           testing_util::SharedBucket(bucket_));
          EtcdDurability::Options durable;
          durable.prefix = prefix_;
          durable.shards = joined->fences();
          durable.hooks = hooks;
          ASSIGN_OR_RETURN(std::unique_ptr<EtcdDurability> opened,
                           EtcdDurability::Open(std::move(own), std::move(bucket), backend_.get(),
                                                recovered, std::move(durable)));
          node.durability = opened.get();
          return std::unique_ptr<Durability>(std::move(opened));
        });
    ASSERT_TRUE(engine.ok()) << engine.status();
    node.engine = *std::move(engine);
    ASSERT_TRUE(node.member->Serve(node.engine.get()).ok());
  }

  // Every member settled: each shard held by its desired owner and adopted there.
  bool Settled() {
    size_t adopted = 0;
    for (auto& [name, node] : nodes_) {
      if (!node.member->claims().Settled()) return false;
      const std::vector<int> held = node.member->claims().Held();
      if (std::set<int>(held.begin(), held.end()) != node.member->Adopted()) return false;
      adopted += held.size();
    }
    return adopted == kShards;
  }
  bool Eventually(const std::function<bool()>& check) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!check()) {
      if (absl::Now() >= deadline) return false;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return true;
  }

  // The engine of the member that serves acme/`store`, as `via` routes it.
  Engine* ServerOf(const std::string& via, const std::string& store) {
    absl::StatusOr<std::string> route = nodes_.at(via).member->Route("acme", store);
    EXPECT_TRUE(route.ok()) << route.status();
    if (!route.ok()) return nullptr;
    return nodes_.at(route->empty() ? via : *route).engine.get();
  }

  absl::Status Create(Engine& engine, const std::string& store) {
    return testing_util::CreateFaast(engine, "acme", store);
  }
  absl::Status AdaptAndCompile(Engine& engine, const std::string& store) {
    RETURN_IF_ERROR(testing_util::AdaptRandom(engine, "acme", store, kDim, rng_).status());
    return testing_util::CompileNow(engine, "acme", store);
  }
  static absl::StatusOr<std::string> Answer(Engine& engine, const std::string& store) {
    return testing_util::AnswerOf(engine, "acme", store, kDim);
  }

  // The hot list of `shard` as etcd holds it.
  std::vector<std::string> HotList(int shard) {
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = testing_util::SharedEtcd()->Client();
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return {};
    etcdserverpb::RangeRequest request;
    request.set_key(absl::StrCat(prefix_, "hot/", ShardName(shard)));
    absl::StatusOr<etcdserverpb::RangeResponse> read = (*client)->Range(request);
    EXPECT_TRUE(read.ok()) << read.status();
    if (!read.ok() || read->kvs_size() == 0) return {};
    return DecodeHotList(read->kvs(0).value());
  }
  static adapt::v1::Tier TierOf(Engine& engine, const std::string& store) {
    adapt::v1::GetStoreRequest get;  // describes without loading
    get.set_tenant("acme");
    get.set_store(store);
    absl::StatusOr<adapt::v1::StoreInfo> info = engine.GetStore(get);
    return info.ok() ? info->tier() : adapt::v1::TIER_UNSPECIFIED;
  }

  std::unique_ptr<kernels::Backend> backend_;
  const std::string bucket_ = testing_util::UniqueName();
  const std::string prefix_ = absl::StrCat("/cluster-member-test/", bucket_, "/");
  std::map<std::string, Node> nodes_;
  std::mt19937 rng_{11};
};

TEST_F(ClusterMemberTest, AJoiningMemberTakesItsShardsAndADrainGivesThemBack) {
  Join("a");
  ASSERT_TRUE(Eventually([&] { return Settled(); }));
  std::vector<std::string> names;
  std::map<std::string, std::string> answers;
  for (int i = 0; i < 12; ++i) {
    const std::string name = absl::StrCat("s", i);
    names.push_back(name);
    Engine* engine = ServerOf("a", name);
    ASSERT_EQ(engine, nodes_.at("a").engine.get());
    ASSERT_TRUE(Create(*engine, name).ok());
    ASSERT_TRUE(AdaptAndCompile(*engine, name).ok());
    absl::StatusOr<std::string> answer = Answer(*engine, name);
    ASSERT_TRUE(answer.ok()) << answer.status();
    answers[name] = *answer;
  }

  Join("b");
  // Settled as b sees it and as a sees it once a counts b eligible (a's watch may lag b's READY).
  ASSERT_TRUE(Eventually([&] {
    return nodes_.at("a").member->registry().Eligible() == std::vector<std::string>{"a", "b"} &&
           Settled();
  }));
  const std::vector<int> of_b = nodes_.at("b").member->claims().Held();
  EXPECT_GE(of_b.size(), 3u);
  EXPECT_LE(of_b.size(), 13u);
  // a wrote the hot lists of the shards it released (its stores were used there), and b loads
  // their stores before any call asks.
  ASSERT_TRUE(Eventually([&] {
    for (const std::string& name : names) {
      if (!nodes_.at("b").engine->Holds("acme", name)) continue;
      if (TierOf(*nodes_.at("b").engine, name) != adapt::v1::TIER_HOT) return false;
    }
    return nodes_.at("b").member->restores_in_flight() == 0;
  }));
  int at_b = 0;
  for (const std::string& name : names) {
    for (const char* via : {"a", "b"}) {
      Engine* engine = ServerOf(via, name);
      ASSERT_NE(engine, nullptr);
      absl::StatusOr<std::string> answer = Answer(*engine, name);
      ASSERT_TRUE(answer.ok()) << name << " via " << via << ": " << answer.status();
      EXPECT_EQ(*answer, answers[name]) << name;
    }
    if (ServerOf("a", name) == nodes_.at("b").engine.get()) ++at_b;
  }
  EXPECT_GT(at_b, 0) << "no store's shard moved to b";
  // Writes go on wherever each store is served.
  for (const std::string& name : names) {
    ASSERT_TRUE(AdaptAndCompile(*ServerOf("b", name), name).ok()) << name;
    absl::StatusOr<std::string> answer = Answer(*ServerOf("b", name), name);
    ASSERT_TRUE(answer.ok());
    answers[name] = *answer;
  }

  ASSERT_TRUE(nodes_.at("a")
                  .member->registry()
                  .SetStateOf("b", adapt::v1::ClusterMemberRecord::DRAINING)
                  .ok());
  ASSERT_TRUE(Eventually([&] {
    return nodes_.at("b").member->claims().Held().empty() &&
           nodes_.at("a").member->Adopted().size() == kShards;
  }));
  for (const std::string& name : names) {
    Engine* engine = ServerOf("a", name);
    ASSERT_EQ(engine, nodes_.at("a").engine.get()) << name;
    absl::StatusOr<std::string> answer = Answer(*engine, name);
    ASSERT_TRUE(answer.ok()) << name << ": " << answer.status();
    EXPECT_EQ(*answer, answers[name]) << name;
    EXPECT_TRUE(AdaptAndCompile(*engine, name).ok()) << name;
    EXPECT_FALSE(nodes_.at("b").engine->Holds("acme", name));
  }
}

// A shard's holder is lost (its member gone without a release, its lease left to lapse): the
// new holder loads the stores the shard's hot list names in the background, most recent first,
// before any call asks for them; a call for one being loaded waits for that load and answers as
// acknowledged; the shard's other stores stay cold until their first call.
TEST_F(ClusterMemberTest, AFailedOverShardsHotStoresAreRestoredBeforeAnyCall) {
  // Four stores of one shard; its hot list of two names the two used last.
  std::map<int, std::vector<std::string>> by_shard;
  int shard = -1;
  for (int i = 0; shard < 0; ++i) {
    const std::string name = absl::StrCat("s", i);
    std::vector<std::string>& names = by_shard[ShardOf("acme", name, kShards)];
    names.push_back(name);
    if (names.size() == 4) shard = ShardOf("acme", name, kShards);
  }
  const std::vector<std::string> names = by_shard[shard];
  const std::string& h0 = names[3];
  const std::string& h1 = names[2];
  Join("a", [](ClusterMember::Options& options) {
    options.hot_size = 2;
    options.hot_interval = absl::Milliseconds(100);
  });
  ASSERT_TRUE(Eventually([&] { return Settled(); }));
  Engine& a = *nodes_.at("a").engine;
  std::map<std::string, std::string> answers;
  for (const std::string& name : names) {
    ASSERT_TRUE(Create(a, name).ok());
    ASSERT_TRUE(AdaptAndCompile(a, name).ok());
    absl::StatusOr<std::string> answer = Answer(a, name);
    ASSERT_TRUE(answer.ok()) << answer.status();
    answers[name] = *answer;
  }
  absl::SleepFor(absl::Milliseconds(200));  // the automatic compiles of the writes done
  ASSERT_TRUE(Answer(a, h1).ok());
  ASSERT_TRUE(Answer(a, h0).ok());
  const std::vector<std::string> hot = {absl::StrCat("acme/", h0), absl::StrCat("acme/", h1)};
  ASSERT_TRUE(Eventually([&] { return HotList(shard) == hot; }));
  ASSERT_TRUE(a.Flush().ok());    // every state in object storage: recovered cold elsewhere
  nodes_.at("a").member.reset();  // gone without releasing anything; its lease lapses

  // b's first load of a store is held until the test lets it go.
  std::atomic<int> rebuilds{0};
  absl::Notification first_rebuild, go;
  EtcdDurability::Options::Hooks hooks;
  hooks.on_restore = [&](double) {
    if (rebuilds.fetch_add(1) == 0) {
      first_rebuild.Notify();
      go.WaitForNotification();
    }
  };
  absl::Cleanup release = [&go] {
    if (!go.HasBeenNotified()) go.Notify();
  };
  std::atomic<int> restored{0};
  Join(
      "b",
      [&](ClusterMember::Options& options) {
        options.restore_threads = 1;
        options.on_restore = [&](double) { restored.fetch_add(1); };
      },
      hooks);
  ClusterMember& b = *nodes_.at("b").member;
  Engine& at_b = *nodes_.at("b").engine;
  ASSERT_TRUE(first_rebuild.WaitForNotificationWithTimeout(absl::Seconds(20)));
  EXPECT_EQ(b.restores_in_flight(), 2);  // h0 under way, h1 queued
  // (Describing h0 would wait for its load: the description asks the durability's entry.)
  for (const std::string& name : {names[0], names[1], h1}) {
    EXPECT_EQ(TierOf(at_b, name), adapt::v1::TIER_COLD) << name;
  }
  absl::StatusOr<std::string> answer_h0 = absl::UnknownError("not answered");
  std::atomic<bool> answered{false};
  std::thread call([&] {
    answer_h0 = Answer(at_b, h0);
    answered = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(answered) << "the call did not wait for the restore under way";
  go.Notify();
  call.join();
  ASSERT_TRUE(answer_h0.ok()) << answer_h0.status();
  EXPECT_EQ(*answer_h0, answers[h0]);
  ASSERT_TRUE(Eventually([&] { return b.restores_in_flight() == 0 && restored == 2; }));
  EXPECT_EQ(rebuilds, 2);                            // h0 and h1, each once
  EXPECT_EQ(TierOf(at_b, h1), adapt::v1::TIER_HOT);  // loaded before any call asked
  EXPECT_EQ(TierOf(at_b, names[0]), adapt::v1::TIER_COLD);
  EXPECT_EQ(TierOf(at_b, names[1]), adapt::v1::TIER_COLD);
  // The restore is not a use: b's list is a's until b's calls change it.
  EXPECT_EQ(b.WriteHotLists(), 0);
  EXPECT_EQ(HotList(shard), hot);
  for (const std::string& name : names) {
    absl::StatusOr<std::string> answer = Answer(at_b, name);
    ASSERT_TRUE(answer.ok()) << name << ": " << answer.status();
    EXPECT_EQ(*answer, answers[name]) << name;
  }
  EXPECT_NE(TierOf(at_b, names[0]), adapt::v1::TIER_COLD);  // loaded by its first call
  EXPECT_EQ(b.WriteHotLists(), 1);
  EXPECT_EQ(HotList(shard),
            (std::vector<std::string>{hot[0], hot[1], absl::StrCat("acme/", names[1]),
                                      absl::StrCat("acme/", names[0])}));
}

// etcd's compaction, defragmentation and the object collection run on one member, the holder
// of shard 0; the space guard's reading of etcd's size runs on every member. When shard 0
// moves, the upkeep moves with it.
TEST_F(ClusterMemberTest, OnlyTheHolderOfShardZeroKeepsEtcd) {
  Join("a");
  Join("b");
  ASSERT_TRUE(Eventually([&] {
    return nodes_.at("a").member->registry().Eligible() == std::vector<std::string>{"a", "b"} &&
           Settled();
  }));
  const auto upkeep_by_holder = [&](const std::string& holder) {
    for (auto& [name, node] : nodes_) {
      absl::StatusOr<EtcdDurability::Upkeep> upkeep = node.durability->Maintain(/*collect=*/true);
      ASSERT_TRUE(upkeep.ok()) << name << ": " << upkeep.status();
      EXPECT_GT(upkeep->largest_db_bytes, 0) << name;
      EXPECT_FALSE(upkeep->guard_on) << name;
      EXPECT_EQ(upkeep->upkeep_here, name == holder) << name;
      if (name == holder) {
        EXPECT_GT(upkeep->compacted_to, 0) << name;
      } else {
        EXPECT_EQ(upkeep->compacted_to, 0) << name;
        EXPECT_EQ(upkeep->defragmented, 0) << name;
        EXPECT_EQ(upkeep->objects_deleted, 0) << name;
      }
    }
  };
  const std::optional<ShardHolder> first = nodes_.at("a").member->claims().HolderOf(0);
  ASSERT_TRUE(first.has_value());
  upkeep_by_holder(first->member);
  const std::string other = first->member == "a" ? "b" : "a";
  ASSERT_TRUE(nodes_.at(other)
                  .member->registry()
                  .SetStateOf(first->member, adapt::v1::ClusterMemberRecord::DRAINING)
                  .ok());
  ASSERT_TRUE(Eventually([&] {
    const std::optional<ShardHolder> now = nodes_.at(other).member->claims().HolderOf(0);
    return now.has_value() && now->member == other &&
           nodes_.at(other).member->Adopted().count(0) > 0 &&
           nodes_.at(first->member).member->claims().FenceOf(0).status().code() !=
               absl::StatusCode::kOk;
  }));
  upkeep_by_holder(other);
}

// What the server's metrics count (adaptd_cluster_claims_total, adaptd_cluster_releases_total):
// a first member claims every shard new; a second joining claims its shards moved, released
// moved by the first; the second draining releases them drained, claimed moved by the first.
TEST_F(ClusterMemberTest, ClaimsAndReleasesAreReportedWithTheirReasons) {
  struct Reasons {
    std::atomic<int> claims[4] = {};    // by ClaimReason
    std::atomic<int> releases[3] = {};  // by ReleaseReason
  };
  std::map<std::string, Reasons> reasons;
  const auto counted = [&](const std::string& name) {
    Reasons* r = &reasons[name];
    return [r](ClusterMember::Options& options) {
      options.on_claim = [r](ClaimReason reason) { ++r->claims[static_cast<int>(reason)]; };
      options.on_release = [r](ReleaseReason reason) { ++r->releases[static_cast<int>(reason)]; };
    };
  };
  const auto claims = [&](const std::string& name, ClaimReason reason) {
    return reasons[name].claims[static_cast<int>(reason)].load();
  };
  const auto releases = [&](const std::string& name, ReleaseReason reason) {
    return reasons[name].releases[static_cast<int>(reason)].load();
  };

  Join("a", counted("a"));
  ASSERT_TRUE(Eventually([&] { return Settled(); }));
  EXPECT_EQ(claims("a", ClaimReason::kNew), kShards);
  EXPECT_EQ(claims("a", ClaimReason::kMove) + claims("a", ClaimReason::kFailover) +
                claims("a", ClaimReason::kRestart),
            0);
  // Renewed every third of the 2 s TTL.
  EXPECT_LT(nodes_.at("a").member->LeaseAge(), absl::Seconds(2));

  Join("b", counted("b"));
  ASSERT_TRUE(Eventually([&] {
    return nodes_.at("a").member->registry().Eligible() == std::vector<std::string>{"a", "b"} &&
           Settled();
  }));
  const int moved = static_cast<int>(nodes_.at("b").member->claims().Held().size());
  ASSERT_GT(moved, 0);
  EXPECT_EQ(claims("b", ClaimReason::kMove), moved);
  EXPECT_EQ(claims("b", ClaimReason::kNew) + claims("b", ClaimReason::kFailover), 0);
  EXPECT_EQ(releases("a", ReleaseReason::kMove), moved);

  // b drains itself: a adopts every shard once b released its own.
  ASSERT_TRUE(
      nodes_.at("b").member->registry().SetState(adapt::v1::ClusterMemberRecord::DRAINING).ok());
  ASSERT_TRUE(Eventually([&] { return nodes_.at("a").member->Adopted().size() == kShards; }));
  EXPECT_EQ(releases("b", ReleaseReason::kDrain), moved);
  EXPECT_EQ(releases("b", ReleaseReason::kMove) + releases("b", ReleaseReason::kLost), 0);
  EXPECT_EQ(claims("a", ClaimReason::kMove), moved);
  EXPECT_EQ(releases("a", ReleaseReason::kDrain) + releases("a", ReleaseReason::kLost), 0);
}

}  // namespace
}  // namespace adaptd::cluster
