// ShardClaims: the claims' table by watch, and one thread that claims, re-claims and releases.
#include "server/cluster/shard_claims.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "adapt/v1/cluster.pb.h"
#include "server/base/stable_hash.h"
#include "server/base/status_macros.h"
#include "server/cluster/membership.h"

namespace adaptd::cluster {
namespace {

using adapt::v1::ClusterMemberRecord;
using etcdserverpb::TxnRequest;

using etcd::CreateRevisionIs;
using etcd::ModRevisionIs;

}  // namespace

int ShardOf(absl::string_view tenant, absl::string_view store, int shards) {
  Fnv1a64 hash;
  hash.Add(tenant);
  hash.AddByte('/');
  hash.Add(store);
  return static_cast<int>(hash.value() % static_cast<uint64_t>(shards));
}

std::string ShardName(int shard) { return absl::StrFormat("%04x", shard); }

std::string DesiredOwner(const std::vector<std::string>& members, int shard) {
  const std::string key = absl::StrCat("shard-", ShardName(shard));
  std::string best;
  uint64_t best_weight = 0;
  for (const std::string& member : members) {
    const uint64_t weight = RendezvousWeight(member, key);
    if (best.empty() || weight > best_weight || (weight == best_weight && member < best)) {
      best = member;
      best_weight = weight;
    }
  }
  return best;
}

ShardClaims::ShardClaims(etcd::EtcdClient* client, ClusterRegistry* registry, Options options,
                         Hooks hooks)
    : client_(client),
      registry_(registry),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      table_(options_.shards) {}

std::string ShardClaims::ClaimKey(int shard) const {
  return absl::StrCat(options_.prefix, "claims/", ShardName(shard));
}

int ShardClaims::ShardOfKey(const std::string& key) const {
  const std::string prefix = absl::StrCat(options_.prefix, "claims/");
  int shard = -1;
  if (key.size() <= prefix.size() || !absl::SimpleHexAtoi(key.substr(prefix.size()), &shard) ||
      shard < 0 || shard >= options_.shards) {
    return -1;  // not a claim of this shard count
  }
  return shard;
}

absl::StatusOr<std::unique_ptr<ShardClaims>> ShardClaims::Start(etcd::EtcdClient* client,
                                                                ClusterRegistry* registry,
                                                                Options options, Hooks hooks) {
  if (options.shards <= 0 || options.shards > 0x10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster: the shard count must be 1 to 65536, not ", options.shards));
  }
  std::unique_ptr<ShardClaims> claims(
      new ShardClaims(client, registry, std::move(options), std::move(hooks)));
  ShardClaims* raw = claims.get();
  raw->watcher_ = etcd::EtcdWatcher::Start(
      client, absl::StrCat(raw->options_.prefix, "claims/"),
      {[raw](const std::vector<mvccpb::KeyValue>& kvs, int64_t revision) {
         raw->Reset(kvs, revision);
       },
       [raw](const std::vector<mvccpb::Event>& events) { raw->Apply(events); }},
      raw->options_.watch);
  raw->membership_ = registry->Watch([raw](std::shared_ptr<const Membership>) {
    absl::MutexLock lock(&raw->mu_);
    ++raw->changes_;
  });
  raw->thread_ = std::thread([raw] { raw->Run(); });
  return claims;
}

ShardClaims::~ShardClaims() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  membership_.Cancel();
  watcher_.reset();
}

void ShardClaims::LoseUnless(int shard, const std::optional<ShardHolder>& now,
                             std::vector<int>* lost) {
  auto held = held_.find(shard);
  if (held == held_.end()) return;
  if (now.has_value() && now->fence == held->second) return;
  if (!now.has_value() && releasing_.count(shard) > 0) return;  // our own delete
  held_.erase(held);
  lost->push_back(shard);
}

void ShardClaims::Reset(const std::vector<mvccpb::KeyValue>& kvs, int64_t revision) {
  std::vector<int> lost;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::optional<ShardHolder>> table(options_.shards);
    for (const mvccpb::KeyValue& kv : kvs) {
      const int shard = ShardOfKey(kv.key());
      adapt::v1::ShardClaim claim;
      if (shard < 0 || !claim.ParseFromString(kv.value())) continue;
      table[shard] = ShardHolder{claim.member(), claim.lease_id(), kv.mod_revision()};
    }
    for (int shard = 0; shard < options_.shards; ++shard) {
      if (table_[shard].has_value() &&
          (!table[shard].has_value() || table[shard]->member != table_[shard]->member)) {
        last_holder_[shard] = *table_[shard];
      }
      LoseUnless(shard, table[shard], &lost);
    }
    table_ = std::move(table);
    table_revision_ = revision;
    table_ready_ = true;
    ++changes_;
  }
  for (int shard : lost) {
    if (hooks_.on_lost) hooks_.on_lost(shard);
  }
}

void ShardClaims::Apply(const std::vector<mvccpb::Event>& events) {
  std::vector<int> lost;
  {
    absl::MutexLock lock(&mu_);
    for (const mvccpb::Event& event : events) {
      const int shard = ShardOfKey(event.kv().key());
      if (shard < 0) continue;
      std::optional<ShardHolder> now;
      adapt::v1::ShardClaim claim;
      if (event.type() != mvccpb::Event::DELETE && claim.ParseFromString(event.kv().value())) {
        now = ShardHolder{claim.member(), claim.lease_id(), event.kv().mod_revision()};
      }
      if (table_[shard].has_value() && (!now.has_value() || now->member != table_[shard]->member)) {
        last_holder_[shard] = *table_[shard];
      }
      LoseUnless(shard, now, &lost);
      table_[shard] = std::move(now);
      table_revision_ = std::max(table_revision_, event.kv().mod_revision());
    }
    ++changes_;
  }
  for (int shard : lost) {
    if (hooks_.on_lost) hooks_.on_lost(shard);
  }
}

void ShardClaims::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const uint64_t seen = changes_;
    if (table_ready_ && !frozen_) {
      round_running_ = true;
      mu_.Unlock();
      Round();
      mu_.Lock();
      round_running_ = false;
    }
    auto woken = [this, seen]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || changes_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&woken), options_.tick);
  }
}

void ShardClaims::Round() {
  const std::string& self = registry_->self();
  const std::map<std::string, RegisteredMember> members = registry_->Members();
  auto me = members.find(self);
  if (me == members.end() || me->second.record.lease_id() != registry_->lease_id()) {
    return;  // not registered under this process's lease (lapsed, or not yet seen back)
  }
  const bool draining = me->second.record.state() == ClusterMemberRecord::DRAINING;
  const std::vector<std::string> eligible = registry_->EligibleAmong(members);
  // A member in its settle time keeps what it holds but claims a free shard only while no
  // member is eligible (a cluster starting): otherwise an eligible member claims it.
  const bool self_eligible = std::find(eligible.begin(), eligible.end(), self) != eligible.end();
  const bool may_claim = !draining && (self_eligible || eligible.empty());
  std::vector<std::string> view = eligible;
  if (!draining && !self_eligible) view.push_back(self);

  std::vector<int> reclaim, claim_new, claim_failover, claim_move, release, delete_again;
  std::map<int64_t, std::vector<int>> claim_after;  // last holder still registered, by its lease
  {
    absl::MutexLock lock(&mu_);
    for (int shard = 0; shard < options_.shards; ++shard) {
      const std::optional<ShardHolder>& holder = table_[shard];
      const bool held = held_.count(shard) > 0;
      if (holder.has_value() && holder->member == self && !held) {
        if (holder->lease != registry_->lease_id()) reclaim.push_back(shard);
        continue;
      }
      if (held && releasing_.count(shard) > 0) {
        delete_again.push_back(shard);
        continue;
      }
      const std::string desired = DesiredOwner(view, shard);
      if (!holder.has_value() && desired == self && may_claim) {
        auto last = last_holder_.find(shard);
        if (last == last_holder_.end()) {
          claim_new.push_back(shard);
        } else if (members.count(last->second.member) > 0) {
          claim_after[last->second.lease].push_back(shard);
        } else {
          claim_failover.push_back(shard);
        }
      } else if (held && desired != self && !desired.empty() &&
                 std::find(eligible.begin(), eligible.end(), desired) != eligible.end()) {
        release.push_back(shard);
      }
    }
  }
  SortByLease(claim_after, &claim_move, &claim_failover);
  if (!reclaim.empty()) Reclaim(reclaim);
  if (!claim_new.empty()) Claim(claim_new, ClaimReason::kNew);
  if (!claim_move.empty()) Claim(claim_move, ClaimReason::kMove);
  if (!claim_failover.empty()) Claim(claim_failover, ClaimReason::kFailover);
  for (int shard : delete_again) Release(shard);
  for (int shard : release) Release(shard);
}

void ShardClaims::SortByLease(const std::map<int64_t, std::vector<int>>& by_lease,
                              std::vector<int>* move, std::vector<int>* failover) {
  for (const auto& [lease, shards] : by_lease) {
    // The members' table follows its own watch and may not yet show that the lease ended (which
    // deletes the member's record and its claims at one revision): etcd says.
    absl::StatusOr<int64_t> ttl = client_->LeaseTimeToLive(lease);
    std::vector<int>* into = ttl.ok() && *ttl < 0 ? failover : move;
    into->insert(into->end(), shards.begin(), shards.end());
  }
}

void ShardClaims::Claim(const std::vector<int>& shards, ClaimReason reason) {
  adapt::v1::ShardClaim value;
  value.set_member(registry_->self());
  value.set_lease_id(registry_->lease_id());
  const std::string bytes = value.SerializeAsString();
  for (size_t begin = 0; begin < shards.size(); begin += options_.batch) {
    const size_t end = std::min(shards.size(), begin + options_.batch);
    TxnRequest txn;
    for (size_t i = begin; i < end; ++i) {
      *txn.add_compare() = CreateRevisionIs(ClaimKey(shards[i]), 0);
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(ClaimKey(shards[i]));
      put->set_value(bytes);
      put->set_lease(value.lease_id());
    }
    absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
    if (!response.ok()) return;  // etcd unreachable, or the outcome unknown: the table tells
    if (!response->succeeded()) {
      // Another member claimed one of them first: claim the others one by one.
      if (end - begin > 1) {
        for (size_t i = begin; i < end; ++i) Claim({shards[i]}, reason);
      }
      continue;
    }
    const int64_t fence = response->header().revision();
    {
      absl::MutexLock lock(&mu_);
      for (size_t i = begin; i < end; ++i) held_[shards[i]] = fence;
    }
    if (hooks_.on_acquired) {
      Open(std::vector<int>(shards.begin() + begin, shards.begin() + end), fence, reason);
    }
  }
}

void ShardClaims::Open(const std::vector<int>& shards, int64_t fence, ClaimReason reason) {
  // Each thread takes the next shard not yet opened; all are open when the threads end.
  std::atomic<size_t> next{0};
  auto open = [&] {
    for (size_t i = next++; i < shards.size(); i = next++) {
      hooks_.on_acquired(shards[i], fence, reason);
    }
  };
  const size_t threads =
      std::min<size_t>(shards.size(), static_cast<size_t>(std::max(1, options_.open_threads)));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(open);
  open();
  for (std::thread& helper : helpers) helper.join();
}

void ShardClaims::Reclaim(const std::vector<int>& shards) {
  adapt::v1::ShardClaim value;
  value.set_member(registry_->self());
  value.set_lease_id(registry_->lease_id());
  const std::string bytes = value.SerializeAsString();
  // In batches, as Claim: a restarted member takes its shards back before their grace lease
  // ends, however many it holds.
  for (size_t begin = 0; begin < shards.size(); begin += options_.batch) {
    const size_t end = std::min(shards.size(), begin + options_.batch);
    std::vector<int> batch;
    TxnRequest txn;
    {
      absl::MutexLock lock(&mu_);
      for (size_t i = begin; i < end; ++i) {
        if (!table_[shards[i]].has_value()) continue;
        batch.push_back(shards[i]);
        *txn.add_compare() = ModRevisionIs(ClaimKey(shards[i]), table_[shards[i]]->fence);
      }
    }
    if (batch.empty()) continue;
    for (int shard : batch) {
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(ClaimKey(shard));
      put->set_value(bytes);
      put->set_lease(value.lease_id());
    }
    absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
    if (!response.ok()) return;  // etcd unreachable, or the outcome unknown: the table tells
    if (!response->succeeded()) {
      // One of them changed meanwhile: the others one by one (the changed one next round).
      if (batch.size() > 1) {
        for (int shard : batch) Reclaim({shard});
      }
      continue;
    }
    const int64_t fence = response->header().revision();
    {
      absl::MutexLock lock(&mu_);
      for (int shard : batch) held_[shard] = fence;
    }
    if (hooks_.on_acquired) Open(batch, fence, ClaimReason::kRestart);
  }
}

void ShardClaims::Release(int shard) {
  int64_t fence = 0;
  bool released = false;
  {
    absl::MutexLock lock(&mu_);
    auto held = held_.find(shard);
    if (held == held_.end()) return;
    fence = held->second;
    released = releasing_.count(shard) > 0;
  }
  if (!released) {
    if (hooks_.on_release && !hooks_.on_release(shard).ok()) return;  // tried again next round
    absl::MutexLock lock(&mu_);
    releasing_.insert(shard);
  }
  TxnRequest txn;
  *txn.add_compare() = ModRevisionIs(ClaimKey(shard), fence);
  txn.add_success()->mutable_request_delete_range()->set_key(ClaimKey(shard));
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
  if (!response.ok()) return;  // the delete is tried again next round
  absl::MutexLock lock(&mu_);
  held_.erase(shard);
  releasing_.erase(shard);
}

std::optional<ShardHolder> ShardClaims::HolderOf(int shard) const {
  absl::MutexLock lock(&mu_);
  if (shard < 0 || shard >= options_.shards) return std::nullopt;
  return table_[shard];
}

ShardClaims::Table ShardClaims::Holders() const {
  absl::MutexLock lock(&mu_);
  return Table{table_, table_revision_};
}

absl::StatusOr<int64_t> ShardClaims::FenceOf(int shard) const {
  absl::MutexLock lock(&mu_);
  auto held = held_.find(shard);
  if (held != held_.end() && releasing_.count(shard) == 0) return held->second;
  const std::optional<ShardHolder>& holder = table_[shard];
  return absl::UnavailableError(
      holder.has_value() && holder->member != registry_->self()
          ? absl::StrCat("shard ", ShardName(shard), " is held by member '", holder->member,
                         "', not '", registry_->self(), "'")
          : absl::StrCat("shard ", ShardName(shard), " is not held by member '", registry_->self(),
                         "' (a claim or release under way)"));
}

std::vector<int> ShardClaims::Held() const {
  absl::MutexLock lock(&mu_);
  std::vector<int> held;
  for (const auto& [shard, fence] : held_) held.push_back(shard);
  return held;
}

std::vector<KeyAtRevision> ShardClaims::HeldKeys() const {
  adapt::v1::ShardClaim value;
  value.set_member(registry_->self());
  value.set_lease_id(registry_->lease_id());
  absl::MutexLock lock(&mu_);
  std::vector<KeyAtRevision> keys;
  for (const auto& [shard, fence] : held_) {
    keys.push_back({ClaimKey(shard), value.SerializeAsString(), fence});
  }
  return keys;
}

void ShardClaims::Freeze() {
  absl::MutexLock lock(&mu_);
  frozen_ = true;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !round_running_; };
  mu_.Await(absl::Condition(&idle));
}

bool ShardClaims::Settled() const {
  const std::vector<std::string> eligible = registry_->Eligible();
  absl::MutexLock lock(&mu_);
  for (int shard = 0; shard < options_.shards; ++shard) {
    if (!table_[shard].has_value() || table_[shard]->member != DesiredOwner(eligible, shard)) {
      return false;
    }
  }
  return true;
}

}  // namespace adaptd::cluster
