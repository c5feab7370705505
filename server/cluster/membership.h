// The members of an adaptd cluster and who owns each store (docs/CLUSTER.md).
//
// Every store has exactly one owner, computed by rendezvous hashing from its full name
// (tenant/store) and the member list alone, so every replica with the same list computes the
// same owner, and a change of members moves only the stores whose owner changed. The weight
// function is fixed by docs/CLUSTER.md: replicas of every version must agree on it.
//
// Thread-safety: a Membership is immutable; every method may be called concurrently.
#ifndef ADAPTD_SERVER_CLUSTER_MEMBERSHIP_H_
#define ADAPTD_SERVER_CLUSTER_MEMBERSHIP_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace adaptd::cluster {

struct Member {
  std::string name;     // a DNS label: 1 to 63 of [a-z0-9-], not starting or ending with '-'
  std::string address;  // HOST:PORT
  bool operator==(const Member&) const = default;
};

// w(member, key) of docs/CLUSTER.md, from the hashes of server/base/stable_hash.h.
uint64_t RendezvousWeight(absl::string_view member, absl::string_view key);

class Membership {
 public:
  // Checks the list: at least one member, names and addresses well formed and unique, `self`
  // among them. Errors are InvalidArgument naming the field (`cluster.members[i].name`, ...).
  static absl::StatusOr<Membership> Create(std::string self, std::vector<Member> members);

  // The same members, of which those named in `draining` own no store (a drain:
  // docs/CLUSTER.md, "Hand-off"). Names that are not members are ignored (a drained member
  // removed from the list since). FailedPrecondition when it would leave no member owning.
  absl::StatusOr<Membership> Draining(const std::set<std::string>& draining) const;

  // The members, sorted by name.
  const std::vector<Member>& members() const { return members_; }
  const Member& self() const { return members_[self_]; }
  // A member by name; null when it is not one.
  const Member* Find(absl::string_view name) const;
  // The members that own no store (Draining), sorted.
  const std::set<std::string>& draining() const { return draining_; }
  bool IsDraining(absl::string_view name) const { return draining_.count(std::string(name)) > 0; }
  // The owner of tenant/store: the member of highest weight (equal weights: the smaller
  // name) among those not draining.
  const Member& OwnerOf(absl::string_view tenant, absl::string_view store) const;
  bool OwnsStore(absl::string_view tenant, absl::string_view store) const {
    return &OwnerOf(tenant, store) == &self();
  }
  // The tenant's home, which keeps its store count (docs/CLUSTER.md, "Quotas"): the same
  // rendezvous over the key `tenant` alone (no store's key, which always has a '/').
  const Member& HomeOf(absl::string_view tenant) const;
  // A hash of the sorted list of the members that own stores (names and addresses): two
  // replicas with equal fingerprints agree on every owner.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  const Member& OwnerOfKey(absl::string_view key) const;
  Membership(std::vector<Member> members, size_t self, std::set<std::string> draining);

  std::vector<Member> members_;
  size_t self_ = 0;
  std::set<std::string> draining_;
  std::vector<bool> owning_;  // per member: not draining
  uint64_t fingerprint_ = 0;
};

// Parses the --cluster-members flag: NAME=HOST:PORT[,NAME=HOST:PORT...] (spaces around items
// allowed). Errors are InvalidArgument naming the item.
absl::StatusOr<std::vector<Member>> ParseMembers(absl::string_view flag);

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_MEMBERSHIP_H_
