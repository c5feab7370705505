#include "server/cluster/routing.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace adaptd::cluster {
namespace {

RouteFacts Facts(const std::string& owner, bool held, bool settled, Access access) {
  RouteFacts f;
  f.key = "acme/intents";
  f.self = "a";
  f.owner = owner;
  f.held = held;
  f.settled = settled;
  f.fingerprint = "00000000000000ff";
  f.access = access;
  return f;
}

PeerView Answered(const std::string& fingerprint) {
  PeerView p;
  p.answered = true;
  p.fingerprint = fingerprint;
  return p;
}

std::string Here() { return ""; }

TEST(RoutingTest, OwnedAndSettledRunsHereForEveryAccess) {
  for (Access access : {Access::kRead, Access::kWrite, Access::kCreate, Access::kDelete}) {
    for (bool held : {false, true}) {
      absl::StatusOr<std::string> to = DecideRoute(Facts("a", held, true, access), {});
      ASSERT_TRUE(to.ok()) << to.status();
      EXPECT_EQ(*to, Here());
    }
  }
}

TEST(RoutingTest, AnotherMembersStoreGoesToItsOwner) {
  absl::StatusOr<std::string> to = DecideRoute(Facts("b", false, true, Access::kWrite), {});
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ(*to, "b");
}

TEST(RoutingTest, AStoreMovingFromHereServesReadsAndRefusesChanges) {
  absl::StatusOr<std::string> read = DecideRoute(Facts("b", true, true, Access::kRead), {});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, Here());
  for (Access access : {Access::kWrite, Access::kCreate, Access::kDelete}) {
    absl::StatusOr<std::string> to = DecideRoute(Facts("b", true, true, access), {});
    ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(to.status().message(),
              "store acme/intents is being handed off from member a to its owner b; retry");
  }
}

TEST(RoutingTest, AForwardedCallForAnotherMembersStoreIsNeverForwardedAgain) {
  RouteFacts f = Facts("b", false, true, Access::kRead);
  f.origin.forwarded = true;
  f.origin.forwarded_by = "c";
  absl::StatusOr<std::string> to = DecideRoute(f, {});
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(to.status().message().find("to which member c forwarded it"), std::string::npos)
      << to.status();
}

TEST(RoutingTest, PeersAreReadOnlyForAnOwnedStoreBeforeTheListSettled) {
  EXPECT_FALSE(RouteNeedsPeers(Facts("b", false, false, Access::kRead)));
  EXPECT_FALSE(RouteNeedsPeers(Facts("a", false, true, Access::kRead)));
  EXPECT_TRUE(RouteNeedsPeers(Facts("a", false, false, Access::kRead)));
  RouteFacts move = Facts("a", false, false, Access::kCreate);
  EXPECT_TRUE(RouteNeedsPeers(move));
  move.origin.move = true;
  EXPECT_FALSE(RouteNeedsPeers(move));
  // A hand-off arriving runs here whatever the peers say.
  std::map<std::string, PeerView> peers = {{"b", PeerView()}};
  absl::StatusOr<std::string> to = DecideRoute(move, peers);
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ(*to, Here());
}

TEST(RoutingTest, BeforeSettlingAnUnconfirmedPeerHoldsUpAStoreNotHeld) {
  const RouteFacts f = Facts("a", false, false, Access::kWrite);
  std::map<std::string, PeerView> peers = {{"b", Answered(f.fingerprint)}, {"c", PeerView()}};
  absl::StatusOr<std::string> to = DecideRoute(f, peers);
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(to.status().message().find("member c has not confirmed it yet (not asked yet)"),
            std::string::npos)
      << to.status();

  peers["c"].answered = true;
  peers["c"].fingerprint = "0000000000000001";
  to = DecideRoute(f, peers);
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(to.status().message().find("it routes by list 0000000000000001, this member by "
                                       "00000000000000ff"),
            std::string::npos)
      << to.status();

  peers["c"].fingerprint = f.fingerprint;
  peers["c"].complete = false;
  to = DecideRoute(f, peers);
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(to.status().message().find("its list of the stores it moves is incomplete"),
            std::string::npos);

  peers["c"].complete = true;
  to = DecideRoute(f, peers);
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ(*to, Here());

  peers["c"].answered = false;
  peers["c"].error = "connection refused";
  to = DecideRoute(f, peers);
  EXPECT_NE(to.status().message().find("(connection refused)"), std::string::npos);
}

TEST(RoutingTest, AStoreMovingHereIsReadFromItsSenderAndNotChanged) {
  const RouteFacts read = Facts("a", false, false, Access::kRead);
  std::map<std::string, PeerView> peers = {{"b", Answered(read.fingerprint)}};
  peers["b"].moving.insert("acme/intents");
  absl::StatusOr<std::string> to = DecideRoute(read, peers);
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ(*to, "b");

  // A read the sender forwarded here is not sent back to it.
  RouteFacts back = read;
  back.origin.forwarded = true;
  back.origin.forwarded_by = "b";
  to = DecideRoute(back, peers);
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(to.status().message(),
            "store acme/intents is being handed off from member b to this member, a; retry");

  to = DecideRoute(Facts("a", false, false, Access::kWrite), peers);
  EXPECT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
}

TEST(RoutingTest, AHeldStoreStillOnItsSenderIsNotDeletedYet) {
  const RouteFacts del = Facts("a", true, false, Access::kDelete);
  std::map<std::string, PeerView> peers = {{"b", Answered(del.fingerprint)}};
  peers["b"].moving.insert("acme/intents");
  absl::StatusOr<std::string> to = DecideRoute(del, peers);
  ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(to.status().message(),
            "store acme/intents has a copy on member b still being handed off; retry");
  // Everything else about a held store runs here, even with peers unconfirmed.
  peers["c"] = PeerView();
  for (Access access : {Access::kRead, Access::kWrite, Access::kCreate}) {
    to = DecideRoute(Facts("a", true, false, access), peers);
    ASSERT_TRUE(to.ok()) << to.status();
    EXPECT_EQ(*to, Here());
  }
}

TEST(RoutingTest, PastTheMembershipLeaseEveryCallIsRefused) {
  const absl::Time valid_until = absl::FromUnixSeconds(1000);
  for (Access access : {Access::kRead, Access::kWrite, Access::kCreate, Access::kDelete}) {
    for (const std::string& owner : {std::string("a"), std::string("b")}) {
      RouteFacts f = Facts(owner, false, true, access);
      f.valid_until = valid_until;
      f.now = valid_until - absl::Milliseconds(1);
      absl::StatusOr<std::string> to = DecideRoute(f, {});
      ASSERT_TRUE(to.ok()) << to.status();
      EXPECT_EQ(*to, owner == "a" ? Here() : "b");

      for (absl::Time now : {valid_until, valid_until + absl::Seconds(5)}) {
        f.now = now;
        EXPECT_FALSE(RouteNeedsPeers(f));
        to = DecideRoute(f, {});
        ASSERT_EQ(to.status().code(), absl::StatusCode::kUnavailable);
        EXPECT_EQ(to.status().message(),
                  "the membership lease of member a expired at 1970-01-01T00:16:40+00:00: it "
                  "routes no call by a list that may be stale until its lease is renewed; retry");
      }
    }
  }
}

}  // namespace
}  // namespace adaptd::cluster
