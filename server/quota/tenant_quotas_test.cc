#include "server/quota/tenant_quotas.h"

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace adaptd {
namespace {

struct FakeClock {
  absl::Time now = absl::FromUnixSeconds(1000);
  TenantQuotas::Clock fn() {
    return [this] { return now; };
  }
};

adapt::v1::ServerConfig Config() {
  adapt::v1::ServerConfig config;
  config.mutable_default_quota()->set_max_stores(2);
  config.mutable_default_quota()->set_max_memory_bytes(1000);
  config.mutable_default_quota()->set_examples_per_second(10);
  auto& big = (*config.mutable_tenant_quotas())["big"];
  big.set_max_stores(0);  // unlimited
  big.set_examples_per_second(100);
  big.set_examples_burst(500);
  return config;
}

TEST(TenantQuotas, OverridesReplaceOnlyTheirFields) {
  FakeClock clock;
  auto q = TenantQuotas::Create(Config(), clock.fn());
  ASSERT_TRUE(q.ok()) << q.status();
  const QuotaLimits d = (*q)->LimitsOf("small");
  EXPECT_EQ(d.max_stores, 2u);
  EXPECT_EQ(d.max_memory_bytes, 1000u);
  const QuotaLimits b = (*q)->LimitsOf("big");
  EXPECT_EQ(b.max_stores, 0u);
  EXPECT_EQ(b.max_memory_bytes, 1000u);
  EXPECT_EQ(b.examples_per_second, 100);
  EXPECT_TRUE((*q)->limits_memory());
}

TEST(TenantQuotas, StoresAndMemoryNameTheLimit) {
  FakeClock clock;
  auto q = *TenantQuotas::Create(Config(), clock.fn());
  EXPECT_TRUE(q->CheckStores("small", 1).ok());
  const absl::Status stores = q->CheckStores("small", 2);
  EXPECT_EQ(stores.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(stores.message(),
            "quota max_stores: tenant 'small' may hold at most 2 stores and holds 2");
  EXPECT_TRUE(q->CheckStores("big", 1000000).ok());

  EXPECT_TRUE(q->CheckMemory("small", 600, 400).ok());
  const absl::Status memory = q->CheckMemory("small", 600, 401);
  EXPECT_EQ(memory.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(memory.message(),
            "quota max_memory_bytes: tenant 'small' may use at most 1000 bytes; its stores use 600 "
            "and this change needs 401 more");
}

TEST(TenantQuotas, TokenBucketRefillsAtTheRate) {
  FakeClock clock;
  auto q = *TenantQuotas::Create(Config(), clock.fn());
  EXPECT_TRUE(q->TakeExamples("small", 10).ok());  // a full bucket: one second's worth
  const absl::Status empty = q->TakeExamples("small", 1);
  EXPECT_EQ(empty.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(empty.message(), "quota examples_per_second: tenant 'small' "))
      << empty;
  clock.now += absl::Milliseconds(500);
  EXPECT_TRUE(q->TakeExamples("small", 5).ok());
  EXPECT_FALSE(q->TakeExamples("small", 1).ok());
  clock.now += absl::Seconds(100);  // capped at the burst
  EXPECT_TRUE(q->TakeExamples("small", 10).ok());
  EXPECT_FALSE(q->TakeExamples("small", 1).ok());
  // A message larger than the burst can never pass; the message says so.
  const absl::Status huge = q->TakeExamples("small", 11);
  EXPECT_EQ(huge.message(),
            "quota examples_per_second: tenant 'small' is limited to 10 examples per second with "
            "bursts of 10; one message of 11 examples exceeds the burst: send smaller messages");
  // Tenants have separate buckets.
  EXPECT_TRUE(q->TakeExamples("big", 500).ok());
  EXPECT_TRUE(q->TakeExamples("other", 10).ok());
}

TEST(TenantQuotas, UnlimitedByDefault) {
  auto q = *TenantQuotas::Create(adapt::v1::ServerConfig());
  EXPECT_FALSE(q->limits_memory());
  EXPECT_TRUE(q->CheckStores("t", 1u << 30).ok());
  EXPECT_TRUE(q->CheckMemory("t", 1ull << 50, 1ull << 50).ok());
  EXPECT_TRUE(q->TakeExamples("t", 1u << 30).ok());
}

TEST(TenantQuotas, ClusterMemoryCountsWhatTheOtherMembersHold) {
  FakeClock clock;
  auto q = *TenantQuotas::Create(Config(), clock.fn());
  // Limit 1000: 700 elsewhere and 200 here at the exchange, so 100 of headroom, of which this
  // member of 2 may take 50 until the next exchange.
  q->SetPeerUsage(2, {{"small", PeerUsage{700, {}}}}, {{"small", 200}});
  EXPECT_TRUE(q->CheckMemory("small", 200, 50).ok());
  const absl::Status part = q->CheckMemory("small", 200, 51);
  EXPECT_EQ(part.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(part.message(),
            "quota max_memory_bytes: tenant 'small' may use at most 1000 bytes across the cluster "
            "and its stores use 900 (200 on this member) and this change needs 51 more; until "
            "the members next exchange usage this member may hold 250 bytes (its part of the "
            "headroom): retry in a second");
  const absl::Status memory = q->CheckMemory("small", 200, 101);
  EXPECT_EQ(memory.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(memory.message(),
            "quota max_memory_bytes: tenant 'small' may use at most 1000 bytes; its stores use 900 "
            "(200 on this member) and this change needs 101 more");
  // Another tenant: nothing known of it, so its even part of the limit.
  EXPECT_TRUE(q->CheckMemory("other", 0, 500).ok());
  EXPECT_FALSE(q->CheckMemory("other", 0, 501).ok());
  q->SetPeerUsage(2, {}, {{"small", 200}});  // the other members freed theirs
  EXPECT_TRUE(q->CheckMemory("small", 200, 400).ok());
  // A write (nothing added) is refused once this member holds more than its part.
  EXPECT_TRUE(q->CheckMemory("small", 600, 0).ok());
  EXPECT_FALSE(q->CheckMemory("small", 601, 0).ok());
}

// Members adding memory between exchanges never pass the limit together: each takes at most
// its part of the headroom the last exchange left.
TEST(TenantQuotas, MembersGrowingBetweenExchangesStayUnderTheLimit) {
  FakeClock clock;
  adapt::v1::ServerConfig config;
  config.mutable_default_quota()->set_max_memory_bytes(100000);
  std::vector<std::unique_ptr<TenantQuotas>> members;
  for (int i = 0; i < 3; ++i) members.push_back(*TenantQuotas::Create(config, clock.fn()));
  for (auto& m : members) m->SetPeerUsage(3, {}, {});
  uint64_t held[3] = {0, 0, 0};
  for (int round = 0; round < 50; ++round) {
    // Between two exchanges every member adds 1000-byte stores as long as it may.
    for (int m = 0; m < 3; ++m) {
      while (members[m]->CheckMemory("t", held[m], 1000).ok()) held[m] += 1000;
    }
    EXPECT_LE(held[0] + held[1] + held[2], 100000u) << round;
    for (int m = 0; m < 3; ++m) {
      absl::flat_hash_map<std::string, PeerUsage> peers;
      for (int o = 0; o < 3; ++o) {
        if (o != m) peers["t"].memory_bytes += held[o];
      }
      members[m]->SetPeerUsage(3, peers, {{"t", held[m]}});
    }
  }
  // In the end the cluster holds all the limit allows (within a store per member).
  EXPECT_GE(held[0] + held[1] + held[2], 100000u - 3 * 1000);
}

TEST(TenantQuotas, RateSharesAreMaxMinFairAndSumToTheLimit) {
  FakeClock clock;
  auto q = *TenantQuotas::Create(Config(), clock.fn());  // "big": 100 examples per second
  EXPECT_EQ(q->RateShare("big"), 100);                   // a single server: all of it
  q->SetPeerUsage(4, {{"big", PeerUsage{0, {150}}}}, {});
  EXPECT_NEAR(q->RateShare("big"), 100.0 / 400, 1e-12);  // no demand here yet: a sliver
  // 50 examples asked here in one second (only some granted: the rest is still demand).
  for (int i = 0; i < 50; ++i) (void)q->TakeExamples("big", 1);
  clock.now += absl::Seconds(1);
  EXPECT_NEAR(q->UpdateDemand().at("big"), 50, 1e-9);
  // Demand 50 here and 150 elsewhere, limit 100: an even split of it, 50 each.
  EXPECT_NEAR(q->RateShare("big"), 50, 1e-9);
  // Here 50 against 10 and 200 elsewhere: 10 has all it asks, the other two 45 each.
  q->SetPeerUsage(4, {{"big", PeerUsage{0, {10, 200}}}}, {});
  EXPECT_NEAR(q->RateShare("big"), 45, 1e-9);
  // Demand below the limit: what it asks plus an even part of the rest.
  q->SetPeerUsage(4, {{"big", PeerUsage{0, {10}}}}, {});
  EXPECT_NEAR(q->RateShare("big"), 50 + 40.0 / 4, 1e-9);
  // A quiet window halves the smoothed demand.
  clock.now += absl::Seconds(1);
  EXPECT_NEAR(q->UpdateDemand().at("big"), 25, 1e-9);
}

// Three members, each with its own buckets, exchanging demand every second as the cluster's
// quota loop does: the tenant's limit is 60 examples per second, two clients ask 100 per
// second of their members and one 10 of its own. Over 30 simulated seconds the members grant
// 60 per second between them (within 10%): the quiet client all it asks, the busy two an even
// part of the rest.
TEST(TenantQuotas, MembersExchangingDemandHoldTheRateClusterWide) {
  FakeClock clock;
  adapt::v1::ServerConfig config;
  config.mutable_default_quota()->set_examples_per_second(60);
  std::vector<std::unique_ptr<TenantQuotas>> members;
  for (int i = 0; i < 3; ++i) members.push_back(*TenantQuotas::Create(config, clock.fn()));
  for (auto& m : members) m->SetPeerUsage(3, {}, {});
  const double asked[3] = {100, 100, 10};  // examples per second at each member
  double granted[3] = {0, 0, 0}, late[3] = {0, 0, 0};
  const absl::Duration step = absl::Milliseconds(10);
  for (int tick = 1; tick <= 3000; ++tick) {
    clock.now += step;
    for (int m = 0; m < 3; ++m) {
      // asked[m] / 100 examples per tick, sent one at a time.
      const int due =
          static_cast<int>(asked[m] * tick / 100) - static_cast<int>(asked[m] * (tick - 1) / 100);
      for (int e = 0; e < due; ++e) {
        if (members[m]->TakeExamples("t", 1).ok()) {
          granted[m] += 1;
          if (tick > 1000) late[m] += 1;
        }
      }
    }
    if (tick % 100 == 0) {  // the exchange
      std::vector<double> demand(3);
      for (int m = 0; m < 3; ++m) demand[m] = members[m]->UpdateDemand()["t"];
      for (int m = 0; m < 3; ++m) {
        absl::flat_hash_map<std::string, PeerUsage> peers;
        for (int o = 0; o < 3; ++o) {
          if (o != m) peers["t"].demands.push_back(demand[o]);
        }
        members[m]->SetPeerUsage(3, peers, {});
      }
    }
  }
  // The last 20 seconds, once the shares settled: 60 per second within 10%.
  EXPECT_NEAR((late[0] + late[1] + late[2]) / 20, 60, 6);
  // The quiet client had all it asked; the busy two about equal parts of the rest.
  EXPECT_NEAR(late[2] / 20, 10, 1);
  EXPECT_NEAR(late[0], late[1], 0.1 * late[0]);
  EXPECT_NEAR(late[0] / 20, 25, 2.5);
}

TEST(TenantQuotas, RejectsBadRates) {
  adapt::v1::ServerConfig config;
  config.mutable_default_quota()->set_examples_per_second(-1);
  EXPECT_EQ(TenantQuotas::Create(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.Clear();
  (*config.mutable_tenant_quotas())["t"].set_examples_burst(std::nan(""));
  const auto status = TenantQuotas::Create(config).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("tenant_quotas[t].examples_burst"), absl::string_view::npos);
}

}  // namespace
}  // namespace adaptd
