#include "server/persistence/journal.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/file_util.h"
#include "server/persistence/replay.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"
#include "server/stores/stored_readout.h"

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
  out.set_restart_sequence(batch.restart_sequence);
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
  out.restart_sequence = batch.restart_sequence();
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

absl::Status Journal::RestoreState(const std::string& where, const std::string& file,
                                   uint64_t incarnation, kernels::Backend* backend, Restored* out) {
  absl::StatusOr<DecodedSnapshot> decoded_file = DecodeSnapshotState(file);
  if (!decoded_file.ok()) {
    return absl::DataLossError(absl::StrCat(where, ": ", decoded_file.status().message()));
  }
  adapt::v1::StoreSnapshot* decoded = &decoded_file->header;
  out->spec = decoded->spec();
  if (!decoded->has_durable() || decoded->durable().incarnation() != incarnation) {
    return absl::DataLossError(absl::StrCat(where, ": its durable mark does not match"));
  }
  out->lsn = decoded->durable().lsn();
  out->ids.assign(decoded->durable().applied_ids().begin(), decoded->durable().applied_ids().end());
  decoded->clear_durable();
  absl::StatusOr<std::unique_ptr<Store>> restored =
      RestoreStore(*decoded, decoded_file->arrays, backend);
  if (!restored.ok()) {
    return absl::DataLossError(absl::StrCat(where, ": ", restored.status().message()));
  }
  out->store = *std::move(restored);
  return absl::OkStatus();
}

absl::Status Journal::Gone(const std::string& key) {
  return absl::NotFoundError(absl::StrCat("store ", key, " does not exist"));
}

absl::StatusOr<std::shared_ptr<Journal::Entry>> Journal::Stored(
    const std::string& key, adapt::v1::CatalogEntry* catalog,
    std::shared_ptr<Store>* loaded) const {
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr) return Gone(key);
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->deleted) return Gone(key);
  *loaded = entry->store;
  if (*loaded == nullptr && !catalog->ParseFromString(entry->catalog)) {
    return absl::DataLossError(
        absl::StrCat("store ", key, ": its catalog entry in the state database does not parse"));
  }
  return entry;
}

absl::StatusOr<std::shared_ptr<Store>> Journal::Load(
    const std::string& tenant, const std::string& name,
    const std::function<bool(const Store&)>& keep_detached) {
  const std::string key = StoreKey(tenant, name);
  adapt::v1::CatalogEntry catalog;
  std::shared_ptr<Store> loaded;
  ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, Stored(key, &catalog, &loaded));
  if (loaded != nullptr) return loaded;
  const absl::Status gone = Gone(key);
  absl::StatusOr<std::string> file = state_db_->ReadState(key, catalog);
  if (!file.ok() && file.status().code() != absl::StatusCode::kDataLoss) return file.status();
  Restored restored;
  absl::Status status = file.ok() ? RestoreState(absl::StrCat("the stored state of ", key), *file,
                                                 catalog.incarnation(), backend_, &restored)
                                  : file.status();
  std::shared_ptr<Store> store;
  if (status.ok()) {
    store = std::move(restored.store);
  } else {
    // The state on disk is damaged: the store fails, as it would at start-up, and stays so.
    std::fprintf(stderr, "adaptd: store %s failed to load: %s\n", key.c_str(),
                 std::string(status.message()).c_str());
    catalog.set_failure(std::string(status.message()));
    if (auto writer = state_db_->BeginWrite(); writer.ok()) {
      if (writer->PutCatalog(key, catalog).ok()) (void)writer->Commit();
    }
    store = std::make_shared<FailedStore>(catalog.spec(), catalog.failure());
  }
  if (status.ok() && keep_detached && keep_detached(*store)) return store;
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->deleted) return gone;
  if (entry->store != nullptr) return entry->store;
  entry->store = store;
  if (status.ok()) {
    for (const auto& id : restored.ids) entry->ids.Add(id);
  }
  return store;
}

absl::StatusOr<std::shared_ptr<const LinearReadout>> Journal::LoadReadout(const std::string& tenant,
                                                                          const std::string& name) {
  const std::string key = StoreKey(tenant, name);
  adapt::v1::CatalogEntry catalog;
  std::shared_ptr<Store> loaded;
  RETURN_IF_ERROR(Stored(key, &catalog, &loaded).status());
  // Loaded (or failed): the store itself answers. No read-out stored: the state does.
  if (loaded != nullptr || catalog.readout_bytes() == 0 || !catalog.failure().empty()) {
    return nullptr;
  }
  absl::StatusOr<std::string> record = state_db_->ReadReadout(key, catalog);
  if (!record.ok() && record.status().code() != absl::StatusCode::kDataLoss) {
    return record.status();
  }
  absl::StatusOr<std::shared_ptr<const LinearReadout>> readout =
      record.ok() ? DecodeReadout(*record, catalog.spec(), absl::StrCat("the read-out of ", key))
                  : absl::StatusOr<std::shared_ptr<const LinearReadout>>(record.status());
  if (!readout.ok()) {
    // The read-out is a copy of what the state holds: the state, read whole, still answers.
    std::fprintf(stderr, "adaptd: store %s: %s; its state is read instead\n", key.c_str(),
                 std::string(readout.status().message()).c_str());
    return nullptr;
  }
  return readout;
}

absl::StatusOr<bool> Journal::Unload(const std::string& tenant, const std::string& name,
                                     const Store* store) {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr) return false;
  bool dirty = false;
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted || entry->store.get() != store) return false;
    dirty = entry->dirty_since != 0;
  }
  if (dirty) RETURN_IF_ERROR(StoreOne(entry));
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->deleted || entry->store.get() != store || entry->dirty_since != 0 ||
      !entry->in_flight.empty()) {
    return false;
  }
  entry->store = nullptr;
  entry->ids = AppliedIds(options_.max_ids_per_store);
  return true;
}

absl::Status Journal::StoreOne(const std::shared_ptr<Entry>& entry) {
  ASSIGN_OR_RETURN(StateDb::Writer writer, state_db_->BeginWrite());
  Written written{entry};
  std::vector<std::string> failures;
  absl::StatusOr<bool> taken = TakeState(entry, &writer, &written, &failures);
  std::vector<Written> group;
  if (!taken.ok() || *taken) group.push_back(std::move(written));
  if (!taken.ok()) return CommitGroup(&writer, 0, &group, taken.status());
  if (!failures.empty()) return absl::InternalError(failures.front());
  if (*taken) RETURN_IF_ERROR(CommitGroup(&writer, group.front().lsn, &group));
  return absl::OkStatus();
}

absl::Status Journal::StoreImported(const std::string& tenant, const std::string& name,
                                    const Store* store,
                                    const std::vector<std::string>& applied_ids) {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  bool ours = false;
  if (entry != nullptr) {
    absl::MutexLock entry_lock(&entry->mu);
    ours = !entry->deleted && entry->store.get() == store;
    if (ours) {
      for (const std::string& id : applied_ids) entry->ids.Add(id);
    }
  }
  if (!ours) {
    return absl::InternalError(
        absl::StrCat("store ", tenant, "/", name, " is not the one just imported"));
  }
  return StoreOne(entry);
}

std::vector<std::string> Journal::RememberedIds(const std::string& tenant, const std::string& name,
                                                const Store* store) const {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr) return {};
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->deleted || entry->store.get() != store) return {};
  return entry->ids.List();
}

uint64_t Journal::RememberedBytes(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.bytes();
}

std::string Journal::CheckpointError(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr) return "";
  absl::MutexLock entry_lock(&entry->mu);
  return entry->checkpoint_error;
}

uint64_t Journal::AppendCreate(const std::string& tenant, const std::string& name,
                               std::shared_ptr<Store> store, const adapt::v1::StoreSpec& spec,
                               bool imported) {
  auto entry = std::make_shared<Entry>(options_.max_ids_per_store);
  entry->tenant = tenant;
  entry->name = name;
  entry->store = std::move(store);
  adapt::v1::WalRecord record;
  *(imported ? record.mutable_import_stored() : record.mutable_create()) = spec;
  const std::string key = StoreKey(tenant, name);
  absl::MutexLock entry_lock(&entry->mu);
  entry->pinned = spec.pinned();
  {
    absl::MutexLock lock(&mu_);
    // 63 random bits under the top one: no two stores of a name share one (but by a chance
    // of 2^-63), and none equals an LSN, the incarnation of a store created before ids.
    entry->incarnation = uint64_t{1} << 63 | absl::Uniform<uint64_t>(incarnations_);
    entries_[key] = entry;
  }
  record.set_incarnation(entry->incarnation);
  const uint64_t lsn = wal_->Append(key, record.SerializeAsString());
  entry->create_lsn = lsn;
  entry->last_lsn = lsn;
  entry->MarkDirty(lsn);
  return lsn;
}

uint64_t Journal::AppendDelete(const std::string& tenant, const std::string& name) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr) return 0;
  uint64_t lsn = 0, create_lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    entry->deleted = true;
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    record.mutable_delete_();
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
    create_lsn = entry->create_lsn;
  }
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second == entry) entries_.erase(it);
  pending_deletes_.push_back({key, create_lsn, lsn});
  return lsn;
}

uint64_t Journal::Incarnation(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = FindEntry(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->deleted ? 0 : entry->incarnation;
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
    entry->MarkDirty(lsn);
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
    entry->in_flight.erase(entry->in_flight.begin());
  }
  if (durable.ok()) MaybeCheckpointLater();
  return result;
}

absl::Status Journal::LogCompile(const std::string& tenant, const std::string& name,
                                 const Store* store, const adapt::v1::CompileRequest& request,
                                 const BaseReadout* base) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr || entry->store.get() != store) return absl::OkStatus();
  uint64_t lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted) return absl::OkStatus();
    const adapt::v1::WalRecord record = CompileRecord(entry->incarnation, request, base);
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
    entry->MarkDirty(lsn);
  }
  return WaitDurable(lsn);
}

absl::Status Journal::LogPin(const std::string& tenant, const std::string& name, const Store* store,
                             bool pinned) {
  const std::string key = StoreKey(tenant, name);
  const absl::Status gone = absl::NotFoundError(
      absl::StrCat("store ", tenant, "/", name, " was deleted during the call"));
  std::shared_ptr<Entry> entry = FindEntry(key);
  if (entry == nullptr || entry->store.get() != store) return gone;
  uint64_t lsn = 0;
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->deleted) return gone;
    adapt::v1::WalRecord record;
    record.set_incarnation(entry->incarnation);
    record.mutable_pin()->set_pinned(pinned);
    lsn = wal_->Append(key, record.SerializeAsString());
    entry->last_lsn = lsn;
    entry->MarkDirty(lsn);
    entry->pinned = pinned;
  }
  return WaitDurable(lsn);
}

absl::Status Journal::LogAutoCompile(const Store* store, std::string* tenant_out,
                                     std::string* name_out) {
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
  if (tenant_out != nullptr) *tenant_out = tenant;
  if (name_out != nullptr) *name_out = name;
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

absl::StatusOr<bool> Journal::TakeState(const std::shared_ptr<Entry>& entry,
                                        StateDb::Writer* writer, Written* written,
                                        std::vector<std::string>* failures) {
  const std::string key = StoreKey(entry->tenant, entry->name);
  adapt::v1::CatalogEntry& catalog = written->catalog;
  absl::StatusOr<std::string> file = absl::UnknownError("not taken");
  std::string readout;
  {
    absl::MutexLock entry_lock(&entry->mu);
    // A store not loaded is clean: its stored state is current.
    if (entry->deleted || entry->dirty_since == 0 || entry->store == nullptr ||
        !StoreFailure(*entry->store).ok()) {
      return false;
    }
    // Under the log lock, the state and the LSN it covers agree: writes apply under it.
    adapt::v1::DurableMark mark;
    mark.set_tenant(entry->tenant);
    mark.set_store(entry->name);
    mark.set_incarnation(entry->incarnation);
    mark.set_lsn(entry->SnapshotLsn());
    for (auto& id : entry->ids.List()) mark.add_applied_ids(std::move(id));
    adapt::v1::StoreSpec spec;
    file = EncodeStoreFile(*entry->store, [&](adapt::v1::StoreSnapshot& header) {
      *header.mutable_durable() = mark;
      spec = header.spec();
    });
    // The published read-out goes beside the state, for reads of the store once it is cold
    // (LoadReadout): it is the state's, taken under the same lock.
    if (file.ok()) {
      const StoreKind* kind = StoreKinds::Global().Find(spec.kind());
      std::shared_ptr<const LinearReadout> published =
          kind != nullptr && kind->warm ? entry->store->Readout() : nullptr;
      if (published != nullptr) readout = EncodeReadout(*published);
    }
    if (file.ok()) {
      written->lsn = mark.lsn();
      *catalog.mutable_spec() = std::move(spec);
      catalog.set_incarnation(entry->incarnation);
      catalog.set_create_lsn(entry->create_lsn);
      catalog.set_lsn(mark.lsn());
      catalog.set_pinned(entry->pinned);
      entry->store->Describe(catalog.mutable_info());
    }
    if (!file.ok()) {
      entry->checkpoint_error = absl::StrCat("checkpoint: ", file.status().message());
      failures->push_back(absl::StrCat(key, ": ", file.status().message()));
      return false;
    }
  }
  RETURN_IF_ERROR(writer->PutStore(key, &catalog, *file, readout));
  return true;
}

absl::Status Journal::CommitGroup(StateDb::Writer* writer, uint64_t covered,
                                  std::vector<Written>* group, absl::Status failed) {
  absl::Status status = std::move(failed);
  // A stored state never holds a change whose record could still be lost.
  if (status.ok()) status = wal_->WaitDurable(covered);
  if (status.ok()) status = writer->Commit();
  writer->Abort();
  if (options_.after_state_commit) options_.after_state_commit();
  const uint64_t sequence = writer->sequence();
  for (const Written& written : *group) {
    absl::MutexLock entry_lock(&written.entry->mu);
    // A later write of this store (an eviction's, while this group waited) is what is stored.
    if (written.entry->stored_by > sequence) continue;
    if (!status.ok()) {
      written.entry->checkpoint_error = absl::StrCat("checkpoint: ", status.message());
      continue;
    }
    written.entry->stored_by = sequence;
    written.entry->checkpoint_error.clear();
    adapt::v1::CatalogEntry bare = written.catalog;
    bare.clear_info();
    written.entry->catalog = bare.SerializeAsString();
    // Records after the stored LSN (writes logged meanwhile) are still only in the log.
    written.entry->dirty_since =
        written.entry->last_lsn > written.lsn ? written.lsn + 1 : uint64_t{0};
  }
  group->clear();
  return status;
}

uint64_t Journal::KeepFrom(uint64_t first) const {
  std::vector<std::shared_ptr<Entry>> entries;
  uint64_t keep_from = first;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
    for (const PendingDelete& d : pending_deletes_) keep_from = std::min(keep_from, d.lsn);
  }
  for (const auto& entry : entries) {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->dirty_since != 0) keep_from = std::min(keep_from, entry->dirty_since);
    if (!entry->in_flight.empty()) keep_from = std::min(keep_from, entry->in_flight.front());
  }
  return keep_from;
}

absl::Status Journal::Checkpoint() {
  absl::MutexLock checkpoint_lock(&checkpoint_mu_);
  ASSIGN_OR_RETURN(const uint64_t first, wal_->Rotate());
  std::vector<std::shared_ptr<Entry>> entries;
  std::vector<PendingDelete> deletes;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) entries.push_back(entry);
    deletes = pending_deletes_;
  }
  std::vector<std::string> failures;
  uint64_t written = 0;
  absl::Status db_status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(StateDb::Writer writer, state_db_->BeginWrite());
    for (const PendingDelete& d : deletes) RETURN_IF_ERROR(writer.Delete(d.key, d.create_lsn));
    std::vector<Written> group;
    uint64_t covered = 0;
    for (const auto& entry : entries) {
      Written taking{entry};
      absl::StatusOr<bool> taken = TakeState(entry, &writer, &taking, &failures);
      if (!taken.ok()) {  // the state database failed: this group is lost, stop
        group.push_back(std::move(taking));
        return CommitGroup(&writer, 0, &group, taken.status());
      }
      if (!*taken) continue;
      covered = std::max(covered, taking.lsn);
      group.push_back(std::move(taking));
      ++written;
      if (group.size() >= options_.checkpoint_group || writer.bytes() >= (uint64_t{64} << 20)) {
        RETURN_IF_ERROR(CommitGroup(&writer, covered, &group));
        ASSIGN_OR_RETURN(writer, state_db_->BeginWrite());
      }
    }
    RETURN_IF_ERROR(CommitGroup(&writer, covered, &group));
    // The deletes are committed (with the first group): their records may go.
    absl::MutexLock lock(&mu_);
    pending_deletes_.erase(pending_deletes_.begin(), pending_deletes_.begin() + deletes.size());
    return absl::OkStatus();
  }();
  if (options_.on_checkpoint) {
    options_.on_checkpoint(written, failures.size() + (db_status.ok() ? 0 : 1));
  }
  // Whatever failed holds back only the log after its own last checkpoint.
  RETURN_IF_ERROR(wal_->RemoveSegmentsBefore(KeepFrom(first)));
  if (!db_status.ok()) return db_status;
  if (!failures.empty()) {
    return absl::InternalError(absl::StrCat(
        "checkpoint: the state of ", failures.size(),
        " store(s) could not be written (their log is kept): ", absl::StrJoin(failures, "; ")));
  }
  return absl::OkStatus();
}

}  // namespace adaptd
