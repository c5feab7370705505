#include "server/persistence/journal.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "server/core/snapshot_file.h"
#include "server/core/status_macros.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/file_util.h"

namespace adaptd {

std::string StoreKey(const std::string& tenant, const std::string& name) {
  return absl::StrCat(tenant, "/", name);
}

adapt::v1::WalBatch ToWalBatch(const ExampleBatch& batch) {
  adapt::v1::WalBatch out;
  out.set_rows(static_cast<uint32_t>(batch.rows));
  out.set_dim(static_cast<uint32_t>(batch.dim));
  out.mutable_keys()->Add(batch.keys.begin(), batch.keys.end());
  for (const auto& label : batch.labels) out.add_labels(label);
  out.mutable_targets()->Add(batch.targets.begin(), batch.targets.end());
  out.set_sequence(batch.sequence);
  out.set_passes(static_cast<uint32_t>(batch.passes));
  return out;
}

ExampleBatch FromWalBatch(const adapt::v1::WalBatch& batch) {
  ExampleBatch out;
  out.rows = batch.rows();
  out.dim = batch.dim();
  out.keys.assign(batch.keys().begin(), batch.keys().end());
  out.labels.assign(batch.labels().begin(), batch.labels().end());
  out.targets.assign(batch.targets().begin(), batch.targets().end());
  out.sequence = batch.sequence();
  out.passes = static_cast<int>(std::max<uint32_t>(1, batch.passes()));
  return out;
}

Journal::~Journal() { Close(); }

void Journal::Close() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    checkpoint_cv_.SignalAll();
  }
  if (checkpointer_.joinable()) checkpointer_.join();
  if (wal_ != nullptr) wal_->Close();
}

std::shared_ptr<Journal::Entry> Journal::FindEntry(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

std::string Journal::SnapshotPath(const Entry& entry, const char* suffix) const {
  return (std::filesystem::path(options_.data_dir) / "snapshots" / entry.tenant /
          absl::StrCat(entry.name, "~", entry.incarnation, suffix))
      .string();
}

uint64_t Journal::AppendCreate(const std::string& tenant, const std::string& name,
                               std::shared_ptr<Store> store, const adapt::v1::StoreSpec& spec,
                               const adapt::v1::StoreSnapshot* imported) {
  auto entry = std::make_shared<Entry>(options_.max_ids_per_store);
  entry->tenant = tenant;
  entry->name = name;
  entry->store = std::move(store);
  adapt::v1::WalRecord record;
  if (imported != nullptr) {
    *record.mutable_import() = *imported;
    record.mutable_import()->clear_durable();
  } else {
    *record.mutable_create() = spec;
  }
  const std::string key = StoreKey(tenant, name);
  absl::MutexLock entry_lock(&entry->mu);
  {
    absl::MutexLock lock(&mu_);
    entries_[key] = entry;
  }
  const uint64_t lsn = wal_->Append(key, record.SerializeAsString());
  entry->incarnation = lsn;
  entry->last_lsn = lsn;
  return lsn;
}

uint64_t Journal::AppendDelete(const std::string& tenant, const std::string& name) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr) return 0;
  uint64_t lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    entry->deleted = true;
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    record.mutable_delete_();
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
    // Best effort: recovery removes the files of a deleted store too.
    (void)env_->RemoveFile(SnapshotPath(*entry, ".snap"));
    (void)env_->RemoveFile(SnapshotPath(*entry, ".failed"));
  }
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second == entry) entries_.erase(it);
  return lsn;
}

absl::Status Journal::WaitDurable(uint64_t lsn) {
  if (lsn == 0) return absl::OkStatus();
  RETURN_IF_ERROR(wal_->WaitDurable(lsn));
  MaybeCheckpointLater();
  return absl::OkStatus();
}

bool Journal::Applied(const std::string& tenant, const std::string& name, const Store* store,
                      const std::string& id) const {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr || entry->store.get() != store) return false;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.Contains(id);
}

absl::StatusOr<CommitResult> Journal::Commit(
    const std::string& tenant, const std::string& name, const Store* store,
    adapt::v1::WalWrite write, absl::FunctionRef<absl::StatusOr<CommitResult>()> commit) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindEntry(key);
  const absl::Status gone = absl::NotFoundError(
      absl::StrCat("store ", tenant, "/", name, " was deleted during the call"));
  if (entry == nullptr || entry->store.get() != store) return gone;
  const std::vector<std::string> ids(write.ids().begin(), write.ids().end());
  uint64_t lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted) return gone;
    for (const auto& id : ids) {
      if (entry->ids.Contains(id) || entry->pending_ids.contains(id)) {
        return absl::AbortedError(absl::StrCat("examples: id '", id,
                                               "' was applied by a concurrent call; resend the "
                                               "call to apply the others"));
      }
    }
    entry->pending_ids.insert(ids.begin(), ids.end());
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    *record.mutable_write() = std::move(write);
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
    entry->in_flight.push_back(lsn);
  }
  // Waiting without the log lock lets the store's next writes join the same group commit.
  const absl::Status durable = wal_->WaitDurable(lsn);
  absl::StatusOr<CommitResult> result = absl::UnknownError("not committed");
  {
    absl::MutexLock entry_lock(&entry->mu);
    // Writes apply in log order: the one logged before this one goes first. Each earlier
    // write's wait ends no later than this one's (the log syncs in LSN order), so it comes.
    const auto my_turn = [&entry, lsn]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry->mu) {
      return entry->in_flight.front() == lsn;
    };
    entry->mu.Await(absl::Condition(&my_turn));
    if (!durable.ok()) {
      result = durable;
    } else if (entry->deleted) {
      result = gone;  // replay applies the record, then the delete that follows it
    } else {
      result = commit();
      if (result.ok()) {
        for (const auto& id : ids) entry->ids.Add(id);
      } else {
        std::fprintf(stderr, "adaptd: %s: log record LSN %llu is not applied: %s\n", key.c_str(),
                     static_cast<unsigned long long>(lsn),
                     std::string(result.status().message()).c_str());
      }
    }
    for (const auto& id : ids) entry->pending_ids.erase(id);
    entry->in_flight.pop_front();
  }
  if (durable.ok()) MaybeCheckpointLater();
  return result;
}

absl::Status Journal::LogCompile(const std::string& tenant, const std::string& name,
                                 const Store* store, const adapt::v1::CompileRequest& request) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr || entry->store.get() != store) return absl::OkStatus();
  uint64_t lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted) return absl::OkStatus();
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    *record.mutable_compile() = request;
    record.mutable_compile()->clear_tenant();
    record.mutable_compile()->clear_store();
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
  }
  return WaitDurable(lsn);
}

absl::Status Journal::LogAutoCompile(const Store* store) {
  std::string tenant, name;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) {
      if (entry->store.get() == store) {
        tenant = entry->tenant;
        name = entry->name;
        break;
      }
    }
  }
  if (name.empty()) return absl::OkStatus();
  return LogCompile(tenant, name, store, adapt::v1::CompileRequest());
}

void Journal::MaybeCheckpointLater() {
  if (options_.snapshot_log_bytes == 0 || wal_->segment_bytes() < options_.snapshot_log_bytes) {
    return;
  }
  absl::MutexLock lock(&mu_);
  checkpoint_wanted_ = true;
  checkpoint_cv_.Signal();
}

void Journal::CheckpointLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (!checkpoint_wanted_ && !closing_) checkpoint_cv_.Wait(&mu_);
      if (closing_) return;
      checkpoint_wanted_ = false;
    }
    absl::Status status = Checkpoint();
    if (!status.ok()) {
      std::fprintf(stderr, "adaptd: checkpoint failed (the log is kept): %s\n",
                   std::string(status.message()).c_str());
    }
  }
}

absl::Status Journal::Checkpoint() {
  absl::MutexLock checkpoint_lock(&checkpoint_mu_);
  ASSIGN_OR_RETURN(const uint64_t first, wal_->Rotate());
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
  }
  struct Taken {
    std::shared_ptr<Entry> entry;
    adapt::v1::StoreSnapshot snapshot;
  };
  std::vector<Taken> taken;
  uint64_t covered = 0;
  // The log is kept from the first write that is logged but not yet in its store's state:
  // the snapshot leaves it to replay, so its record must stay.
  uint64_t keep_from = first;
  for (const auto& entry : entries) {
    absl::MutexLock entry_lock(&entry->mu);
    if (!entry->in_flight.empty()) keep_from = std::min(keep_from, entry->in_flight.front());
    if (entry->deleted || !StoreFailure(*entry->store).ok()) continue;
    auto snapshot = entry->store->Snapshot();
    if (!snapshot.ok()) {
      return absl::Status(snapshot.status().code(),
                          absl::StrCat("snapshot of ", entry->tenant, "/", entry->name, ": ",
                                       snapshot.status().message()));
    }
    adapt::v1::DurableMark* mark = snapshot->mutable_durable();
    mark->set_tenant(entry->tenant);
    mark->set_store(entry->name);
    mark->set_incarnation(entry->incarnation);
    mark->set_lsn(entry->SnapshotLsn());
    for (auto& id : entry->ids.List()) mark->add_applied_ids(std::move(id));
    covered = std::max(covered, mark->lsn());
    taken.push_back({entry, *std::move(snapshot)});
  }
  // A snapshot never holds a change whose record could still be lost.
  RETURN_IF_ERROR(wal_->WaitDurable(covered));
  for (auto& [entry, snapshot] : taken) {
    ASSIGN_OR_RETURN(std::string file, EncodeSnapshotFile(snapshot));
    const std::string path = SnapshotPath(*entry, ".snap");
    absl::Status written = env_->CreateDirs(ParentDir(path));
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted) continue;
    if (written.ok()) written = WriteFileAtomically(env_, path, file, options_.sync);
    if (!written.ok()) {
      return absl::Status(written.code(), absl::StrCat("snapshot of ", entry->tenant, "/",
                                                       entry->name, ": ", written.message()));
    }
  }
  return wal_->RemoveSegmentsBefore(keep_from);
}

}  // namespace adaptd
