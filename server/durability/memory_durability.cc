#include "server/durability/memory_durability.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/base/status_macros.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/replay.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

std::string TokenOf(uint64_t server) { return absl::StrCat("memory-server-", server); }

absl::Status Gone(const std::string& key) {
  return absl::NotFoundError(absl::StrCat("store ", key, " was deleted during the call"));
}

}  // namespace

void MemoryDisk::FailAppends(int count) {
  absl::MutexLock lock(&mu_);
  fail_appends_ = count;
}

size_t MemoryDisk::LogRecords(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = logs_.find(key);
  return it == logs_.end() ? 0 : it->second.records.size();
}

absl::StatusOr<std::unique_ptr<MemoryDurability>> MemoryDurability::Open(
    std::shared_ptr<MemoryDisk> disk, kernels::Backend* backend,
    std::vector<RecoveredStore>* recovered, Options options) {
  const absl::Time start = absl::Now();
  std::map<std::string, MemoryDisk::Log> logs;
  uint64_t server = 0;
  {
    absl::MutexLock lock(&disk->mu_);
    server = disk->next_server_++;
    logs = disk->logs_;
  }
  std::unique_ptr<MemoryDurability> durability(
      new MemoryDurability(disk, backend, options, server));
  size_t count = 0;
  for (const auto& [key, log] : logs) {
    Rebuilt rebuilt = durability->Rebuild(key, log);
    if (rebuilt.store == nullptr) continue;
    const size_t slash = key.find('/');
    auto entry = std::make_shared<Entry>(options.max_ids_per_store);
    entry->tenant = key.substr(0, slash);
    entry->name = key.substr(slash + 1);
    {
      absl::MutexLock entry_lock(&entry->mu);
      entry->store = rebuilt.store;
      entry->incarnation = rebuilt.incarnation;
      entry->pinned = rebuilt.pinned;
      entry->dirty = !log.records.empty();
      for (const std::string& id : rebuilt.ids) entry->ids.Add(id);
    }
    {
      // The claim: appends of the server that held the store until now fail from here on.
      absl::MutexLock lock(&disk->mu_);
      disk->logs_[key].holder = server;
    }
    {
      absl::MutexLock lock(&durability->mu_);
      durability->entries_[key] = entry;
    }
    RecoveredStore out;
    out.tenant = entry->tenant;
    out.name = entry->name;
    out.store = rebuilt.store;
    out.kind = rebuilt.spec.kind();
    out.base = rebuilt.spec.base();
    out.pinned = rebuilt.pinned;
    out.incarnation = rebuilt.incarnation;
    recovered->push_back(std::move(out));
    ++count;
  }
  durability->recovery_report_ = absl::StrFormat("%d stores from memory in %.3f s", count,
                                                 absl::ToDoubleSeconds(absl::Now() - start));
  return durability;
}

MemoryDurability::Rebuilt MemoryDurability::Rebuild(const std::string& key,
                                                    const MemoryDisk::Log& log) const {
  Rebuilt out;
  out.pinned = log.pinned;
  bool failed = false;
  const auto fail = [&](const std::string& reason) {
    std::fprintf(stderr, "adaptd: store %s failed to recover: %s\n", key.c_str(), reason.c_str());
    out.store = std::make_shared<FailedStore>(out.spec, reason);
    failed = true;
  };
  if (!log.state.empty()) {
    absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(log.state);
    if (!decoded.ok()) {
      fail(absl::StrCat("its stored state: ", decoded.status().message()));
    } else {
      out.incarnation = decoded->header.durable().incarnation();
      out.ids.assign(decoded->header.durable().applied_ids().begin(),
                     decoded->header.durable().applied_ids().end());
      decoded->header.clear_durable();
      out.spec = decoded->header.spec();
      absl::StatusOr<std::unique_ptr<Store>> restored =
          RestoreStore(decoded->header, decoded->arrays, backend_);
      if (restored.ok()) {
        out.store = *std::move(restored);
      } else {
        fail(absl::StrCat("its stored state: ", restored.status().message()));
      }
    }
  }
  for (const std::string& bytes : log.records) {
    adapt::v1::WalRecord record;
    if (!record.ParseFromString(bytes)) continue;  // written by this file: never
    if (record.has_create() || record.has_import_stored()) {
      out.incarnation = record.incarnation();
      out.ids.clear();
      failed = false;
      out.store = nullptr;
      // An import's state replaces the log when it is stored: an import still in the log
      // never stored its state and was never acknowledged.
      if (record.has_import_stored()) continue;
      out.spec = record.create();
      out.pinned = out.spec.pinned();
      out.spec.clear_pinned();  // pinning is the durability's, not the store's
      absl::StatusOr<std::unique_ptr<Store>> created = CreateStore(out.spec, backend_);
      if (created.ok()) {
        out.store = *std::move(created);
      } else {
        fail(absl::StrCat("replaying its creation: ", created.status().message()));
      }
      continue;
    }
    if (out.store == nullptr || record.incarnation() != out.incarnation) continue;
    if (record.has_delete_()) {
      out.store = nullptr;
    } else if (record.has_pin()) {
      out.pinned = record.pin().pinned();
    } else if (failed) {
      continue;
    } else if (record.has_write()) {
      // A write whose application failed when it was logged fails the same way here.
      if (ReplayWrite(*out.store, record.write()).ok()) {
        out.ids.insert(out.ids.end(), record.write().ids().begin(), record.write().ids().end());
      }
    } else {
      ReplayCompile(*out.store, record);
    }
  }
  // The store's last compile, solved once (replay.h).
  if (out.store != nullptr && !failed) {
    if (const absl::Status solved = FinishReplay(*out.store); !solved.ok()) {
      std::fprintf(stderr, "adaptd: store %s: solving its last logged compile: %s\n", key.c_str(),
                   std::string(solved.message()).c_str());
    }
  }
  return out;
}

std::shared_ptr<MemoryDurability::Entry> MemoryDurability::Find(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::shared_ptr<MemoryDurability::Entry> MemoryDurability::FindLoaded(const std::string& key,
                                                                      const Store* store) const {
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) return nullptr;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->store.get() == store && store != nullptr ? entry : nullptr;
}

Fence MemoryDurability::CurrentFence(const std::string&, const std::string&) const {
  return Fence{TokenOf(server_)};
}

absl::Status MemoryDurability::AppendRecord(const std::string& key,
                                            const adapt::v1::WalRecord& record, const Fence& fence,
                                            bool claim) {
  absl::MutexLock lock(&disk_->mu_);
  if (fence.token != TokenOf(server_)) {
    return OwnershipLostError(key, absl::StrCat("fence '", fence.token, "' is not this server's"));
  }
  auto it = disk_->logs_.find(key);
  const bool held_here = it != disk_->logs_.end() && it->second.holder == server_;
  const bool held_elsewhere = it != disk_->logs_.end() && it->second.live && !held_here;
  if (claim ? held_elsewhere : !held_here) {
    return OwnershipLostError(
        key,
        absl::StrCat("server ", it == disk_->logs_.end() ? 0 : it->second.holder, " holds it"));
  }
  if (disk_->fail_appends_ > 0) {
    --disk_->fail_appends_;
    return absl::UnavailableError(
        absl::StrCat("store ", key, ": its log record could not be made durable (sync failed)"));
  }
  MemoryDisk::Log& log = disk_->logs_[key];
  log.holder = server_;
  if (record.has_create() || record.has_import_stored()) log.live = true;
  if (record.has_delete_()) log.live = false;
  log.records.push_back(record.SerializeAsString());
  return absl::OkStatus();
}

absl::StatusOr<Position> MemoryDurability::AppendCreate(const std::string& tenant,
                                                        const std::string& name,
                                                        std::shared_ptr<Store> store,
                                                        const adapt::v1::StoreSpec& spec,
                                                        bool imported, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  auto entry = std::make_shared<Entry>(options_.max_ids_per_store);
  entry->tenant = tenant;
  entry->name = name;
  adapt::v1::WalRecord record;
  {
    absl::MutexLock lock(&disk_->mu_);
    record.set_incarnation(disk_->next_incarnation_++);
  }
  *(imported ? record.mutable_import_stored() : record.mutable_create()) = spec;
  absl::MutexLock entry_lock(&entry->mu);
  RETURN_IF_ERROR(AppendRecord(key, record, fence, /*claim=*/true));
  entry->store = std::move(store);
  entry->incarnation = record.incarnation();
  entry->pinned = spec.pinned();
  entry->dirty = true;
  absl::MutexLock lock(&mu_);
  entries_[key] = entry;
  return Position{};
}

absl::Status MemoryDurability::StoreImported(const std::string& tenant, const std::string& name,
                                             const Store* store,
                                             const std::vector<std::string>& applied_ids) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) return Gone(key);
  absl::MutexLock entry_lock(&entry->mu);
  for (const std::string& id : applied_ids) entry->ids.Add(id);
  return StoreState(key, *entry);
}

absl::StatusOr<Position> MemoryDurability::AppendDelete(const std::string& tenant,
                                                        const std::string& name,
                                                        const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) return Position{};
  {
    absl::MutexLock entry_lock(&entry->mu);
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    record.mutable_delete_();
    RETURN_IF_ERROR(AppendRecord(key, record, fence));
    entry->store = nullptr;
  }
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second == entry) entries_.erase(it);
  return Position{};
}

absl::Status MemoryDurability::WaitDurable(const Position& position) {
  // Every append is durable when it returns.
  if (!position.bytes.empty()) {
    return absl::InvalidArgumentError("position: not one this durability made");
  }
  return absl::OkStatus();
}

uint64_t MemoryDurability::Incarnation(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->incarnation;
}

void MemoryDurability::AppendWrite(const std::string& tenant, const std::string& name,
                                   const Store* store, adapt::v1::WalWrite write,
                                   const Fence& fence, Apply apply, WriteDone done) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  absl::StatusOr<CommitResult> result = Gone(key);
  if (entry != nullptr) {
    absl::MutexLock entry_lock(&entry->mu);
    result = WriteLocked(key, *entry, store, std::move(write), fence, std::move(apply));
  }
  std::move(done)(std::move(result));
}

absl::StatusOr<CommitResult> MemoryDurability::WriteLocked(const std::string& key, Entry& entry,
                                                           const Store* store,
                                                           adapt::v1::WalWrite write,
                                                           const Fence& fence, Apply apply) {
  if (entry.store.get() != store || store == nullptr) return Gone(key);
  for (const std::string& id : write.ids()) {
    // Appends of a store are one at a time: an id applied first was applied by a write that
    // finished while this one waited for the store's lock.
    if (entry.ids.Contains(id)) {
      return absl::AbortedError(
          absl::StrCat("examples: id '", id,
                       "' was applied by a concurrent call; resend the call to apply the others"));
    }
  }
  adapt::v1::WalRecord record;
  record.set_incarnation(entry.incarnation);
  *record.mutable_write() = std::move(write);
  RETURN_IF_ERROR(AppendRecord(key, record, fence));
  entry.dirty = true;
  absl::StatusOr<CommitResult> applied = std::move(apply)();
  if (applied.ok()) {
    for (const std::string& id : record.write().ids()) entry.ids.Add(id);
  }
  return applied;
}

absl::Status MemoryDurability::AppendPin(const std::string& tenant, const std::string& name,
                                         const Store* store, bool pinned, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) return Gone(key);
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store.get() != store || store == nullptr) return Gone(key);
  adapt::v1::WalRecord record;
  record.set_incarnation(entry->incarnation);
  record.mutable_pin()->set_pinned(pinned);
  RETURN_IF_ERROR(AppendRecord(key, record, fence));
  entry->pinned = pinned;
  entry->dirty = true;
  return absl::OkStatus();
}

absl::Status MemoryDurability::AppendCompile(const std::string& tenant, const std::string& name,
                                             const Store* store,
                                             const adapt::v1::CompileRequest& request,
                                             const BaseReadout* base, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) return absl::OkStatus();
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store.get() != store || store == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(AppendRecord(key, CompileRecord(entry->incarnation, request, base), fence));
  entry->dirty = true;
  return absl::OkStatus();
}

absl::Status MemoryDurability::AppendAutoCompile(const Store* store, std::string* tenant,
                                                 std::string* name) {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
  }
  std::shared_ptr<Entry> found;
  for (const auto& entry : entries) {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->store.get() == store) {
      found = entry;
      break;
    }
  }
  if (tenant != nullptr) *tenant = found != nullptr ? found->tenant : "";
  if (name != nullptr) *name = found != nullptr ? found->name : "";
  if (found == nullptr) return absl::OkStatus();
  return AppendCompile(found->tenant, found->name, store, adapt::v1::CompileRequest(), nullptr,
                       CurrentFence(found->tenant, found->name));
}

bool MemoryDurability::Applied(const std::string& tenant, const std::string& name,
                               const Store* store, const std::string& id) const {
  std::shared_ptr<Entry> entry = FindLoaded(StoreKey(tenant, name), store);
  if (entry == nullptr) return false;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.Contains(id);
}

std::vector<std::string> MemoryDurability::RememberedIds(const std::string& tenant,
                                                         const std::string& name,
                                                         const Store* store) const {
  std::shared_ptr<Entry> entry = FindLoaded(StoreKey(tenant, name), store);
  if (entry == nullptr) return {};
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.List();
}

uint64_t MemoryDurability::RememberedBytes(const std::string& tenant,
                                           const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->store != nullptr ? entry->ids.bytes() : 0;
}

absl::Status MemoryDurability::StoreState(const std::string& key, Entry& entry) {
  const std::vector<std::string> ids = entry.ids.List();
  const uint64_t incarnation = entry.incarnation;
  absl::StatusOr<std::string> file =
      EncodeStoreFile(*entry.store, [&](adapt::v1::StoreSnapshot& header) {
        adapt::v1::DurableMark* mark = header.mutable_durable();
        mark->set_incarnation(incarnation);
        mark->mutable_applied_ids()->Add(ids.begin(), ids.end());
      });
  if (!file.ok()) {
    entry.checkpoint_error = absl::StrCat("checkpoint: ", file.status().message());
    return file.status();
  }
  absl::MutexLock lock(&disk_->mu_);
  MemoryDisk::Log& log = disk_->logs_[key];
  if (log.holder != server_) {
    return OwnershipLostError(key, absl::StrCat("server ", log.holder, " holds it"));
  }
  log.state = *std::move(file);
  log.records.clear();
  log.pinned = entry.pinned;
  entry.dirty = false;
  entry.checkpoint_error.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Store>> MemoryDurability::Load(
    const std::string& tenant, const std::string& name,
    const std::function<bool(const Store&)>& keep_detached) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " does not exist"));
  }
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store != nullptr) return entry->store;
  MemoryDisk::Log log;
  {
    absl::MutexLock lock(&disk_->mu_);
    log = disk_->logs_[key];
  }
  Rebuilt rebuilt = Rebuild(key, log);
  if (rebuilt.store == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " does not exist"));
  }
  if (keep_detached && StoreFailure(*rebuilt.store).ok() && keep_detached(*rebuilt.store)) {
    return rebuilt.store;
  }
  entry->store = rebuilt.store;
  for (const std::string& id : rebuilt.ids) entry->ids.Add(id);
  return entry->store;
}

absl::StatusOr<std::shared_ptr<const LinearReadout>> MemoryDurability::LoadReadout(
    const std::string& tenant, const std::string& name) {
  // No read-out is stored beside the state: a warm load reads the state.
  if (Find(StoreKey(tenant, name)) == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", tenant, "/", name, " does not exist"));
  }
  return nullptr;
}

absl::StatusOr<bool> MemoryDurability::Unload(const std::string& tenant, const std::string& name,
                                              const Store* store) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) return false;
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store.get() != store) return false;
  if (entry->dirty) RETURN_IF_ERROR(StoreState(key, *entry));
  entry->store = nullptr;
  entry->ids = AppliedIds(options_.max_ids_per_store);
  return true;
}

absl::Status MemoryDurability::Checkpoint() {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> entries;
  {
    absl::MutexLock lock(&mu_);
    entries.assign(entries_.begin(), entries_.end());
  }
  std::vector<std::string> failures;
  for (const auto& [key, entry] : entries) {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->store == nullptr || !entry->dirty || !StoreFailure(*entry->store).ok()) continue;
    if (absl::Status stored = StoreState(key, *entry); !stored.ok()) {
      failures.push_back(absl::StrCat(key, ": ", stored.message()));
    }
  }
  {
    // Deleted stores leave the disk.
    absl::MutexLock lock(&disk_->mu_);
    for (auto it = disk_->logs_.begin(); it != disk_->logs_.end();) {
      const bool gone = !it->second.live && it->second.holder == server_;
      it = gone ? disk_->logs_.erase(it) : std::next(it);
    }
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("checkpoint: ", failures.size(),
                                          " stores could not be stored: ", failures.front()));
}

std::string MemoryDurability::CheckpointError(const std::string& tenant,
                                              const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return "";
  absl::MutexLock entry_lock(&entry->mu);
  return entry->checkpoint_error;
}

}  // namespace adaptd
