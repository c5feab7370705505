#include "server/cluster/routing.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace adaptd::cluster {

namespace {

bool LeaseExpired(const RouteFacts& f) { return f.now >= f.valid_until; }

}  // namespace

bool RouteNeedsPeers(const RouteFacts& f) {
  if (f.owner != f.self || f.settled || LeaseExpired(f)) return false;
  return !(f.access == Access::kCreate && f.origin.move);
}

absl::StatusOr<std::string> DecideRoute(const RouteFacts& f,
                                        const std::map<std::string, PeerView>& peers) {
  const std::string& key = f.key;
  if (LeaseExpired(f)) {
    return absl::UnavailableError(absl::StrCat(
        "the membership lease of member ", f.self, " expired at ",
        absl::FormatTime(f.valid_until, absl::UTCTimeZone()),
        ": it routes no call by a list that may be stale until its lease is renewed; retry"));
  }
  if (f.owner != f.self) {
    if (f.held) {
      // Moving from here: served until the owner holds it, never changed here.
      if (f.access == Access::kRead) return std::string();
      return absl::UnavailableError(absl::StrCat("store ", key, " is being handed off from member ",
                                                 f.self, " to its owner ", f.owner, "; retry"));
    }
    if (!f.origin.forwarded_by.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "store ", key, " belongs to member ", f.owner, " by the member list of ", f.self,
          ", not to this member, to which member ", f.origin.forwarded_by,
          " forwarded it: their member lists differ (a change of members in progress); retry"));
    }
    return f.owner;
  }
  if (!RouteNeedsPeers(f)) return std::string();  // settled, or a hand-off arriving
  std::string holder, unconfirmed;
  for (const auto& [name, peer] : peers) {
    if (peer.moving.contains(key)) holder = name;
    if (unconfirmed.empty() &&
        (!peer.answered || !peer.complete || peer.fingerprint != f.fingerprint)) {
      unconfirmed = name;
    }
  }
  if (f.held) {
    // A copy still on the member that sent it (its acknowledgement was lost): the delete
    // waits until that member has dropped it, or it would come back with the next send.
    if (f.access == Access::kDelete && !holder.empty()) {
      return absl::UnavailableError(absl::StrCat("store ", key, " has a copy on member ", holder,
                                                 " still being handed off; retry"));
    }
    return std::string();
  }
  if (!holder.empty()) {
    if (f.access == Access::kRead && f.origin.forwarded_by != holder) return holder;
    return absl::UnavailableError(absl::StrCat("store ", key, " is being handed off from member ",
                                               holder, " to this member, ", f.self, "; retry"));
  }
  if (!unconfirmed.empty()) {
    const PeerView& p = peers.at(unconfirmed);
    return absl::UnavailableError(absl::StrCat(
        "the member list changed and member ", unconfirmed, " has not confirmed it yet (",
        !p.answered
            ? (p.error.empty() ? "not asked yet" : p.error)
            : (p.fingerprint != f.fingerprint ? absl::StrCat("it routes by list ", p.fingerprint,
                                                             ", this member by ", f.fingerprint)
                                              : "its list of the stores it moves is incomplete"),
        "), so this member cannot tell whether store ", key, " is elsewhere; retry"));
  }
  return std::string();
}

}  // namespace adaptd::cluster
