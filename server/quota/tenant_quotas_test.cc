#include "server/quota/tenant_quotas.h"

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
