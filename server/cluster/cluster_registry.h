// ClusterRegistry: this member's registration in etcd and every member's, as the cluster on
// etcd keeps them (docs/CLUSTER_ETCD.md, "Registration and leases").
//
// - Start grants this member's lease (kept alive by a LeaseKeeper) and creates
//   PREFIX/members/NAME under it (adapt.v1.ClusterMemberRecord, state STARTING), or takes over
//   the record this name left RESTARTING (restarted()). A record of this name kept alive by
//   another process is waited for up to `register_wait`, then refused ALREADY_EXISTS naming it.
// - An EtcdWatcher follows PREFIX/members/, so Members() is every registered member as etcd
//   has it (a member whose lease lapsed is gone).
// - A member is *eligible* to win shards once READY for `settle`, measured from when this
//   member saw it become READY (a member READY when this one started counts as settled).
// - As a MembershipSource, the membership is every registered member, those not eligible
//   draining (none draining while none is eligible); ValidUntil is this member's lease's, less
//   a margin of min(1 s, TTL/4).
//
// Thread-safety: every method may be called concurrently. Watch callbacks run on the watcher's
// or the settle timer's thread, one at a time.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_REGISTRY_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/cluster.pb.h"
#include "server/cluster/membership_source.h"
#include "server/etcd/etcd_client.h"
#include "server/etcd/etcd_watcher.h"

namespace adaptd::cluster {

using MemberState = adapt::v1::ClusterMemberRecord::State;

struct RegisteredMember {
  adapt::v1::ClusterMemberRecord record;
  int64_t mod_revision = 0;
  // When this member saw the record enter its state (InfinitePast: before this member started).
  absl::Time seen_in_state = absl::InfinitePast();
};

// A key that moves to the grace lease with the registration (a claim), at its mod revision.
struct KeyAtRevision {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
};

class ClusterRegistry final : public MembershipSource {
 public:
  struct Options {
    std::string prefix = "/adaptd/";
    std::string self;
    std::string address;
    absl::Duration lease_ttl = absl::Seconds(5);
    absl::Duration settle = absl::Seconds(10);
    absl::Duration register_wait = absl::Seconds(12);
    etcd::EtcdWatcher::Options watch;
  };

  // Registers this member (STARTING) and starts following the members. `on_lease_lost` runs
  // once, on the keeper's thread, when this member's lease is lost.
  static absl::StatusOr<std::unique_ptr<ClusterRegistry>> Start(
      etcd::EtcdClient* client, Options options, std::function<void()> on_lease_lost = nullptr);
  // Stops following and keeping the lease alive, without revoking it (the record goes when the
  // lease lapses, unless HandOverForRestart moved it).
  ~ClusterRegistry() override;
  ClusterRegistry(const ClusterRegistry&) = delete;
  ClusterRegistry& operator=(const ClusterRegistry&) = delete;

  // This member's state (STARTING -> READY; READY <-> DRAINING).
  absl::Status SetState(MemberState state);
  // Another registered member's state, keeping its lease (a drain asked of any member):
  // NotFound when it is not registered; Aborted when its record changed meanwhile (ask again).
  absl::Status SetStateOf(const std::string& name, MemberState state);
  // A graceful stop that keeps what this member holds: grants a lease of `grace` and moves this
  // member's record (RESTARTING) and `keys` to it, each compared at its mod revision, in
  // transactions of at most 100 operations. This member's own lease is still kept alive (with
  // nothing under it) until the registry is destroyed: the caller stops serving first.
  // FailedPrecondition naming the key when one changed meanwhile (it is not moved).
  absl::Status HandOverForRestart(absl::Duration grace, const std::vector<KeyAtRevision>& keys);
  // Unregisters at once: revokes the lease (everything under it goes) and stops renewing it.
  absl::Status Leave();

  // Every registered member, by name.
  std::map<std::string, RegisteredMember> Members() const;
  // The members eligible to win shards, sorted.
  std::vector<std::string> Eligible() const;
  // Those of `members` (a Members() snapshot) eligible now: a caller that needs both reads them
  // from one snapshot, so a member deleted between two reads is not in one and out of the other.
  std::vector<std::string> EligibleAmong(
      const std::map<std::string, RegisteredMember>& members) const;
  // Whether Start took over this name's RESTARTING record.
  bool restarted() const { return restarted_; }
  const std::string& self() const { return options_.self; }
  int64_t lease_id() const;
  // The watcher's last delivered revision (every change up to it is in Members()).
  int64_t revision() const;

  std::shared_ptr<const Membership> Current() const override { return feed_.Current(); }
  absl::Time ValidUntil() const override;
  Subscription Watch(MembershipCallback changed) override {
    return feed_.Watch(std::move(changed));
  }

 private:
  ClusterRegistry(etcd::EtcdClient* client, Options options);
  std::string KeyOf(const std::string& name) const;
  absl::Status Register();
  absl::Status Put(const std::string& name, const adapt::v1::ClusterMemberRecord& record,
                   int64_t expected_mod_revision);
  void Reset(const std::vector<mvccpb::KeyValue>& kvs);
  void Apply(const std::vector<mvccpb::Event>& events);
  void Publish();
  void SettleLoop();
  bool IsEligible(const RegisteredMember& member, absl::Time now) const;

  etcd::EtcdClient* client_;
  const Options options_;
  bool restarted_ = false;
  std::unique_ptr<etcd::LeaseKeeper> keeper_;
  std::unique_ptr<etcd::EtcdWatcher> watcher_;
  MembershipFeed feed_;

  mutable absl::Mutex mu_;
  std::map<std::string, RegisteredMember> members_ ABSL_GUARDED_BY(mu_);
  bool first_reset_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t changes_ ABSL_GUARDED_BY(mu_) = 0;  // table changes, for the settle timer
  std::thread settle_thread_;
};

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_REGISTRY_H_
