// HandOff: where each call of a cluster member runs while stores move between members, and
// the moves themselves (docs/CLUSTER.md, "Hand-off").
//
// A member routes by its member list less the members drained (the membership: the HandOff
// keeps it as its StaticMembership last announced it, and a drain publishes through that
// source). Every store it holds that another member owns under that list is a move in flight:
// it serves reads of it, refuses its changes (UNAVAILABLE, retryable) and hands it off to the
// owner — closes the store's write fence, sends its snapshot and remembered example ids by
// ImportStore, and deletes its copy once the owner acknowledged the import. A member accepts
// changes only to the stores it both owns and holds, so no two members ever accept writes for
// one store.
//
// Until a member has seen every member route by its own list and hold only its own stores
// (settled), it asks the others every `handoff_interval_ms` for the stores they move. For a
// store it owns but does not hold it then relays reads to the member moving it, answers
// changes UNAVAILABLE, and creates nothing until every member has confirmed the list, so a
// store never exists twice. A settled member asks nobody: a member that is down then
// makes only its own stores unavailable. The drained members and the list last seen settled
// persist in `<data_dir>/cluster.state`.
//
// Thread-safe. Start begins the background thread (polls and moves); Stop ends it and the
// admin threads (RunAdmin) and must be called before the engine and forwarder go.
#ifndef ADAPTD_SERVER_CLUSTER_HANDOFF_H_
#define ADAPTD_SERVER_CLUSTER_HANDOFF_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/server_context.h"
#include "server/auth/token_authorizer.h"
#include "server/cluster/admin_threads.h"
#include "server/cluster/forwarding.h"
#include "server/cluster/member_calls.h"
#include "server/cluster/membership.h"
#include "server/cluster/membership_source.h"
#include "server/cluster/routing.h"
#include "server/cluster/static_membership.h"
#include "server/core/engine.h"
#include "server/metrics/metrics.h"

namespace adaptd {

// The metadata key of an ImportStore that hands a store off; its value names the sender.
inline constexpr char kMoveHeader[] = "adaptd-move";
// The most store names a member lists as moving when the others ask (ClusterStatus local);
// a longer list is marked incomplete, and they wait for it to shrink.
inline constexpr size_t kMovingListed = 100000;

class HandOff {
 public:
  // From the config's `cluster` (checked by ValidateConfig); reads `<data_dir>/cluster.state`.
  // All pointers must outlive the HandOff.
  // `auth` (nullable: authentication off) tells a member's own calls from others'.
  // `calls` makes this member's own calls to the others.
  static absl::StatusOr<std::unique_ptr<HandOff>> Create(const adapt::v1::ServerConfig& config,
                                                         Forwarder* forwarder, MemberCalls* calls,
                                                         Engine* engine,
                                                         const TokenAuthorizer* auth,
                                                         Metrics* metrics);
  ~HandOff();

  void Start();
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Where a call for tenant/store runs: OK with `*to` null (here), OK with `*to` set (pass
  // it there: the owner, or the member moving the store to this one), or the refusal to
  // answer (UNAVAILABLE while the store moves or the members' lists differ).
  absl::Status Route(const cluster::CallOrigin& origin, const std::string& tenant,
                     const std::string& store, Access access, const cluster::Member** to) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a call is another member handing a store off to this one: forwarded, marked a
  // move (kMoveHeader), and (with authentication on) made with an admin token such as the
  // members' (`authorization`: the call's credential).
  bool IsMove(bool forwarded, bool move_marked,
              std::optional<absl::string_view> authorization) const;

  // The list this member routes by (its configured members, the drained ones owning none).
  std::shared_ptr<const cluster::Membership> membership() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& self() const { return self_; }

  // This member's view: its list, stores held, the moves in flight (at most `max_moving`
  // names listed).
  adapt::v1::MemberStatus LocalStatus(size_t max_moving) const ABSL_LOCKS_EXCLUDED(mu_);
  // Records (durably) that `member` drains (owns no store) or, with `undo`, owns stores
  // again. InvalidArgument for a name not among the members; FailedPrecondition when no
  // member would own stores.
  absl::Status SetDraining(const std::string& member, bool undo)
      ABSL_LOCKS_EXCLUDED(state_file_mu_, mu_);

  // Every member's view, this one's included, asking the others with `timeout` each (the
  // moving lists: at most 1000 names each).
  adapt::v1::ClusterStatusResponse Gather(absl::Duration timeout) const;
  // Has every member record the drain (this one too); the error names the members that
  // did not (they may be asked again: recording is idempotent).
  absl::Status DrainEverywhere(const std::string& member, bool undo, absl::Duration timeout);

  // Runs `work` on a thread of its own (admin calls that wait on other members), joined by
  // Stop. False, running nothing, once Stop began.
  bool RunAdmin(std::function<void()> work);
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_);

  // This member's calls to the others (also ClusterQuotas' and ClusterBases').
  MemberCalls* calls() const { return calls_; }
  // The member (of the configured list, which outlives every call) named `name`; null when none
  // is.
  const cluster::Member* Configured(const std::string& name) const;

 private:
  using Peer = cluster::PeerView;

  HandOff(Forwarder* forwarder, MemberCalls* calls, Engine* engine, const TokenAuthorizer* auth,
          Metrics* metrics, std::string state_path, absl::Duration interval, size_t chunk_bytes);

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Asks every other member for its view; settles when all agree and none moves anything.
  void Poll(size_t moving_here) ABSL_LOCKS_EXCLUDED(state_file_mu_, mu_);
  // A new membership from the source (Watch): routes by it, and asks the others again.
  void Changed(std::shared_ptr<const cluster::Membership> next) ABSL_LOCKS_EXCLUDED(mu_);
  // Hands tenant/store off to `owner`; true when its copy here is gone.
  bool MoveOne(const std::string& tenant, const std::string& store, const cluster::Member& owner);
  // Writes cluster.state: the members drained and the list last seen settled.
  absl::Status Save(const std::set<std::string>& draining, const std::string& settled) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_file_mu_);
  absl::StatusOr<adapt::v1::MemberStatus> AskStatus(const cluster::Member& member,
                                                    absl::Duration timeout) const;
  Forwarder* const forwarder_;
  MemberCalls* const calls_;
  Engine* const engine_;
  const TokenAuthorizer* const auth_;  // nullable
  Metrics* const metrics_;             // nullable
  const std::string self_;
  const std::string state_path_;  // empty without a data directory
  const absl::Duration interval_;
  const size_t chunk_bytes_;

  std::unique_ptr<cluster::StaticMembership> members_;  // set by Create

  // Held from writing cluster.state until the membership it records is current_, so the file
  // always records the membership routed by last.
  absl::Mutex state_file_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  // As members_ announced it last (Changed), so that it and `settled_` change together.
  std::shared_ptr<const cluster::Membership> current_ ABSL_GUARDED_BY(mu_);
  std::string settled_fingerprint_ ABSL_GUARDED_BY(mu_);  // as saved
  bool settled_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Peer> peers_ ABSL_GUARDED_BY(mu_);
  uint64_t moved_out_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool unfence_ ABSL_GUARDED_BY(mu_) = false;  // the list changed: lift fences of owned stores
  MemberCalls::Send* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;  // the hand-off being sent
  std::thread thread_;

  AdminThreads admin_;

  cluster::Subscription watch_;  // last: ends before the state its callback changes goes
};

// The token in `path` (cluster.member_token_file), whitespace around it dropped;
// InvalidArgument naming the file when it cannot be read or is empty.
absl::StatusOr<std::string> ReadMemberToken(const std::string& path);

// Adds the members' own token (cluster.member_token_file: hand-offs, status calls) to
// `tokens` as an admin token, when the config has a cluster and lists tokens.
absl::Status AddMemberToken(const adapt::v1::ServerConfig& config,
                            google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>* tokens);

// Whether `context`'s call came from another member, and marked as a hand-off.
cluster::CallOrigin CallOriginOf(const grpc::ServerContextBase& context);

// The hex form of a membership fingerprint, as MemberStatus carries it.
std::string FingerprintHex(uint64_t fingerprint);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_HANDOFF_H_
