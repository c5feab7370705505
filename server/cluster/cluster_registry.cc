// ClusterRegistry: registration through etcd transactions, the members' table through an
// EtcdWatcher, and the membership published to the feed whenever the table or an
// eligibility (the settle timer) changes it.
#include "server/cluster/cluster_registry.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace adaptd::cluster {
namespace {

using adapt::v1::ClusterMemberRecord;
using etcdserverpb::TxnRequest;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// The key is at `revision` (0: it does not exist).
etcdserverpb::Compare At(const std::string& key, int64_t revision) {
  return revision == 0 ? etcd::CreateRevisionIs(key, 0) : etcd::ModRevisionIs(key, revision);
}

void AddPut(TxnRequest* txn, const std::string& key, const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest* put = txn->add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
}

}  // namespace

ClusterRegistry::ClusterRegistry(etcd::EtcdClient* client, Options options)
    : client_(client),
      options_(std::move(options)),
      feed_(std::make_shared<const Membership>(
          *Membership::Create(options_.self, {{options_.self, options_.address}}))) {}

std::string ClusterRegistry::KeyOf(const std::string& name) const {
  return absl::StrCat(options_.prefix, "members/", name);
}

absl::StatusOr<std::unique_ptr<ClusterRegistry>> ClusterRegistry::Start(
    etcd::EtcdClient* client, Options options, std::function<void()> on_lease_lost) {
  RETURN_IF_ERROR(Membership::Create(options.self, {{options.self, options.address}}).status());
  std::unique_ptr<ClusterRegistry> registry(new ClusterRegistry(client, std::move(options)));
  ASSIGN_OR_RETURN(registry->keeper_, etcd::LeaseKeeper::Start(client, registry->options_.lease_ttl,
                                                               std::move(on_lease_lost)));
  RETURN_IF_ERROR(registry->Register());
  ClusterRegistry* raw = registry.get();
  raw->watcher_ = etcd::EtcdWatcher::Start(
      client, absl::StrCat(raw->options_.prefix, "members/"),
      {[raw](const std::vector<mvccpb::KeyValue>& kvs, int64_t) { raw->Reset(kvs); },
       [raw](const std::vector<mvccpb::Event>& events) { raw->Apply(events); }},
      raw->options_.watch);
  raw->settle_thread_ = std::thread([raw] { raw->SettleLoop(); });
  // Once the table holds this member's own record.
  const absl::Time deadline = absl::Now() + raw->options_.register_wait;
  while (raw->Members().count(raw->options_.self) == 0) {
    if (absl::Now() >= deadline) {
      return absl::UnavailableError(
          absl::StrCat("cluster: the registration of member '", raw->options_.self,
                       "' was not seen back from etcd within ",
                       absl::FormatDuration(raw->options_.register_wait)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return registry;
}

absl::Status ClusterRegistry::Register() {
  const std::string key = KeyOf(options_.self);
  const absl::Time deadline = absl::Now() + options_.register_wait;
  ClusterMemberRecord record;
  record.set_name(options_.self);
  record.set_address(options_.address);
  record.set_state(ClusterMemberRecord::STARTING);
  record.set_started_unix_ms(NowMs());
  record.set_state_since_unix_ms(record.started_unix_ms());
  record.set_lease_id(keeper_->id());
  std::string holder;
  for (;;) {
    etcdserverpb::RangeRequest read;
    read.set_key(key);
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse found, client_->Range(read));
    int64_t expected = 0;
    bool restarting = false;
    if (!found.kvs().empty()) {
      ClusterMemberRecord existing;
      if (existing.ParseFromString(found.kvs(0).value()) &&
          existing.state() == ClusterMemberRecord::RESTARTING) {
        restarting = true;
        expected = found.kvs(0).mod_revision();
      } else {
        holder = existing.address();
      }
    }
    if (found.kvs().empty() || restarting) {
      absl::Status put = Put(options_.self, record, expected);
      if (put.ok()) {
        restarted_ = restarting;
        return absl::OkStatus();
      }
      if (!absl::IsAborted(put)) return put;
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::AlreadyExistsError(absl::StrCat(
      "cluster.self: member '", options_.self, "' is registered by a live process (at ", holder,
      ", its lease kept alive for ", absl::FormatDuration(options_.register_wait),
      "); give this member another name, or stop the other"));
}

absl::Status ClusterRegistry::Put(const std::string& name, const ClusterMemberRecord& record,
                                  int64_t expected_mod_revision) {
  TxnRequest txn;
  *txn.add_compare() = At(KeyOf(name), expected_mod_revision);
  AddPut(&txn, KeyOf(name), record.SerializeAsString(), record.lease_id());
  ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, client_->Txn(txn));
  if (!response.succeeded()) {
    return absl::AbortedError(
        absl::StrCat("cluster: the record of member '", name, "' changed meanwhile"));
  }
  return absl::OkStatus();
}

absl::Status ClusterRegistry::SetState(MemberState state) {
  return SetStateOf(options_.self, state);
}

absl::Status ClusterRegistry::SetStateOf(const std::string& name, MemberState state) {
  etcdserverpb::RangeRequest read;
  read.set_key(KeyOf(name));
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse found, client_->Range(read));
  ClusterMemberRecord record;
  if (found.kvs().empty() || !record.ParseFromString(found.kvs(0).value())) {
    return absl::NotFoundError(absl::StrCat("cluster: member '", name, "' is not registered"));
  }
  if (record.state() == state) return absl::OkStatus();
  record.set_state(state);
  record.set_state_since_unix_ms(NowMs());
  return Put(name, record, found.kvs(0).mod_revision());
}

absl::Status ClusterRegistry::HandOverForRestart(absl::Duration grace,
                                                 const std::vector<KeyAtRevision>& keys) {
  ASSIGN_OR_RETURN(etcdserverpb::LeaseGrantResponse lease, client_->GrantLease(grace));
  etcdserverpb::RangeRequest read;
  read.set_key(KeyOf(options_.self));
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse found, client_->Range(read));
  ClusterMemberRecord record;
  if (found.kvs().empty() || !record.ParseFromString(found.kvs(0).value())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cluster: member '", options_.self, "' is no longer registered (its lease lapsed)"));
  }
  record.set_state(ClusterMemberRecord::RESTARTING);
  record.set_state_since_unix_ms(NowMs());
  record.set_lease_id(lease.id());
  std::vector<KeyAtRevision> all = keys;
  all.push_back({KeyOf(options_.self), record.SerializeAsString(), found.kvs(0).mod_revision()});
  constexpr size_t kPerTxn = 50;  // a compare and a put each: 100 operations
  for (size_t begin = 0; begin < all.size(); begin += kPerTxn) {
    TxnRequest txn;
    for (size_t i = begin; i < std::min(all.size(), begin + kPerTxn); ++i) {
      *txn.add_compare() = At(all[i].key, all[i].mod_revision);
      AddPut(&txn, all[i].key, all[i].value, lease.id());
    }
    ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, client_->Txn(txn));
    if (!response.succeeded()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cluster: a key of member '", options_.self, "' changed before its restart hand-over (",
          all[begin].key, " or one of the next ", kPerTxn - 1, ")"));
    }
  }
  // This member's own lease is kept alive until the process exits, then lapses with nothing
  // left under it.
  return absl::OkStatus();
}

absl::Status ClusterRegistry::Leave() { return keeper_->Revoke(); }

void ClusterRegistry::Reset(const std::vector<mvccpb::KeyValue>& kvs) {
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    std::map<std::string, RegisteredMember> next;
    for (const mvccpb::KeyValue& kv : kvs) {
      RegisteredMember member;
      if (!member.record.ParseFromString(kv.value())) continue;
      member.mod_revision = kv.mod_revision();
      auto known = members_.find(member.record.name());
      if (!first_reset_done_) {
        member.seen_in_state = absl::InfinitePast();
      } else if (known != members_.end() && known->second.record.state() == member.record.state()) {
        member.seen_in_state = known->second.seen_in_state;
      } else {
        member.seen_in_state = now;
      }
      next[member.record.name()] = std::move(member);
    }
    members_ = std::move(next);
    first_reset_done_ = true;
    ++changes_;
  }
  Publish();
}

void ClusterRegistry::Apply(const std::vector<mvccpb::Event>& events) {
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    const std::string prefix = absl::StrCat(options_.prefix, "members/");
    for (const mvccpb::Event& event : events) {
      const std::string name = event.kv().key().substr(prefix.size());
      if (event.type() == mvccpb::Event::DELETE) {
        members_.erase(name);
        continue;
      }
      RegisteredMember member;
      if (!member.record.ParseFromString(event.kv().value())) continue;
      member.mod_revision = event.kv().mod_revision();
      auto known = members_.find(name);
      member.seen_in_state =
          known != members_.end() && known->second.record.state() == member.record.state()
              ? known->second.seen_in_state
              : now;
      members_[name] = std::move(member);
    }
    ++changes_;
  }
  Publish();
}

bool ClusterRegistry::IsEligible(const RegisteredMember& member, absl::Time now) const {
  return member.record.state() == ClusterMemberRecord::READY &&
         now - member.seen_in_state >= options_.settle;
}

std::map<std::string, RegisteredMember> ClusterRegistry::Members() const {
  absl::MutexLock lock(&mu_);
  return members_;
}

std::vector<std::string> ClusterRegistry::Eligible() const { return EligibleAmong(Members()); }

std::vector<std::string> ClusterRegistry::EligibleAmong(
    const std::map<std::string, RegisteredMember>& members) const {
  const absl::Time now = absl::Now();
  std::vector<std::string> eligible;
  for (const auto& [name, member] : members) {
    if (IsEligible(member, now)) eligible.push_back(name);
  }
  return eligible;
}

void ClusterRegistry::Publish() {
  // The table is read inside `next`, which runs one Update at a time: a later table is never
  // overtaken by an earlier one.
  auto next = [this](const std::shared_ptr<const Membership>& current)
      -> absl::StatusOr<std::shared_ptr<const Membership>> {
    std::vector<Member> members;
    std::set<std::string> draining;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      for (const auto& [name, member] : members_) {
        members.push_back({name, member.record.address()});
        if (!IsEligible(member, now)) draining.insert(name);
      }
      if (members_.count(options_.self) == 0) {
        members.push_back({options_.self, options_.address});  // Membership needs it
        draining.insert(options_.self);
      }
    }
    if (draining.size() == members.size()) draining.clear();  // none eligible yet
    ASSIGN_OR_RETURN(Membership listed, Membership::Create(options_.self, members));
    ASSIGN_OR_RETURN(Membership built, listed.Draining(draining));
    if (built.members() == current->members() && built.draining() == current->draining()) {
      return std::shared_ptr<const Membership>();
    }
    return std::make_shared<const Membership>(std::move(built));
  };
  // A record that does not make a valid list (a name or address malformed by hand) fails the
  // update: the membership stays as it was until the record is fixed.
  feed_.Update(next).IgnoreError();
}

void ClusterRegistry::SettleLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    // The next moment a READY member becomes eligible.
    absl::Time wake = absl::InfiniteFuture();
    const absl::Time now = absl::Now();
    for (const auto& [name, member] : members_) {
      if (member.record.state() == ClusterMemberRecord::READY && !IsEligible(member, now)) {
        wake = std::min(wake, member.seen_in_state + options_.settle);
      }
    }
    const uint64_t seen = changes_;
    auto woken = [this, seen]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || changes_ != seen; };
    if (!mu_.AwaitWithDeadline(absl::Condition(&woken), wake) && !stopping_) {
      mu_.Unlock();
      Publish();
      mu_.Lock();
    }
  }
}

int64_t ClusterRegistry::lease_id() const { return keeper_->id(); }

int64_t ClusterRegistry::revision() const { return watcher_ == nullptr ? 0 : watcher_->revision(); }

absl::Time ClusterRegistry::ValidUntil() const {
  const absl::Duration margin = std::min(absl::Seconds(1), keeper_->ttl() / 4);
  return keeper_->ValidUntil() - margin;
}

ClusterRegistry::~ClusterRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (settle_thread_.joinable()) settle_thread_.join();
  watcher_.reset();
  keeper_.reset();
}

}  // namespace adaptd::cluster
