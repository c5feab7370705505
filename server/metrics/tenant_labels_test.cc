#include "server/metrics/tenant_labels.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

using Strings = std::vector<std::string>;

TEST(TenantLabels, AllowListedTenantsAlwaysKeepTheirLabel) {
  TenantLabels t({"acme", "globex"}, /*top_k=*/0);
  EXPECT_EQ(t.Observe("acme", 1).label, "acme");
  EXPECT_EQ(t.Observe("globex", 1e9).label, "globex");
  EXPECT_EQ(t.Observe("initech", 1e12).label, "other");
  EXPECT_TRUE(t.Admitted().empty());
}

TEST(TenantLabels, FirstKTenantsTakeTheSlotsTheRestAreOther) {
  TenantLabels t({}, 2);
  EXPECT_EQ(t.Observe("a", 1).label, "a");
  EXPECT_EQ(t.Observe("b", 1).label, "b");
  EXPECT_EQ(t.Observe("c", 1).label, "other");
  EXPECT_EQ(t.Observe("a", 1).label, "a");
  EXPECT_EQ(t.Admitted(), (Strings{"a", "b"}));
}

TEST(TenantLabels, AllowListDoesNotUseTopKSlots) {
  TenantLabels t({"vip"}, 1);
  EXPECT_EQ(t.Observe("vip", 5).label, "vip");
  EXPECT_EQ(t.Observe("a", 1).label, "a");
  EXPECT_EQ(t.Observe("b", 1).label, "other");
  EXPECT_EQ(t.Admitted(), (Strings{"a"}));
}

TEST(TenantLabels, HeavierTenantTakesTheWeakestSlotOnlyPastTwiceItsTraffic) {
  TenantLabels t({}, 2);
  t.Observe("a", 100);
  t.Observe("b", 10);
  // c's traffic reaches 20 = 2 × b's: not enough.
  EXPECT_EQ(t.Observe("c", 20).label, "other");
  const TenantLabels::Decision d = t.Observe("c", 1);  // 21 > 20
  EXPECT_EQ(d.label, "c");
  EXPECT_EQ(d.evicted, "b");
  EXPECT_EQ(t.Admitted(), (Strings{"a", "c"}));
  // b's later traffic goes to "other" until it is heavy enough again.
  EXPECT_EQ(t.Observe("b", 1).label, "other");
  const TenantLabels::Decision back = t.Observe("b", 100);  // 111 > 2 × 21
  EXPECT_EQ(back.label, "b");
  EXPECT_EQ(back.evicted, "c");
}

TEST(TenantLabels, SeriesStayBoundedUnderManyTenants) {
  TenantLabels t({"vip"}, 5, /*max_tracked=*/100);
  std::set<std::string> labels;
  for (int i = 0; i < 10000; ++i) {
    labels.insert(t.Observe("t" + std::to_string(i % 1000), i % 7).label);
    labels.insert(t.Observe("vip", 1).label);
  }
  // At any moment 5 admitted + vip + other; over time evictions may name more, but every
  // label seen is a tenant that was admitted at some point, "vip", or "other".
  EXPECT_EQ(t.Admitted().size(), 5u);
  EXPECT_TRUE(labels.count("other"));
  EXPECT_TRUE(labels.count("vip"));
}

TEST(TenantLabels, TenantsBeyondTheTrackingCapCountAsOther) {
  TenantLabels t({}, 1, /*max_tracked=*/2);
  t.Observe("a", 1);
  t.Observe("b", 1);
  // c is not tracked, so however heavy it is it never competes for a slot.
  EXPECT_EQ(t.Observe("c", 1e9).label, "other");
  EXPECT_EQ(t.Observe("c", 1e9).label, "other");
  EXPECT_EQ(t.Admitted(), (Strings{"a"}));
}

TEST(TenantLabels, ATenantNamedOtherSharesTheOverflowSeries) {
  TenantLabels t({"other"}, 3);
  EXPECT_EQ(t.Observe("other", 1).label, "other");
  EXPECT_TRUE(t.Admitted().empty());
}

}  // namespace
}  // namespace adaptd
