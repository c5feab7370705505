// ClusterMember: the registry, the claims and the engine's shards, joined.
#include "server/cluster/cluster_member.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "adapt/v1/cluster.pb.h"
#include "server/base/status_macros.h"

namespace adaptd::cluster {

// The durability's fences: the claims once Serve started them, and the registry's lease for
// reads.
class ClusterMember::Fences final : public ShardFences {
 public:
  Fences(const ClusterRegistry* registry, int shards)
      : registry_(registry), self_(registry->self()), shards_(shards) {}
  void Bind(const ShardClaims* claims) {
    absl::WriterMutexLock lock(&mu_);
    claims_ = claims;
  }
  // The member is going: nothing is held from now on (the durability may outlive it). Waits for
  // the calls under way, so none reads the claims or the registry once it returned.
  void Unbind() {
    absl::WriterMutexLock lock(&mu_);
    stopped_ = true;
    claims_ = nullptr;
  }

  int ShardOf(const std::string& tenant, const std::string& name) const override {
    return cluster::ShardOf(tenant, name, shards_);
  }
  absl::StatusOr<EtcdFence> FenceOf(int shard) const override {
    absl::ReaderMutexLock lock(&mu_);
    return FenceOfLocked(shard);
  }
  absl::Status ReadsAllowed(int shard) const override {
    absl::ReaderMutexLock lock(&mu_);
    if (claims_ != nullptr && absl::Now() >= registry_->ValidUntil()) {
      return absl::UnavailableError(absl::StrCat(
          "member '", self_,
          "': its lease in etcd is not known to be valid (etcd has not answered its renewals); "
          "reads resume once it does"));
    }
    return FenceOfLocked(shard).status();
  }

 private:
  absl::StatusOr<EtcdFence> FenceOfLocked(int shard) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (claims_ == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("member '", self_, "' holds no shard ",
                       stopped_ ? "(it stopped)" : "yet (it is starting)"));
    }
    ASSIGN_OR_RETURN(int64_t revision, claims_->FenceOf(shard));
    return EtcdFence{claims_->ClaimKey(shard), revision, /*by_mod_revision=*/true};
  }

  const ClusterRegistry* const registry_;
  const std::string self_;
  const int shards_;
  mutable absl::Mutex mu_;
  const ShardClaims* claims_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
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
  member->hot_ = std::make_unique<HotStores>(member->options_.hot_size);
  return member;
}

ClusterMember::~ClusterMember() {
  {
    absl::MutexLock lock(&restore_mu_);
    stopping_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
  fences_->Unbind();
  claims_.reset();
}

std::shared_ptr<const ShardFences> ClusterMember::fences() const { return fences_; }

absl::Status ClusterMember::Serve(Engine* engine) {
  engine_ = engine;
  for (int i = 0; i < options_.restore_threads; ++i)
    threads_.emplace_back([this] { RunRestores(); });
  threads_.emplace_back([this] { RunHotLists(); });
  ShardClaims::Hooks hooks;
  hooks.on_acquired = [this](int shard, int64_t, ClaimReason reason) {
    if (options_.on_claim) options_.on_claim(reason);
    Acquired(shard);
  };
  hooks.on_release = [this](int shard) {
    // Read before the release: a drain undone meanwhile still released this shard as drained.
    const ReleaseReason reason = Draining() ? ReleaseReason::kDrain : ReleaseReason::kMove;
    absl::Status released = Release(shard, /*graceful=*/true);
    if (released.ok() && options_.on_release) options_.on_release(reason);
    return released;
  };
  hooks.on_lost = [this](int shard) {
    if (options_.on_release) options_.on_release(ReleaseReason::kLost);
    if (absl::Status released = Release(shard, /*graceful=*/false); !released.ok()) {
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
  // Uses from now on are this member's calls (the stores opened hot by the adoption were
  // used before it).
  hot_->Adopted(shard, absl::GetCurrentTimeNanos());
  {
    absl::MutexLock lock(&mu_);
    adopted_.insert(shard);
  }
  absl::MutexLock lock(&restore_mu_);
  restores_.push_back(RestoreTask{shard, ""});
}

absl::Status ClusterMember::Release(int shard, bool graceful) {
  // For the next holder's restore; a failure costs it only cold first calls.
  if (graceful) WriteHotListIfChanged(shard, UsesOf({shard})[shard]);
  {
    absl::MutexLock lock(&mu_);
    adopted_.erase(shard);
  }
  CancelRestores(shard);
  hot_->Released(shard);
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

bool ClusterMember::Draining() const {
  const std::map<std::string, RegisteredMember> members = registry_->Members();
  const auto it = members.find(registry_->self());
  return it != members.end() &&
         it->second.record.state() == adapt::v1::ClusterMemberRecord::DRAINING;
}

absl::Duration ClusterMember::LeaseAge() const {
  // The registry's ValidUntil is the last acknowledged keep-alive's send time plus the TTL,
  // less its margin of min(1 s, TTL/4) (ClusterRegistry::ValidUntil).
  const absl::Duration ttl = options_.registry.lease_ttl;
  const absl::Duration margin = std::min(absl::Seconds(1), ttl / 4);
  return std::max(absl::ZeroDuration(), absl::Now() - (registry_->ValidUntil() + margin - ttl));
}

int ClusterMember::restores_in_flight() const {
  absl::MutexLock lock(&restore_mu_);
  return stores_pending_;
}

std::string ClusterMember::HotKey(int shard) const {
  return absl::StrCat(options_.registry.prefix, "hot/", ShardName(shard));
}

absl::StatusOr<std::vector<std::string>> ClusterMember::ReadHotList(int shard) {
  etcdserverpb::RangeRequest request;
  request.set_key(HotKey(shard));
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response, client_->Range(request));
  if (response.kvs_size() == 0) return std::vector<std::string>();
  return DecodeHotList(response.kvs(0).value());
}

absl::Status ClusterMember::WriteHotList(int shard, const std::vector<std::string>& list) {
  ASSIGN_OR_RETURN(EtcdFence fence, fences_->FenceOf(shard));
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = fence.Compare();
  // Under no lease: the next holder reads it after this member's lease lapsed.
  if (list.empty()) {
    txn.add_success()->mutable_request_delete_range()->set_key(HotKey(shard));
  } else {
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(HotKey(shard));
    put->set_value(EncodeHotList(list));
  }
  ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, client_->Txn(txn));
  if (!response.succeeded()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shard ", ShardName(shard), ": its claim moved on; the hot list is the holder's to write"));
  }
  hot_->Written(shard, list);
  return absl::OkStatus();
}

std::map<int, std::vector<StoreUse>> ClusterMember::UsesOf(const std::set<int>& shards) const {
  const int count = options_.claims.shards;
  std::map<int, std::vector<StoreUse>> uses;
  for (StoreDirectory::StoreUse& use :
       engine_->LastUses([&shards, count](const std::string&tenant, const std::string&store) {
         return shards.count(ShardOf(tenant, store, count)) > 0;
       })) {
    uses[ShardOf(use.tenant, use.store, count)].push_back(
        StoreUse{absl::StrCat(use.tenant, "/", use.store), use.last_use_nanos});
  }
  return uses;
}

bool ClusterMember::WriteHotListIfChanged(int shard, const std::vector<StoreUse>& uses) {
  std::optional<std::vector<std::string>> list = hot_->Changed(shard, uses);
  if (!list.has_value()) return false;
  if (absl::Status put = WriteHotList(shard, *list); !put.ok()) {
    std::fprintf(stderr, "adaptd: shard %s: writing its hot list: %s\n", ShardName(shard).c_str(),
                 std::string(put.message()).c_str());
    return false;
  }
  return true;
}

int ClusterMember::WriteHotLists() {
  const std::set<int> adopted = Adopted();
  if (adopted.empty() || engine_ == nullptr) return 0;
  std::map<int, std::vector<StoreUse>> uses = UsesOf(adopted);
  int written = 0;
  for (int shard : adopted) written += WriteHotListIfChanged(shard, uses[shard]) ? 1 : 0;
  return written;
}

void ClusterMember::RunHotLists() {
  for (;;) {
    {
      absl::MutexLock lock(&restore_mu_);
      restore_mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.hot_interval);
      if (stopping_) return;
    }
    WriteHotLists();
  }
}

void ClusterMember::CancelRestores(int shard) {
  absl::MutexLock lock(&restore_mu_);
  const auto drop = [this, shard]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(restore_mu_) {
    for (auto it = restores_.begin(); it != restores_.end();) {
      if (it->shard != shard) {
        ++it;
        continue;
      }
      if (!it->key.empty()) --stores_pending_;
      it = restores_.erase(it);
    }
  };
  drop();
  const auto settled = [this, shard]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(restore_mu_) {
    return restoring_.count(shard) == 0;
  };
  restore_mu_.Await(absl::Condition(&settled));
  drop();  // what a reading of the shard's list queued meanwhile
}

void ClusterMember::RunRestores() {
  for (;;) {
    RestoreTask task;
    {
      absl::MutexLock lock(&restore_mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(restore_mu_) {
        return stopping_ || !restores_.empty();
      };
      restore_mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      task = std::move(restores_.front());
      restores_.pop_front();
      ++restoring_[task.shard];
    }
    RunRestore(task);
    absl::MutexLock lock(&restore_mu_);
    if (!task.key.empty()) --stores_pending_;
    if (--restoring_[task.shard] == 0) restoring_.erase(task.shard);
  }
}

void ClusterMember::RunRestore(const RestoreTask& task) {
  if (task.key.empty()) {
    // The previous holder's list; unread, this member's own list replaces it in time.
    absl::StatusOr<std::vector<std::string>> list = ReadHotList(task.shard);
    if (!list.ok()) {
      std::fprintf(stderr, "adaptd: shard %s: reading its hot list: %s\n",
                   ShardName(task.shard).c_str(), std::string(list.status().message()).c_str());
    }
    std::vector<std::string> keys = list.ok() ? *std::move(list) : std::vector<std::string>();
    hot_->Inherit(task.shard, keys);
    absl::MutexLock lock(&restore_mu_);
    for (std::string& key : keys) restores_.push_back(RestoreTask{task.shard, std::move(key)});
    stores_pending_ += static_cast<int>(keys.size());
    return;
  }
  const std::vector<std::string> names = absl::StrSplit(task.key, absl::MaxSplits('/', 1));
  if (names.size() != 2) return;
  {
    absl::MutexLock lock(&mu_);
    if (adopted_.count(task.shard) == 0) return;  // released meanwhile
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> stamp = engine_->LoadStore(names[0], names[1]);
  if (!stamp.ok()) {
    // Deleted since, or failed: its first call answers as a cold store's would.
    if (!absl::IsNotFound(stamp.status())) {
      std::fprintf(stderr, "adaptd: restoring %s: %s\n", task.key.c_str(),
                   std::string(stamp.status().message()).c_str());
    }
    return;
  }
  hot_->Restored(task.shard, task.key, *stamp);
  if (options_.on_restore) options_.on_restore(absl::ToDoubleSeconds(absl::Now() - start));
}

}  // namespace adaptd::cluster
