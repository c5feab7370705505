// The routing decision of the static cluster (docs/CLUSTER.md, "Hand-off"): given what a member
// knows when a call arrives (who owns the store by its list, whether it holds the store, the
// other members' answers while the list is not settled), where the call runs. A pure function:
// no lock, no I/O; HandOff gathers the facts and asks it, and every front end relays in its own
// form.
#ifndef ADAPTD_SERVER_CLUSTER_ROUTING_H_
#define ADAPTD_SERVER_CLUSTER_ROUTING_H_

#include <map>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace adaptd {

// What a call does to its store, for routing.
enum class Access {
  kRead,    // GetStore, Predict, PredictStream, ExportStore
  kWrite,   // Adapt, Forget, Compile, PinStore
  kCreate,  // CreateStore, ImportStore
  kDelete,  // DeleteStore
};

namespace cluster {

// Who a call came from, as routing needs it.
struct CallOrigin {
  bool forwarded = false;    // another member forwarded the call (marked so)
  std::string forwarded_by;  // the member that forwarded it, as marked; "" when none did
  bool move_marked = false;  // marked as a hand-off of a store (trusted only with an admin token)
  bool move = false;         // a hand-off from another member (HandOff::IsMove)
};

// One other member's last answer to "which stores do you move?" (HandOff's poll).
struct PeerView {
  bool answered = false;  // in the last round
  std::string error;      // why not
  std::string fingerprint;
  absl::flat_hash_set<std::string> moving;  // kept from earlier rounds while unanswered
  bool complete = true;                     // `moving` lists every store it moves
};

struct RouteFacts {
  std::string key;          // "tenant/store"
  std::string self;         // this member
  std::string owner;        // the store's owner by this member's list
  bool held = false;        // this member holds the store
  bool settled = false;     // every member routes by this member's list and moves nothing
  std::string fingerprint;  // the hex fingerprint of this member's list
  Access access = Access::kRead;
  CallOrigin origin;
  // This member's ownership under its list holds before `valid_until`
  // (MembershipSource::ValidUntil); `now` is when the call arrived, on the same clock.
  absl::Time valid_until = absl::InfiniteFuture();
  absl::Time now = absl::UnixEpoch();
};

// Where the call runs: "" for here, else the name of the member to pass it to (the owner, or
// the member moving the store to this one); or UNAVAILABLE (retryable) while the store moves
// or the members' lists differ, and for every call once `now` reached `valid_until` (this
// member's membership lease expired: its list may be stale). `peers` (by name) is read only when
// this member owns the store and the list is not settled.
absl::StatusOr<std::string> DecideRoute(const RouteFacts& facts,
                                        const std::map<std::string, PeerView>& peers);

// Whether DecideRoute reads `peers` for these facts (HandOff then holds its lock around it).
bool RouteNeedsPeers(const RouteFacts& facts);

}  // namespace cluster
}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_ROUTING_H_
