#include "client/cpp/routes.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cpp/router.h"
#include "gtest/gtest.h"
#include "server/cluster/shard_claims.h"

namespace adaptd {
namespace {

using adapt::v1::ClusterRoutesResponse;

TEST(StoreShard, IsTheServersShardOf) {
  std::vector<std::pair<std::string, std::string>> names = {
      {"", ""},
      {"t", "s"},
      {"acme", "intents"},
      {"tenant-7", "store/with/slashes"},
      {"ünïcode", "名前"},
      {std::string(1, '\0'), std::string("a\0b", 3)}};
  for (int i = 0; i < 500; ++i)
    names.emplace_back(absl::StrCat("tenant", i % 7), absl::StrCat("s", i));
  for (const auto& [tenant, store] : names) {
    EXPECT_EQ(StoreShard(tenant, store), cluster::ShardOf(tenant, store)) << tenant << "/" << store;
    EXPECT_EQ(StoreShard(tenant, store, 16), cluster::ShardOf(tenant, store, 16));
  }
  // Pinned (computed apart from both), so that neither side drifts with the other.
  EXPECT_EQ(StoreShard("a", "b"), 3937);
  EXPECT_EQ(StoreShard("acme", "intents"), 111);
}

ClusterRoutesResponse Routes(int shards, std::vector<std::string> addresses, int64_t revision) {
  ClusterRoutesResponse routes;
  for (size_t i = 0; i < addresses.size(); ++i) {
    adapt::v1::RouteMember* member = routes.add_members();
    member->set_name(absl::StrCat("m", i));
    member->set_address(addresses[i]);
  }
  for (int shard = 0; shard < shards; ++shard) {
    routes.add_holders(addresses.empty() ? -1 : shard % static_cast<int>(addresses.size()));
  }
  routes.set_revision(revision);
  return routes;
}

TEST(RouteTable, ParsesHoldersByShard) {
  ClusterRoutesResponse routes = Routes(8, {"a:1", "b:2"}, 40);
  routes.set_holders(3, -1);
  absl::StatusOr<RouteTable> table = RouteTable::Parse(routes);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->shards(), 8);
  EXPECT_EQ(table->revision(), 40);
  EXPECT_EQ(table->HolderAddress(0), "a:1");
  EXPECT_EQ(table->HolderAddress(1), "b:2");
  EXPECT_EQ(table->HolderAddress(3), "");
  EXPECT_EQ(table->HolderAddress(8), "");
  EXPECT_EQ(table->HolderAddress(-1), "");
}

TEST(RouteTable, RefusesWhatIsNoTableNamingTheField) {
  EXPECT_EQ(RouteTable::Parse(Routes(0, {"a:1"}, 1)).status().message(),
            "ClusterRoutes: holders is empty (no shards)");
  ClusterRoutesResponse routes = Routes(4, {"a:1"}, 1);
  routes.set_holders(2, 1);
  EXPECT_EQ(RouteTable::Parse(routes).status().message(),
            "ClusterRoutes: holders[2] is 1, not -1 or below 1 (the members)");
  routes.set_holders(2, -2);
  EXPECT_EQ(RouteTable::Parse(routes).status().code(), absl::StatusCode::kInvalidArgument);
  routes = Routes(4, {"a:1"}, 1);
  routes.mutable_members(0)->clear_address();
  EXPECT_EQ(RouteTable::Parse(routes).status().message(),
            "ClusterRoutes: members[0] has no address");
  routes.mutable_members(0)->clear_name();
  EXPECT_EQ(RouteTable::Parse(routes).status().message(), "ClusterRoutes: members[0] has no name");
}

TEST(HolderHint, ParsesTheHeader) {
  absl::StatusOr<HolderHint> hint = ParseHolderHint("0a1f m2 10.0.0.3:50051 1234");
  ASSERT_TRUE(hint.ok()) << hint.status();
  EXPECT_EQ(hint->shard, 0xa1f);
  EXPECT_EQ(hint->name, "m2");
  EXPECT_EQ(hint->address, "10.0.0.3:50051");
  EXPECT_EQ(hint->revision, 1234);
  for (const char* bad : {"", "0a1f m2 10.0.0.3:50051", "zz m2 h:1 5", "1000 m2 h:1 5",
                          "0001 m2 nohostport 5", "0001 m2 h:1 -5", "0001 m2 h:1 x"}) {
    EXPECT_EQ(ParseHolderHint(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseHolderHint("0001 m2 h:1 x").status().message(),
            "adaptd-holder \"0001 m2 h:1 x\": the revision \"x\" is not a positive integer "
            "(expected \"SSSS NAME HOST:PORT REVISION\")");
}

TEST(RouteTable, TakesOnlyNewerHints) {
  absl::StatusOr<RouteTable> table = RouteTable::Parse(Routes(8, {"a:1", "b:2"}, 40));
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(table->Apply(HolderHint{0, "m1", "b:2", 40}));  // not newer than the table
  EXPECT_EQ(table->HolderAddress(0), "a:1");
  EXPECT_TRUE(table->Apply(HolderHint{0, "m9", "c:3", 41}));  // a member the table lacks
  EXPECT_EQ(table->HolderAddress(0), "c:3");
  EXPECT_FALSE(table->Apply(HolderHint{0, "m1", "b:2", 41}));  // not newer than the last hint
  EXPECT_FALSE(table->Apply(HolderHint{0, "m9", "c:3", 45}));  // the same holder
  EXPECT_TRUE(table->Apply(HolderHint{0, "m1", "b:2", 46}));
  EXPECT_EQ(table->HolderAddress(0), "b:2");
  EXPECT_FALSE(table->Apply(HolderHint{99, "m1", "b:2", 50}));  // no such shard
}

// A router over a scripted ClusterRoutes and a clock the test moves.
class RouterTest : public ::testing::Test {
 protected:
  Router MakeRouter() {
    return Router(
        "given:1",
        [this]() -> absl::StatusOr<ClusterRoutesResponse> {
          ++fetches_;
          return answer_;
        },
        [](const std::string& address) {
          return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
        },
        [this] { return now_; });
  }
  // A store of `shard` (of 4,096).
  static std::string StoreOf(int shard) {
    for (int i = 0;; ++i) {
      std::string store = absl::StrCat("s", i);
      if (StoreShard("t", store) == shard) return store;
    }
  }

  absl::StatusOr<ClusterRoutesResponse> answer_;
  int fetches_ = 0;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(RouterTest, SendsEachStoreToItsHolderAndTheRestToTheGivenMember) {
  answer_ = Routes(kClusterShards, {"127.0.0.1:9", "given:1"}, 7);
  answer_->set_holders(2, -1);
  Router router = MakeRouter();
  EXPECT_EQ(router.Pick("t", StoreOf(0)).address, "127.0.0.1:9");
  EXPECT_NE(router.Pick("t", StoreOf(0)).stub, nullptr);
  EXPECT_EQ(router.Pick("t", StoreOf(1)).stub, nullptr);  // the given member itself
  EXPECT_EQ(router.Pick("t", StoreOf(2)).stub, nullptr);  // no holder
  EXPECT_EQ(fetches_, 1);
  EXPECT_EQ(router.revision(), 7);
}

TEST_F(RouterTest, ASingleServerTurnsRoutingOff) {
  answer_ = absl::UnimplementedError("not a member");
  Router router = MakeRouter();
  EXPECT_EQ(router.Pick("t", "s").stub, nullptr);
  EXPECT_FALSE(router.enabled());
  now_ += absl::Seconds(10);
  router.Pick("t", "s");
  EXPECT_EQ(fetches_, 1);
}

TEST_F(RouterTest, RefetchesAtMostOnceASecondWhileTheTableIsStale) {
  answer_ = absl::UnavailableError("starting");
  Router router = MakeRouter();
  EXPECT_EQ(router.Pick("t", StoreOf(0)).stub, nullptr);
  EXPECT_EQ(router.Pick("t", StoreOf(0)).stub, nullptr);
  EXPECT_EQ(fetches_, 1);  // within the second
  answer_ = Routes(kClusterShards, {"127.0.0.1:9"}, 7);
  now_ += absl::Seconds(1);
  EXPECT_EQ(router.Pick("t", StoreOf(0)).address, "127.0.0.1:9");
  EXPECT_EQ(fetches_, 2);
  // A refetch asked for within the second waits for the second to pass.
  answer_ = Routes(kClusterShards, {"127.0.0.1:8"}, 9);
  router.Refresh();  // too soon
  EXPECT_EQ(fetches_, 2);
  now_ += absl::Seconds(1);
  router.Refresh();
  EXPECT_EQ(fetches_, 3);
  EXPECT_EQ(router.Pick("t", StoreOf(0)).address, "127.0.0.1:8");
  EXPECT_EQ(router.revision(), 9);
}

}  // namespace
}  // namespace adaptd
