// ClusterMember: the registry, the claims and the engine's shards, joined.
#include "server/cluster/cluster_member.h"

#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "adapt/v1/cluster.pb.h"
#include "server/base/status_macros.h"

namespace adaptd::cluster {

// The durability's fences: the claims once Serve started them, and the registry's lease for
// reads.
class ClusterMember::Fences final : public ShardFences {
 public:
  Fences(const ClusterRegistry* registry, int shards) : registry_(registry), shards_(shards) {}
  void Bind(const ShardClaims* claims) { claims_.store(claims); }

  int ShardOf(const std::string& tenant, const std::string& name) const override {
    return cluster::ShardOf(tenant, name, shards_);
  }
  absl::StatusOr<EtcdFence> FenceOf(int shard) const override {
    const ShardClaims* claims = claims_.load();
    if (claims == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("member '", registry_->self(), "' holds no shard yet (it is starting)"));
    }
    ASSIGN_OR_RETURN(int64_t revision, claims->FenceOf(shard));
    return EtcdFence{claims->ClaimKey(shard), revision, /*by_mod_revision=*/true};
  }
  absl::Status ReadsAllowed(int shard) const override {
    if (absl::Now() >= registry_->ValidUntil()) {
      return absl::UnavailableError(absl::StrCat(
          "member '", registry_->self(),
          "': its lease in etcd is not known to be valid (etcd has not answered its renewals); "
          "reads resume once it does"));
    }
    return FenceOf(shard).status();
  }

 private:
  const ClusterRegistry* const registry_;
  const int shards_;
  std::atomic<const ShardClaims*> claims_{nullptr};
};

absl::StatusOr<std::unique_ptr<ClusterMember>> ClusterMember::Register(etcd::EtcdClient* client,
                                                                       Options options) {
  std::unique_ptr<ClusterMember> member(new ClusterMember());
  member->client_ = client;
  member->options_ = std::move(options);
  member->options_.claims.prefix = member->options_.registry.prefix;
  ASSIGN_OR_RETURN(
      member->registry_,
      ClusterRegistry::Start(
          client, member->options_.registry,
          [name = member->options_.registry.self, lost = member->options_.on_lease_lost] {
            std::fprintf(stderr,
                         "adaptd: member '%s' lost its lease in etcd; its shards go to "
                         "the other members\n",
                         name.c_str());
            if (lost) lost();
          }));
  member->fences_ =
      std::make_shared<Fences>(member->registry_.get(), member->options_.claims.shards);
  return member;
}

ClusterMember::~ClusterMember() { claims_.reset(); }

std::shared_ptr<const ShardFences> ClusterMember::fences() const { return fences_; }

absl::Status ClusterMember::Serve(Engine* engine) {
  engine_ = engine;
  ShardClaims::Hooks hooks;
  hooks.on_acquired = [this](int shard, int64_t, ClaimReason) { Acquired(shard); };
  hooks.on_release = [this](int shard) { return Release(shard); };
  hooks.on_lost = [this](int shard) {
    if (absl::Status released = Release(shard); !released.ok()) {
      std::fprintf(stderr, "adaptd: shard %s: releasing its stores: %s\n", ShardName(shard).c_str(),
                   std::string(released.message()).c_str());
    }
  };
  ASSIGN_OR_RETURN(claims_,
                   ShardClaims::Start(client_, registry_.get(), options_.claims, std::move(hooks)));
  fences_->Bind(claims_.get());
  // Ready once what it holds is adopted and has stayed so for two rounds of claims.
  const absl::Time deadline = absl::Now() + options_.ready_wait;
  int stable = 0;
  std::vector<int> last;
  while (stable < 2 && absl::Now() < deadline) {
    absl::SleepFor(options_.claims.tick);
    std::vector<int> held = claims_->Held();
    const std::set<int> adopted = Adopted();
    const bool all_adopted = std::set<int>(held.begin(), held.end()) == adopted;
    stable = all_adopted && held == last ? stable + 1 : 0;
    last = std::move(held);
  }
  return registry_->SetState(adapt::v1::ClusterMemberRecord::READY);
}

void ClusterMember::Acquired(int shard) {
  if (absl::Status adopted = engine_->AdoptShard(shard); !adopted.ok()) {
    std::fprintf(stderr, "adaptd: shard %s: its stores could not be opened: %s\n",
                 ShardName(shard).c_str(), std::string(adopted.message()).c_str());
    return;
  }
  absl::MutexLock lock(&mu_);
  adopted_.insert(shard);
}

absl::Status ClusterMember::Release(int shard) {
  {
    absl::MutexLock lock(&mu_);
    adopted_.erase(shard);
  }
  const int shards = options_.claims.shards;
  return engine_
      ->ReleaseShard(shard,
                     [shard, shards](const std::string& tenant, const std::string& store) {
                       return ShardOf(tenant, store, shards) == shard;
                     })
      .status();
}

std::set<int> ClusterMember::Adopted() const {
  absl::MutexLock lock(&mu_);
  return adopted_;
}

absl::StatusOr<std::string> ClusterMember::Route(const std::string& tenant,
                                                 const std::string& store) const {
  const int shard = ShardOf(tenant, store, options_.claims.shards);
  const std::optional<ShardHolder> holder =
      claims_ != nullptr ? claims_->HolderOf(shard) : std::nullopt;
  if (!holder.has_value()) {
    return absl::UnavailableError(absl::StrCat("store ", tenant, "/", store, ": shard ",
                                               ShardName(shard),
                                               " has no holder (a failover or a move is under "
                                               "way); retry"));
  }
  if (holder->member != registry_->self()) return holder->member;
  absl::MutexLock lock(&mu_);
  if (adopted_.count(shard) == 0) {
    return absl::UnavailableError(absl::StrCat("store ", tenant, "/", store, ": shard ",
                                               ShardName(shard), " is being opened at member '",
                                               holder->member, "'; retry"));
  }
  return std::string();
}

}  // namespace adaptd::cluster
