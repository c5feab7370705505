#include "server/cluster/membership.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace adaptd::cluster {
namespace {

std::vector<Member> Members(int n) {
  std::vector<Member> members;
  for (int i = 0; i < n; ++i) {
    members.push_back({absl::StrCat("adaptd-", i), absl::StrCat("adaptd-", i, ".adaptd:50051")});
  }
  return members;
}

Membership Make(int n, const std::string& self = "adaptd-0") {
  auto m = Membership::Create(self, Members(n));
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

struct Key {
  std::string tenant, store;
};

std::vector<Key> Keys(int n) {
  std::vector<Key> keys;
  for (int i = 0; i < n; ++i) keys.push_back({absl::StrCat("t", i % 37), absl::StrCat("s", i)});
  return keys;
}

// Values computed apart from this code, from the definition in docs/CLUSTER.md: a change of
// the weight would move stores between replicas of two versions, so it must fail here.
TEST(MembershipTest, TheWeightIsTheDocumentedOne) {
  EXPECT_EQ(RendezvousWeight("adaptd-0", "acme/s1"), 0x1b55f59f3019dcf2ULL);
  EXPECT_EQ(RendezvousWeight("adaptd-1", "acme/s1"), 0x456302cc17327d6eULL);
  EXPECT_EQ(RendezvousWeight("adaptd-2", "acme/s1"), 0x04656465c52b19e1ULL);
  EXPECT_EQ(RendezvousWeight("node-a", "t/x"), 0x5cb5f8f0f5024a77ULL);
  const Membership m = Make(3);
  EXPECT_EQ(m.OwnerOf("acme", "s1").name, "adaptd-1");
  EXPECT_EQ(m.OwnerOf("acme", "s2").name, "adaptd-1");
  EXPECT_EQ(m.OwnerOf("acme", "s3").name, "adaptd-2");
  EXPECT_EQ(m.OwnerOf("globex", "orders").name, "adaptd-0");
  EXPECT_EQ(m.OwnerOf("t0", "s0").name, "adaptd-2");
}

TEST(MembershipTest, TheOwnerHasTheHighestWeightWhateverTheListOrder) {
  std::vector<Member> members = Members(5);
  const Membership sorted = *Membership::Create("adaptd-3", members);
  std::reverse(members.begin(), members.end());
  const Membership reversed = *Membership::Create("adaptd-3", members);
  EXPECT_EQ(sorted.fingerprint(), reversed.fingerprint());
  EXPECT_EQ(sorted.self().name, "adaptd-3");
  for (const Key& k : Keys(2000)) {
    const Member& owner = sorted.OwnerOf(k.tenant, k.store);
    EXPECT_EQ(owner, reversed.OwnerOf(k.tenant, k.store));
    const std::string key = k.tenant + "/" + k.store;
    for (const Member& m : members) {
      EXPECT_LE(RendezvousWeight(m.name, key), RendezvousWeight(owner.name, key));
    }
    EXPECT_EQ(sorted.OwnsStore(k.tenant, k.store), owner.name == "adaptd-3");
  }
}

TEST(MembershipTest, AddingAMemberMovesOnlyTheStoresItNowOwns) {
  const Membership three = Make(3), four = Make(4);
  EXPECT_NE(three.fingerprint(), four.fingerprint());
  int moved = 0;
  const std::vector<Key> keys = Keys(20000);
  for (const Key& k : keys) {
    const std::string before = three.OwnerOf(k.tenant, k.store).name;
    const std::string after = four.OwnerOf(k.tenant, k.store).name;
    if (before != after) {
      EXPECT_EQ(after, "adaptd-3") << k.tenant << "/" << k.store;
      ++moved;
    }
  }
  // About a quarter of them.
  EXPECT_GT(moved, keys.size() / 4 * 0.9);
  EXPECT_LT(moved, keys.size() / 4 * 1.1);
}

TEST(MembershipTest, RemovingAMemberMovesOnlyItsStores) {
  std::vector<Member> without = Members(4);
  without.erase(without.begin() + 1);  // adaptd-1 leaves
  const Membership four = Make(4);
  const Membership three = *Membership::Create("adaptd-0", without);
  for (const Key& k : Keys(20000)) {
    const std::string before = four.OwnerOf(k.tenant, k.store).name;
    const std::string after = three.OwnerOf(k.tenant, k.store).name;
    if (before != "adaptd-1") {
      EXPECT_EQ(before, after) << k.tenant << "/" << k.store;
    } else {
      EXPECT_NE(after, "adaptd-1");
    }
  }
}

TEST(MembershipTest, StoresSpreadEvenlyAndOneTenantsStoresSpreadToo) {
  const Membership m = Make(4);
  std::map<std::string, int> count;
  const std::vector<Key> keys = Keys(40000);
  for (const Key& k : keys) ++count[m.OwnerOf(k.tenant, k.store).name];
  ASSERT_EQ(count.size(), 4u);
  for (const auto& [name, n] : count) {
    EXPECT_GT(n, 10000 * 0.95) << name;
    EXPECT_LT(n, 10000 * 1.05) << name;
  }
  std::map<std::string, int> one_tenant;
  for (int i = 0; i < 400; ++i) ++one_tenant[m.OwnerOf("acme", absl::StrCat("model-", i)).name];
  ASSERT_EQ(one_tenant.size(), 4u);
  for (const auto& [name, n] : one_tenant) EXPECT_GT(n, 60) << name;
}

TEST(MembershipTest, ATenantsHomeIsTheRendezvousOverItsNameAndTenantsSpread) {
  const Membership m = Make(4);
  std::map<std::string, int> homes;
  for (int i = 0; i < 4000; ++i) {
    const std::string tenant = absl::StrCat("tenant-", i);
    const Member& home = m.HomeOf(tenant);
    ++homes[home.name];
    // The member of highest weight for the key `tenant` (no '/': no store's key).
    for (const Member& other : m.members()) {
      EXPECT_GE(RendezvousWeight(home.name, tenant), RendezvousWeight(other.name, tenant));
    }
  }
  ASSERT_EQ(homes.size(), 4u);
  for (const auto& [name, n] : homes) EXPECT_GT(n, 800) << name;
}

TEST(MembershipTest, ASingleMemberOwnsEverything) {
  const Membership m = Make(1);
  for (const Key& k : Keys(100)) EXPECT_TRUE(m.OwnsStore(k.tenant, k.store));
}

TEST(MembershipTest, ABadListIsRefusedNamingTheField) {
  const auto error = [](std::string self, std::vector<Member> members) {
    auto m = Membership::Create(std::move(self), std::move(members));
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(m.status().message());
  };
  EXPECT_EQ(error("a", {}), "cluster.members: the list is empty");
  EXPECT_EQ(error("a", {{"a", "h:1"}, {"B", "h:2"}}),
            "cluster.members[1].name: \"B\" has 'B' (only a-z, 0-9 and '-')");
  EXPECT_EQ(error("a", {{"", "h:1"}}), "cluster.members[0].name: \"\" is empty");
  EXPECT_EQ(error("a", {{"-a", "h:1"}}), "cluster.members[0].name: \"-a\" starts or ends with '-'");
  EXPECT_EQ(error("a", {{std::string(64, 'a'), "h:1"}}),
            absl::StrCat("cluster.members[0].name: \"", std::string(64, 'a'),
                         "\" has 64 characters (at most 63)"));
  EXPECT_EQ(error("a", {{"a", "h:1"}, {"a", "h:2"}}),
            "cluster.members[1].name: \"a\" is listed twice");
  EXPECT_EQ(error("a", {{"a", "h:1"}, {"b", "h:1"}}),
            "cluster.members[1].address: \"h:1\" is listed twice");
  EXPECT_EQ(error("a", {{"a", "h"}}), "cluster.members[0].address: \"h\" is not HOST:PORT");
  EXPECT_EQ(error("a", {{"a", ":80"}}), "cluster.members[0].address: \":80\" is not HOST:PORT");
  EXPECT_EQ(error("a", {{"a", "h:0"}}),
            "cluster.members[0].address: \"h:0\" has no port from 1 to 65535");
  EXPECT_EQ(error("a", {{"a", "h:65536"}}),
            "cluster.members[0].address: \"h:65536\" has no port from 1 to 65535");
  EXPECT_EQ(error("a", {{"a", "::1:80"}}),
            "cluster.members[0].address: \"::1:80\" is not HOST:PORT (an IPv6 host goes in "
            "brackets)");
  EXPECT_EQ(error("c", {{"a", "h:1"}, {"b", "h:2"}}),
            "cluster.self: \"c\" is not among cluster.members");
  EXPECT_TRUE(Membership::Create("a", {{"a", "[::1]:80"}}).ok());
}

// Draining a member moves exactly its stores, as removing it from the list would, and gives
// the same owners and fingerprint as the list without it.
TEST(MembershipTest, ADrainingMemberOwnsNothingAndTheRestIsTheListWithoutIt) {
  const Membership four = Make(4);
  auto drained = four.Draining({"adaptd-3", "not-a-member"});
  ASSERT_TRUE(drained.ok()) << drained.status();
  const Membership three = Make(3);
  EXPECT_EQ(drained->fingerprint(), three.fingerprint());
  EXPECT_NE(drained->fingerprint(), four.fingerprint());
  EXPECT_TRUE(drained->IsDraining("adaptd-3"));
  EXPECT_FALSE(drained->IsDraining("adaptd-0"));
  EXPECT_EQ(drained->members().size(), 4u);  // still a member: it can hand its stores off
  ASSERT_NE(drained->Find("adaptd-3"), nullptr);
  EXPECT_EQ(drained->Find("adaptd-9"), nullptr);
  int moved = 0;
  for (const Key& k : Keys(5000)) {
    const std::string before = four.OwnerOf(k.tenant, k.store).name;
    const std::string after = drained->OwnerOf(k.tenant, k.store).name;
    EXPECT_EQ(after, three.OwnerOf(k.tenant, k.store).name);
    if (before != after) {
      EXPECT_EQ(before, "adaptd-3");
      ++moved;
    }
  }
  EXPECT_GT(moved, 5000 / 4 - 200);
  // Undone: the original owners again.
  auto undone = drained->Draining({});
  ASSERT_TRUE(undone.ok());
  EXPECT_EQ(undone->fingerprint(), four.fingerprint());
  auto none = four.Draining({"adaptd-0", "adaptd-1", "adaptd-2", "adaptd-3"});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MembershipTest, TheMembersFlagParses) {
  auto members = ParseMembers("adaptd-0=10.0.0.1:50051, adaptd-1 = host-b:50051");
  ASSERT_TRUE(members.ok()) << members.status();
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0], (Member{"adaptd-0", "10.0.0.1:50051"}));
  EXPECT_EQ((*members)[1], (Member{"adaptd-1", "host-b:50051"}));
  auto bad = ParseMembers("adaptd-0=h:1,adaptd-1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--cluster-members: item 1 (\"adaptd-1\") is not NAME=HOST:PORT");
}

}  // namespace
}  // namespace adaptd::cluster
