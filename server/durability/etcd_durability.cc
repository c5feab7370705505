// EtcdDurability: the claim, start-up recovery, and the store entries (creates, imports,
// deletes, pins). Appends are in etcd_durability_log.cc, stored states and loads in
// etcd_durability_state.cc.
#include "server/durability/etcd_durability.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/persistence/failed_store.h"

namespace adaptd {
namespace {

using etcd::ModRevisionIs;
using etcd::VersionIs;

}  // namespace

EtcdDurability::EtcdDurability(std::unique_ptr<etcd::EtcdClient> client,
                               std::shared_ptr<ObjectStore> objects, kernels::Backend* backend,
                               Options options)
    : client_(std::move(client)),
      objects_(std::move(objects)),
      backend_(backend),
      options_(std::move(options)) {}

EtcdDurability::~EtcdDurability() { Close(); }

absl::StatusOr<std::unique_ptr<EtcdDurability>> EtcdDurability::Open(
    std::unique_ptr<etcd::EtcdClient> client, std::shared_ptr<ObjectStore> objects,
    kernels::Backend* backend, std::vector<RecoveredStore>* recovered, Options options) {
  if (options.prefix.empty() || options.prefix.back() != '/') options.prefix += '/';
  const absl::Time start = absl::Now();
  std::unique_ptr<EtcdDurability> durability(
      new EtcdDurability(std::move(client), std::move(objects), backend, std::move(options)));
  if (!durability->options_.cache_dir.empty()) {
    StateDbOptions cache;
    cache.dir = durability->options_.cache_dir;
    cache.sync = false;  // a cache: what a crash loses is read from object storage
    absl::StatusOr<std::unique_ptr<StateDb>> opened = StateDb::Open(cache);
    if (!opened.ok()) {
      return absl::Status(opened.status().code(),
                          absl::StrCat("the local cache: ", opened.status().message()));
    }
    durability->cache_ = *std::move(opened);
  }
  const bool member = durability->options_.shards != nullptr;
  if (!member) RETURN_IF_ERROR(durability->Claim());
  EtcdCommitQueue::Options queue;
  queue.commit_timeout = durability->options_.commit_timeout;
  queue.fault = durability->options_.commit_fault;
  const Options::Hooks& hooks = durability->options_.hooks;
  queue.on_commit = hooks.on_commit;
  if (hooks.on_error) queue.on_error = [on_error = hooks.on_error] { on_error("etcd"); };
  queue.on_fence_failure = hooks.on_fence_failure;
  durability->commits_ = std::make_unique<EtcdCommitQueue>(durability->client_.get(), queue);
  if (!member)
    RETURN_IF_ERROR(
        durability->RecoverUnder(durability->options_.prefix, /*replay=*/true, recovered));
  EtcdDurability* d = durability.get();
  durability->snapshotter_ = std::thread([d] { d->SnapshotLoop(); });
  durability->recovery_report_ =
      member ? absl::StrFormat("a cluster member of %s: stores are opened shard by shard",
                               durability->options_.prefix)
             : absl::StrFormat("%d stores from etcd (%s) in %.3f s", recovered->size(),
                               durability->options_.prefix,
                               absl::ToDoubleSeconds(absl::Now() - start));
  return durability;
}

absl::StatusOr<std::unique_ptr<etcd::LeaseKeeper>> EtcdDurability::NewLease() {
  absl::StatusOr<std::unique_ptr<etcd::LeaseKeeper>> lease =
      etcd::LeaseKeeper::Start(client_.get(), options_.lease_ttl, [this] {
        std::fprintf(stderr, "adaptd: the etcd lease of the claim %sowner was lost\n",
                     options_.prefix.c_str());
        absl::MutexLock lock(&snapshot_mu_);
        lease_lost_ = true;
      });
  if (!lease.ok()) {
    return absl::UnavailableError(
        absl::StrCat("etcd: granting this server's lease: ", lease.status().message()));
  }
  return lease;
}

absl::StatusOr<bool> EtcdDurability::TryClaim(int64_t lease, int64_t previous,
                                              std::string* holder) {
  const std::string owner = options_.prefix + "owner";
  const std::string epoch = options_.prefix + "epoch";
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = VersionIs(owner, 0);
  if (previous > 0) {
    // Claimed again only when no one claimed in between: the epoch is still this server's.
    *txn.add_compare() = ModRevisionIs(epoch, previous);
  }
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(owner);
  put->set_value(options_.server_name);
  put->set_lease(lease);
  put = txn.add_success()->mutable_request_put();
  put->set_key(epoch);
  put->set_value(options_.server_name);
  txn.add_failure()->mutable_request_range()->set_key(owner);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
  Count(response.status(), "etcd");
  if (!response.ok()) return response.status();
  if (response->succeeded()) {
    claim_revision_ = response->header().revision();
    return true;
  }
  const auto& range = response->responses(0).response_range();
  if (holder != nullptr && range.kvs_size() > 0) *holder = range.kvs(0).value();
  return false;
}

absl::Status EtcdDurability::Claim() {
  ASSIGN_OR_RETURN(std::unique_ptr<etcd::LeaseKeeper> lease, NewLease());
  const absl::Time deadline = absl::Now() + options_.claim_wait;
  std::string holder;
  for (;;) {
    absl::StatusOr<bool> claimed = TryClaim(lease->id(), 0, &holder);
    if (claimed.ok() && *claimed) {
      absl::MutexLock lock(&lease_mu_);
      lease_ = std::move(lease);
      return absl::OkStatus();
    }
    if (!claimed.ok() && !absl::IsUnavailable(claimed.status()) &&
        !absl::IsDeadlineExceeded(claimed.status())) {
      return claimed.status();
    }
    if (absl::Now() > deadline) {
      return absl::UnavailableError(absl::StrCat(
          "etcd: the claim ", options_.prefix, "owner is held by '", holder,
          "' (another adaptd uses this --etcd-prefix, or one that stopped has a lease not yet "
          "lapsed) and did not go within ",
          absl::FormatDuration(options_.claim_wait)));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

bool EtcdDurability::Reclaim() {
  absl::StatusOr<std::unique_ptr<etcd::LeaseKeeper>> lease = NewLease();
  if (!lease.ok()) return false;  // etcd still unreachable: tried again
  std::string holder;
  absl::StatusOr<bool> claimed = TryClaim((*lease)->id(), claim_revision_, &holder);
  if (!claimed.ok()) {
    (void)(*lease)->Revoke();
    return false;
  }
  if (!*claimed) {
    (void)(*lease)->Revoke();
    fenced_ = true;
    std::fprintf(stderr,
                 "adaptd: another server ('%s') claimed %s while this server's lease had lapsed; "
                 "this server appends and serves nothing more (restart it to serve again)\n",
                 holder.c_str(), options_.prefix.c_str());
    return true;
  }
  std::fprintf(stderr, "adaptd: claimed %s again under a new lease (fence revision %lld)\n",
               options_.prefix.c_str(), static_cast<long long>(claim_revision_.load()));
  absl::MutexLock lock(&lease_mu_);
  lease_ = *std::move(lease);
  return true;
}

absl::Status EtcdDurability::ReadsAllowed(const std::string& tenant,
                                          const std::string& name) const {
  if (options_.shards != nullptr) {
    return options_.shards->ReadsAllowed(options_.shards->ShardOf(tenant, name));
  }
  if (fenced_) {
    return OwnershipLostError(StoreKey(tenant, name),
                              absl::StrCat("another server claimed ", options_.prefix));
  }
  absl::Time valid = absl::InfinitePast();
  {
    absl::ReaderMutexLock lock(&lease_mu_);
    if (lease_ != nullptr && !lease_->Lost()) valid = lease_->ValidUntil();
  }
  const absl::Duration margin = std::min(absl::Seconds(1), options_.lease_ttl / 4);
  if (absl::Now() + margin < valid) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "store ", tenant, "/", name,
      ": this server's lease in etcd is not known to be valid (etcd has not answered its "
      "renewals); reads resume once it does"));
}

std::string EtcdDurability::ShardRoot(int shard) const {
  return absl::StrFormat("%sshards/%04x/", options_.prefix, shard);
}

int EtcdDurability::ShardOfKey(const std::string& key) const {
  const size_t slash = key.find('/');
  return options_.shards->ShardOf(key.substr(0, slash), key.substr(slash + 1));
}

std::string EtcdDurability::RootOf(const std::string& key) const {
  return options_.shards == nullptr ? options_.prefix : ShardRoot(ShardOfKey(key));
}

std::string EtcdDurability::EntryKey(const std::string& key) const {
  return absl::StrCat(RootOf(key), "stores/", key);
}

std::string EtcdDurability::LogPrefix(const std::string& key, uint64_t incarnation) const {
  return absl::StrFormat("%slog/%s/%016x/", RootOf(key), key, incarnation);
}

std::string EtcdDurability::LogKey(const std::string& key, uint64_t incarnation,
                                   uint64_t seq) const {
  return absl::StrFormat("%s%016x", LogPrefix(key, incarnation), seq);
}

absl::StatusOr<EtcdFence> EtcdDurability::FenceOf(const std::string& key) const {
  if (options_.shards == nullptr) {
    return EtcdFence{options_.prefix + "owner", claim_revision_.load(), false};
  }
  absl::StatusOr<EtcdFence> fence = options_.shards->FenceOf(ShardOfKey(key));
  if (!fence.ok()) return OwnershipLostError(key, fence.status().message());
  return fence;
}

Fence EtcdDurability::CurrentFence(const std::string& tenant, const std::string& name) const {
  absl::StatusOr<EtcdFence> fence = FenceOf(StoreKey(tenant, name));
  return Fence{fence.ok() ? fence->Token() : std::string()};
}

absl::Status EtcdDurability::CheckFence(const std::string& key, const Fence& fence) const {
  if (fenced_) {
    const absl::Status lost =
        OwnershipLostError(key, absl::StrCat("another server claimed ", options_.prefix));
    Count(lost, "etcd");
    return lost;
  }
  absl::StatusOr<EtcdFence> held = FenceOf(key);
  if (!held.ok()) {
    Count(held.status(), "etcd");
    return held.status();
  }
  const std::string current = held->Token();
  if (fence.token == current) return absl::OkStatus();
  return OwnershipLostError(
      key, absl::StrCat("fence '", fence.token, "' is not this server's (", current, ")"));
}

absl::Status EtcdDurability::FencedTxn(const std::string& key,
                                       std::vector<etcdserverpb::Compare> compares,
                                       std::vector<etcdserverpb::RequestOp> ops,
                                       etcdserverpb::TxnResponse* answer) {
  ASSIGN_OR_RETURN(const EtcdFence fence, FenceOf(key));
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = fence.Compare();
  for (etcdserverpb::Compare& compare : compares) *txn.add_compare() = std::move(compare);
  for (etcdserverpb::RequestOp& op : ops) *txn.add_success() = std::move(op);
  txn.add_failure()->mutable_request_range()->set_key(fence.key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
  Count(response.status(), "etcd");
  if (!response.ok()) {
    if (absl::IsResourceExhausted(response.status())) return response.status();
    return absl::UnavailableError(
        absl::StrCat("store ", key, ": etcd: ", response.status().message()));
  }
  if (response->succeeded()) {
    if (answer != nullptr) *answer = *std::move(response);
    return absl::OkStatus();
  }
  const auto& claim = response->responses(0).response_range();
  if (fenced_ || claim.kvs_size() == 0 || fence.RevisionOf(claim.kvs(0)) != fence.revision) {
    const absl::Status lost = OwnershipLostError(
        key, absl::StrCat("the claim ", fence.key, " is no longer this server's"));
    Count(lost, "etcd");
    return lost;
  }
  return absl::FailedPreconditionError(absl::StrCat("store ", key, ": its entry in etcd changed"));
}

void EtcdDurability::Count(const absl::Status& status, const std::string& service) const {
  if (status.ok()) return;
  if (IsOwnershipLost(status)) {
    if (options_.hooks.on_fence_failure) options_.hooks.on_fence_failure();
  } else if (options_.hooks.on_error) {
    options_.hooks.on_error(service);
  }
}

double EtcdDurability::OldestChangeSeconds() const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    entries.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
  }
  const absl::Time now = absl::Now();
  absl::Time oldest = now;
  for (const std::shared_ptr<Entry>& entry : entries) {
    const int64_t since = entry->dirty_since_ns;
    if (since != 0) oldest = std::min(oldest, absl::FromUnixNanos(since));
  }
  return absl::ToDoubleSeconds(now - oldest);
}

std::shared_ptr<EtcdDurability::Entry> EtcdDurability::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<EtcdDurability::Entry> EtcdDurability::FindLoaded(const std::string& key,
                                                                  const Store* store) const {
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr || store == nullptr) return nullptr;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->store.get() == store ? entry : nullptr;
}

absl::Status EtcdDurability::OpenShard(int shard, std::vector<RecoveredStore>* recovered) {
  if (options_.shards == nullptr) {
    return absl::FailedPreconditionError("a single server on etcd has no shards to open");
  }
  return RecoverUnder(ShardRoot(shard), /*replay=*/false, recovered);
}

bool EtcdDurability::StoredStateBehind(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return false;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->store == nullptr && entry->behind;
}

absl::Status EtcdDurability::CloseShard(int shard, std::vector<std::string>* closed) {
  if (options_.shards == nullptr) {
    return absl::FailedPreconditionError("a single server on etcd has no shards to close");
  }
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> of_shard;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) {
      if (ShardOfKey(key) == shard) of_shard.emplace_back(key, entry);
    }
  }
  for (const auto& [key, entry] : of_shard) {
    {
      absl::MutexLock entry_lock(&entry->mu);
      if (entry->dirty && entry->store != nullptr) {
        // What fails here stays in etcd's log, which the next holder replays.
        if (absl::Status stored = StoreState(key, *entry); !stored.ok()) {
          std::fprintf(stderr,
                       "adaptd: store %s: its state was not written at the close of its "
                       "shard (%s); the next holder replays its log\n",
                       key.c_str(), std::string(stored.message()).c_str());
        }
      }
      entry->store = nullptr;
    }
    absl::MutexLock lock(&mu_);
    entries_.erase(key);
    closed->push_back(key);
  }
  return absl::OkStatus();
}

absl::Status EtcdDurability::RecoverUnder(const std::string& root, bool replay,
                                          std::vector<RecoveredStore>* recovered) {
  const std::string stores_prefix = root + "stores/";
  absl::StatusOr<std::vector<mvccpb::KeyValue>> entries = client_->RangePrefix(stores_prefix);
  if (!entries.ok()) return entries.status();
  // The stores whose log holds records after their stored state: rebuilt now, or marked.
  absl::StatusOr<std::vector<mvccpb::KeyValue>> logs =
      client_->RangePrefix(root + "log/", /*keys_only=*/true);
  if (!logs.ok()) return logs.status();
  std::set<std::string> with_log;
  for (const mvccpb::KeyValue& kv : *logs) {
    std::string rest = kv.key().substr(root.size() + 4);  // TENANT/STORE/INC/SEQ
    const size_t cut = rest.rfind('/');
    if (cut != std::string::npos) with_log.insert(rest.substr(0, cut));  // TENANT/STORE/INC
  }
  for (const mvccpb::KeyValue& kv : *entries) {
    const std::string key = kv.key().substr(stores_prefix.size());
    adapt::v1::RemoteStoreEntry meta;
    const size_t slash = key.find('/');
    if (!meta.ParseFromString(kv.value()) || slash == std::string::npos) {
      std::fprintf(stderr, "adaptd: etcd key %s does not hold a store entry; skipped\n",
                   kv.key().c_str());
      continue;
    }
    if (meta.importing()) {
      // An import never acknowledged: its state was never stored (nor its slot kept).
      RETURN_IF_ERROR(CountedTxn(key, -1, {}, [&] {
        std::vector<etcdserverpb::RequestOp> ops(1);
        ops[0].mutable_request_delete_range()->set_key(EntryKey(key));
        return ops;
      }()));
      continue;
    }
    auto entry = std::make_shared<Entry>(options_.max_ids_per_store);
    entry->tenant = key.substr(0, slash);
    entry->name = key.substr(slash + 1);
    RecoveredStore out;
    out.tenant = entry->tenant;
    out.name = entry->name;
    out.kind = meta.spec().kind();
    out.base = meta.spec().base();
    out.pinned = meta.pinned();
    out.incarnation = meta.incarnation();
    out.info = meta.snapshot().info();
    const bool rebuild = !meta.has_snapshot() ||
                         with_log.contains(absl::StrFormat("%s/%016x", key, meta.incarnation()));
    {
      absl::MutexLock entry_lock(&entry->mu);
      entry->meta = meta;
      if (rebuild && !replay) {
        entry->behind = true;
        if (!meta.has_snapshot()) {
          // Never stored: a description of its spec alone, for its slot's kind and spec.
          adapt::v1::StoreInfo spec_only;
          *spec_only.mutable_spec() = meta.spec();
          out.info = spec_only.SerializeAsString();
        }
      } else if (rebuild) {
        absl::StatusOr<Rebuilt> rebuilt = Rebuild(key, meta);
        if (!rebuilt.ok()) return rebuilt.status();
        entry->store = rebuilt->store;
        for (const std::string& id : rebuilt->ids) entry->ids.Add(id);
        entry->next_seq = rebuilt->last_seq + 1;
        entry->applied_seq = rebuilt->last_seq;
        SetDirty(*entry, rebuilt->last_seq > meta.snapshot().seq());
        entry->log_records = rebuilt->log_records;
        entry->log_bytes = rebuilt->log_bytes;
        out.store = rebuilt->store;
      }
    }
    {
      absl::MutexLock lock(&mu_);
      entries_[key] = entry;
    }
    recovered->push_back(std::move(out));
  }
  return absl::OkStatus();
}

absl::StatusOr<Position> EtcdDurability::AppendCreate(const std::string& tenant,
                                                      const std::string& name,
                                                      std::shared_ptr<Store> store,
                                                      const adapt::v1::StoreSpec& spec,
                                                      bool imported, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  RETURN_IF_ERROR(CheckFence(key, fence));
  RETURN_IF_ERROR(SpaceGuard(key));
  auto entry = std::make_shared<Entry>(options_.max_ids_per_store);
  entry->tenant = tenant;
  entry->name = name;
  adapt::v1::RemoteStoreEntry meta;
  *meta.mutable_spec() = spec;
  meta.mutable_spec()->clear_pinned();
  meta.set_pinned(spec.pinned());
  meta.set_importing(imported);
  absl::BitGen bits;
  // 63 random bits under a set top bit, as the journal draws them.
  meta.set_incarnation(absl::Uniform<uint64_t>(bits) | (uint64_t{1} << 63));
  std::vector<etcdserverpb::RequestOp> ops(1);
  ops[0].mutable_request_put()->set_key(EntryKey(key));
  ops[0].mutable_request_put()->set_value(meta.SerializeAsString());
  std::vector<etcdserverpb::Compare> compares = {VersionIs(EntryKey(key), 0)};
  absl::MutexLock entry_lock(&entry->mu);
  if (absl::Status made = CountedTxn(key, 1, std::move(compares), std::move(ops)); !made.ok()) {
    if (absl::IsFailedPrecondition(made)) {
      return absl::AlreadyExistsError(absl::StrCat("store ", key, " exists in etcd already"));
    }
    return made;
  }
  entry->meta = std::move(meta);
  entry->store = std::move(store);
  SetDirty(*entry, true);
  absl::MutexLock lock(&mu_);
  entries_[key] = entry;
  return Position{};
}

absl::Status EtcdDurability::StoreImported(const std::string& tenant, const std::string& name,
                                           const Store* store,
                                           const std::vector<std::string>& applied_ids) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " was deleted during the call"));
  }
  absl::MutexLock entry_lock(&entry->mu);
  for (const std::string& id : applied_ids) entry->ids.Add(id);
  return StoreState(key, *entry);
}

absl::StatusOr<Position> EtcdDurability::AppendDelete(const std::string& tenant,
                                                      const std::string& name, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  RETURN_IF_ERROR(CheckFence(key, fence));
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) return Position{};
  std::vector<std::string> objects;
  {
    absl::MutexLock entry_lock(&entry->mu);
    std::vector<etcdserverpb::RequestOp> ops(2);
    ops[0].mutable_request_delete_range()->set_key(EntryKey(key));
    const std::string logs = absl::StrCat(RootOf(key), "log/", key, "/");
    ops[1].mutable_request_delete_range()->set_key(logs);
    ops[1].mutable_request_delete_range()->set_range_end(PrefixEnd(logs));
    RETURN_IF_ERROR(CountedTxn(key, -1, {}, std::move(ops)));
    objects = {entry->meta.snapshot().state().key(), entry->meta.snapshot().readout().key()};
    entry->store = nullptr;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second == entry) entries_.erase(it);
  }
  if (cache_ != nullptr) {
    absl::StatusOr<StateDb::Writer> writer = cache_->BeginWrite();
    if (writer.ok() && writer->Delete(key, ~uint64_t{0}).ok()) (void)writer->Commit();
  }
  // The store's objects are no one's now (unless a backup holds them); what is left (a
  // payload) the collector takes.
  DeleteUnreferenced(objects);
  return Position{};
}

absl::Status EtcdDurability::WaitDurable(const Position& position) {
  // Creates and deletes are committed when they return.
  if (!position.bytes.empty()) {
    return absl::InvalidArgumentError("position: not one this durability made");
  }
  return absl::OkStatus();
}

uint64_t EtcdDurability::Incarnation(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->meta.incarnation();
}

absl::Status EtcdDurability::AppendPin(const std::string& tenant, const std::string& name,
                                       const Store* store, bool pinned, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  RETURN_IF_ERROR(CheckFence(key, fence));
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " was deleted during the call"));
  }
  absl::MutexLock entry_lock(&entry->mu);
  adapt::v1::RemoteStoreEntry meta = entry->meta;
  meta.set_pinned(pinned);
  std::vector<etcdserverpb::RequestOp> ops(1);
  ops[0].mutable_request_put()->set_key(EntryKey(key));
  ops[0].mutable_request_put()->set_value(meta.SerializeAsString());
  RETURN_IF_ERROR(FencedTxn(key, {}, std::move(ops)));
  entry->meta = std::move(meta);
  return absl::OkStatus();
}

void EtcdDurability::Close() {
  {
    absl::MutexLock lock(&snapshot_mu_);
    snapshot_stop_ = true;
  }
  if (snapshotter_.joinable()) snapshotter_.join();
  if (commits_ != nullptr) commits_->Stop();
  absl::MutexLock lock(&lease_mu_);
  if (lease_ != nullptr) {
    (void)lease_->Revoke();
    lease_.reset();
  }
}

}  // namespace adaptd
