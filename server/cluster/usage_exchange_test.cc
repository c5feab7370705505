#include "server/cluster/usage_exchange.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace adaptd {
namespace {

using adapt::v1::ClusterQuotaResponse;

constexpr uint64_t kMemoryLimit = 1000;
constexpr double kRate = 100;

// Other members whose usage the test sets; one that is "down" fails its call as a dead member
// does (UNAVAILABLE).
class FakePeers final : public UsagePeers {
 public:
  void Set(const std::string& name, uint64_t memory, double demand) {
    absl::MutexLock lock(&mu_);
    Member& m = Add(name);
    m.usage.Clear();
    adapt::v1::TenantUsage* mem = m.usage.add_tenants();
    mem->set_tenant("mem");
    mem->set_memory_bytes(memory);
    adapt::v1::TenantUsage* rate = m.usage.add_tenants();
    rate->set_tenant("rate");
    rate->set_examples_demand(demand);
  }
  void Down(const std::string& name, bool down) {
    absl::MutexLock lock(&mu_);
    Add(name).down = down;
  }
  void Leave(const std::string& name) {
    absl::MutexLock lock(&mu_);
    listed_.erase(name);
  }
  int asked() const {
    absl::MutexLock lock(&mu_);
    return asked_;
  }

  std::vector<const cluster::Member*> Others() const override {
    absl::MutexLock lock(&mu_);
    std::vector<const cluster::Member*> others;
    for (const auto& [name, m] : listed_) others.push_back(&m->member);
    return others;
  }
  absl::Status AskUsage(const cluster::Member& to, ClusterQuotaResponse* response,
                        absl::Duration /*timeout*/) override {
    absl::MutexLock lock(&mu_);
    ++asked_;
    const Member& m = *listed_.at(to.name);
    if (m.down) return absl::UnavailableError("connection refused");
    *response = m.usage;
    return absl::OkStatus();
  }

 private:
  struct Member {
    cluster::Member member;
    ClusterQuotaResponse usage;
    bool down = false;
  };
  Member& Add(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::unique_ptr<Member>& m = listed_[name];
    if (m == nullptr) {
      m = std::make_unique<Member>();
      m->member = cluster::Member{name, name + ":1"};
    }
    return *m;
  }

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Member>> listed_ ABSL_GUARDED_BY(mu_);
  int asked_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<TenantQuotas> Quotas(bool limited = true) {
  adapt::v1::ServerConfig config;
  if (limited) {
    (*config.mutable_tenant_quotas())["mem"].set_max_memory_bytes(kMemoryLimit);
    (*config.mutable_tenant_quotas())["rate"].set_examples_per_second(kRate);
  }
  absl::StatusOr<std::unique_ptr<TenantQuotas>> q = TenantQuotas::Create(config);
  EXPECT_TRUE(q.ok()) << q.status();
  return *std::move(q);
}

class UsageExchangeTest : public ::testing::Test {
 protected:
  UsageExchangeTest()
      : quotas_(Quotas()),
        exchange_(
            &peers_, quotas_.get(), [this] { return memory_; }, absl::Milliseconds(20)) {}

  // Whether this member may grow "mem" from its `here` bytes by `added`.
  bool Fits(uint64_t here, uint64_t added) { return quotas_->CheckMemory("mem", here, added).ok(); }

  FakePeers peers_;
  std::map<std::string, uint64_t> memory_;  // this member's, by tenant
  std::unique_ptr<TenantQuotas> quotas_;
  UsageExchange exchange_;
};

TEST_F(UsageExchangeTest, AnswersThisMembersUsageOfTheLimitedTenantsOnly) {
  memory_ = {{"mem", 300}, {"free", 5000}, {"rate", 0}};
  exchange_.Exchange();
  const ClusterQuotaResponse usage = exchange_.Usage();
  ASSERT_EQ(usage.tenants_size(), 1) << usage.DebugString();
  EXPECT_EQ(usage.tenants(0).tenant(), "mem");
  EXPECT_EQ(usage.tenants(0).memory_bytes(), 300u);
}

TEST_F(UsageExchangeTest, MemoryHeldElsewhereLeavesThisMemberItsPartOfTheHeadroom) {
  peers_.Set("b", 500, 0);
  peers_.Set("c", 100, 0);
  memory_ = {{"mem", 300}};
  exchange_.Exchange();
  // 300 here, 600 elsewhere: 100 left, a third of it this member's.
  EXPECT_TRUE(Fits(300, 33));
  EXPECT_FALSE(Fits(300, 34));
  const absl::Status over = quotas_->CheckMemory("mem", 350, 60);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.message().find("may use at most 1000 bytes; its stores use 950"),
            std::string::npos)
      << over;
}

TEST_F(UsageExchangeTest, AMemberThatDoesNotAnswerKeepsItsMemoryCountedUntilItLeaves) {
  peers_.Set("b", 600, 0);
  peers_.Set("c", 0, 0);
  memory_ = {{"mem", 100}};
  exchange_.Exchange();
  EXPECT_FALSE(Fits(100, 200));  // 100 + 600 + 200 would still fit, but not its part of it
  peers_.Down("b", true);
  exchange_.Exchange();
  EXPECT_TRUE(Fits(100, 100));
  EXPECT_FALSE(Fits(100, 101));  // b's 600 still counted: 300 left, 3 members
  peers_.Leave("b");
  exchange_.Exchange();
  EXPECT_TRUE(Fits(100, 400));  // 900 left, 2 members
  EXPECT_FALSE(Fits(100, 451));
}

TEST_F(UsageExchangeTest, TheRateIsSharedByDemandAndASilentMemberAsksNone) {
  peers_.Set("b", 0, 90);
  exchange_.Exchange();
  // b asks 90 of 100 and this member nothing: this member has half the 10 left.
  EXPECT_DOUBLE_EQ(quotas_->RateShare("rate"), 5);
  peers_.Down("b", true);
  exchange_.Exchange();
  EXPECT_DOUBLE_EQ(quotas_->RateShare("rate"), 50);
}

TEST_F(UsageExchangeTest, StartGivesEachMemberItsEvenPartThenExchangesEveryInterval) {
  peers_.Set("b", 0, 0);
  peers_.Set("c", 0, 0);
  exchange_.Start();
  EXPECT_EQ(quotas_->RateShare("rate"), kRate / 3);
  EXPECT_TRUE(Fits(0, 333));
  EXPECT_FALSE(Fits(0, 334));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (peers_.asked() < 4 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  exchange_.Stop();
  EXPECT_GE(peers_.asked(), 4);  // two rounds at least
  const int asked = peers_.asked();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(peers_.asked(), asked);  // none once stopped
}

TEST_F(UsageExchangeTest, AStartAfterTheStopRunsNothing) {
  peers_.Set("b", 0, 0);
  exchange_.Stop();  // a member stopping while it still starts
  exchange_.Start();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(peers_.asked(), 0);
}

TEST(UsageExchangeWithoutLimits, DoesNotRun) {
  FakePeers peers;
  peers.Set("b", 0, 0);
  std::unique_ptr<TenantQuotas> quotas = Quotas(false);
  UsageExchange exchange(
      &peers, quotas.get(), [] { return std::map<std::string, uint64_t>(); },
      absl::Milliseconds(1));
  exchange.Start();
  absl::SleepFor(absl::Milliseconds(30));
  exchange.Stop();
  EXPECT_EQ(peers.asked(), 0);
}

}  // namespace
}  // namespace adaptd
