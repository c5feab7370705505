// EtcdDurability's states: stores rebuilt from their stored state (an object) and their log
// (etcd), stored states written as objects and the log they cover trimmed, cold loads.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"
#include "server/persistence/failed_store.h"
#include "server/persistence/replay.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"
#include "server/stores/stored_readout.h"
#include "zlib.h"

namespace adaptd {
namespace {

// Whether a fenced transaction that failed with `status` may still have applied: etcd refused
// it in its answer (the fence or the entry moved: ownership lost or FAILED_PRECONDITION; its
// space spent: RESOURCE_EXHAUSTED) or it never went; any other failure (no answer) may have
// applied.
bool StateTxnMayHaveApplied(const absl::Status& status) {
  return !(IsOwnershipLost(status) || absl::IsFailedPrecondition(status) ||
           absl::IsResourceExhausted(status));
}

uint32_t Crc32(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  size_t at = 0;
  while (at < bytes.size()) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(bytes.size() - at, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), chunk);
    at += chunk;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

absl::StatusOr<adapt::v1::RemoteObject> EtcdDurability::PutObject(const std::string& object_key,
                                                                  const std::string& bytes) {
  const absl::Status put = objects_->Put(object_key, bytes);
  if (options_.hooks.on_object) {
    const std::string what = absl::EndsWith(object_key, ".state")     ? "state"
                             : absl::EndsWith(object_key, ".readout") ? "readout"
                                                                      : "payload";
    options_.hooks.on_object(what, bytes.size(), put.ok());
  }
  Count(put, "s3");
  RETURN_IF_ERROR(put);
  adapt::v1::RemoteObject object;
  object.set_key(object_key);
  object.set_size(bytes.size());
  object.set_crc32(Crc32(bytes));
  return object;
}

absl::StatusOr<std::string> ReadStoredObject(ObjectStore& objects,
                                             const adapt::v1::RemoteObject& object) {
  absl::StatusOr<std::string> bytes = objects.Get(object.key());
  if (absl::IsNotFound(bytes.status())) {
    return absl::DataLossError(
        absl::StrCat("object ", objects.Describe(object.key()), " is missing"));
  }
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() != object.size() || Crc32(*bytes) != object.crc32()) {
    return absl::DataLossError(absl::StrCat("object ", objects.Describe(object.key()),
                                            " is corrupt (size or CRC-32 differs)"));
  }
  return bytes;
}

absl::StatusOr<adapt::v1::WalRecord> ReadStoredRecord(
    ObjectStore& objects, const std::string& log_key, const std::string& value,
    const std::function<void(const absl::Status&)>& on_read) {
  const auto read = [&](const adapt::v1::RemoteObject& object) {
    absl::StatusOr<std::string> bytes = ReadStoredObject(objects, object);
    if (on_read) on_read(bytes.status());
    return bytes;
  };
  adapt::v1::RemoteLogRecord stored;
  if (!stored.ParseFromString(value)) {
    return absl::DataLossError(absl::StrCat("etcd key ", log_key, " does not hold a log record"));
  }
  std::string bytes;
  if (stored.has_payload()) {
    ASSIGN_OR_RETURN(bytes, read(stored.payload()));
  } else {
    bytes = stored.record();
  }
  adapt::v1::WalRecord record;
  if (!record.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("the record of etcd key ", log_key, " is corrupt"));
  }
  if (stored.has_base_readout()) {
    ASSIGN_OR_RETURN(std::string readout, read(stored.base_readout()));
    adapt::v1::WalBaseCompile copied;
    if (!copied.ParseFromString(readout)) {
      return absl::DataLossError(absl::StrCat("object ",
                                              objects.Describe(stored.base_readout().key()),
                                              " does not hold a base's read-out"));
    }
    adapt::v1::WalBaseCompile* base = record.mutable_base_compile();
    *base->mutable_labels() = copied.labels();
    *base->mutable_s() = copied.s();
    base->set_columns(copied.columns());
    base->set_base_version(copied.base_version());
  }
  return record;
}

absl::StatusOr<std::string> EtcdDurability::GetObject(const adapt::v1::RemoteObject& object) {
  absl::StatusOr<std::string> bytes = ReadStoredObject(*objects_, object);
  Count(bytes.status(), "s3");
  return bytes;
}

absl::StatusOr<adapt::v1::WalRecord> EtcdDurability::ReadRecord(const std::string& log_key,
                                                                const std::string& value) {
  return ReadStoredRecord(*objects_, log_key, value,
                          [this](const absl::Status& read) { Count(read, "s3"); });
}

absl::StatusOr<EtcdDurability::Rebuilt> EtcdDurability::Rebuild(
    const std::string& key, const adapt::v1::RemoteStoreEntry& meta) {
  const absl::Time start = absl::Now();
  Rebuilt out;
  const auto failed = [&](const absl::Status& why) {
    std::fprintf(stderr, "adaptd: store %s failed to recover: %s\n", key.c_str(),
                 std::string(why.message()).c_str());
    out.store = std::make_shared<FailedStore>(meta.spec(), std::string(why.message()));
    return out;
  };
  // The state to start from: the cache's when it is at least as recent as the object's (the log
  // after it is then still in etcd), else the object's.
  std::optional<std::string> cached;
  uint64_t cached_seq = 0;
  if (cache_ != nullptr && meta.has_snapshot()) {
    absl::StatusOr<adapt::v1::CatalogEntry> row = cache_->ReadCatalog(key);
    if (row.ok() && row->incarnation() == meta.incarnation() &&
        row->lsn() >= meta.snapshot().seq()) {
      absl::StatusOr<std::string> state = cache_->ReadState(key, *row);
      if (state.ok()) {
        cached = *std::move(state);
        cached_seq = row->lsn();
      }
    }
  }
  if (meta.has_snapshot()) {
    absl::StatusOr<std::string> file =
        cached.has_value() ? *std::move(cached) : GetObject(meta.snapshot().state());
    if (absl::IsDataLoss(file.status())) return failed(file.status());
    if (!file.ok()) return file.status();
    absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(*file);
    if (!decoded.ok()) return failed(decoded.status());
    out.ids.assign(decoded->header.durable().applied_ids().begin(),
                   decoded->header.durable().applied_ids().end());
    out.last_seq = cached_seq > 0 ? cached_seq : meta.snapshot().seq();
    out.from_cache = cached_seq > 0;
    decoded->header.clear_durable();
    absl::StatusOr<std::unique_ptr<Store>> restored =
        RestoreStore(decoded->header, decoded->arrays, backend_);
    if (!restored.ok()) return failed(restored.status());
    out.store = *std::move(restored);
  } else {
    adapt::v1::StoreSpec spec = meta.spec();
    absl::StatusOr<std::unique_ptr<Store>> created = CreateStore(spec, backend_);
    if (!created.ok()) return failed(created.status());
    out.store = *std::move(created);
  }
  const uint64_t base_seq = out.last_seq;
  absl::StatusOr<std::vector<mvccpb::KeyValue>> log =
      client_->RangePrefix(LogPrefix(key, meta.incarnation()));
  Count(log.status(), "etcd");
  if (!log.ok()) return log.status();
  for (const mvccpb::KeyValue& kv : *log) {
    uint64_t seq = 0;
    const std::string digits = kv.key().substr(kv.key().size() - 16);
    if (!absl::SimpleHexAtoi(digits, &seq) || seq <= base_seq) continue;
    absl::StatusOr<adapt::v1::WalRecord> record = ReadRecord(kv.key(), kv.value());
    if (absl::IsDataLoss(record.status())) return failed(record.status());
    if (!record.ok()) return record.status();
    out.last_seq = seq;
    ++out.log_records;
    out.log_bytes += kv.value().size();
    if (record->has_write()) {
      // A write whose application failed when it was logged fails the same way here.
      if (ReplayWrite(*out.store, record->write()).ok()) {
        out.ids.insert(out.ids.end(), record->write().ids().begin(), record->write().ids().end());
      }
    } else {
      ReplayCompile(*out.store, *record);
    }
  }
  if (const absl::Status solved = FinishReplay(*out.store); !solved.ok()) {
    std::fprintf(stderr, "adaptd: store %s: solving its last logged compile: %s\n", key.c_str(),
                 std::string(solved.message()).c_str());
  }
  if (options_.hooks.on_restore) {
    options_.hooks.on_restore(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return out;
}

absl::StatusOr<EtcdDurability::EncodedState> EtcdDurability::EncodeState(Entry& entry) {
  EncodedState out;
  const std::vector<std::string> ids = entry.ids.List();
  const uint64_t incarnation = entry.meta.incarnation();
  out.incarnation = incarnation;
  out.seq = entry.applied_seq;
  absl::StatusOr<std::string> file =
      EncodeStoreFile(*entry.store, [&](adapt::v1::StoreSnapshot& header) {
        adapt::v1::DurableMark* mark = header.mutable_durable();
        mark->set_incarnation(incarnation);
        mark->set_lsn(out.seq);
        mark->mutable_applied_ids()->Add(ids.begin(), ids.end());
        out.spec = header.spec();
      });
  if (!file.ok()) {
    entry.checkpoint_error = absl::StrCat("checkpoint: ", file.status().message());
    return file.status();
  }
  out.file = *std::move(file);
  adapt::v1::StoreInfo info;
  entry.store->Describe(&info);
  out.info = info.SerializeAsString();
  const StoreKind* kind = StoreKinds::Global().Find(out.spec.kind());
  std::shared_ptr<const LinearReadout> published =
      kind != nullptr && kind->warm ? entry.store->Readout() : nullptr;
  if (published != nullptr) out.readout = EncodeReadout(*published);
  return out;
}

absl::Status EtcdDurability::StoreState(const std::string& key, Entry& entry) {
  ASSIGN_OR_RETURN(EncodedState state, EncodeState(entry));
  return PublishState(key, entry, state);
}

absl::Status EtcdDurability::PublishState(const std::string& key, Entry& entry,
                                          const EncodedState& state) {
  const uint64_t incarnation = entry.meta.incarnation();
  const uint64_t seq = state.seq;
  absl::BitGen bits;
  const std::string base = absl::StrFormat("snapshots/%s/%016x/%016x-%016x", key, incarnation, seq,
                                           absl::Uniform<uint64_t>(bits));
  adapt::v1::RemoteStoreEntry meta = entry.meta;
  meta.set_importing(false);
  adapt::v1::RemoteSnapshot* snapshot = meta.mutable_snapshot();
  snapshot->Clear();
  snapshot->set_seq(seq);
  snapshot->set_info(state.info);
  absl::StatusOr<adapt::v1::RemoteObject> stored = PutObject(base + ".state", state.file);
  if (!stored.ok()) {
    entry.checkpoint_error =
        absl::StrCat("checkpoint: object storage: ", stored.status().message());
    return absl::UnavailableError(entry.checkpoint_error);
  }
  *snapshot->mutable_state() = *std::move(stored);
  if (!state.readout.empty()) {
    absl::StatusOr<adapt::v1::RemoteObject> readout = PutObject(base + ".readout", state.readout);
    if (!readout.ok()) {
      (void)objects_->Delete(snapshot->state().key());
      entry.checkpoint_error =
          absl::StrCat("checkpoint: object storage: ", readout.status().message());
      return absl::UnavailableError(entry.checkpoint_error);
    }
    *snapshot->mutable_readout() = *std::move(readout);
  }
  // One fenced transaction: the entry points at the new state, the log it covers goes; it reads
  // the backup hold, which decides whether the superseded objects go.
  std::vector<etcdserverpb::RequestOp> ops(3);
  ops[0].mutable_request_put()->set_key(EntryKey(key));
  ops[0].mutable_request_put()->set_value(meta.SerializeAsString());
  ops[1].mutable_request_delete_range()->set_key(LogKey(key, incarnation, 0));
  ops[1].mutable_request_delete_range()->set_range_end(LogKey(key, incarnation, seq + 1));
  ops[2] = ReadBackupHold();
  etcdserverpb::TxnResponse answer;
  absl::Status trimmed = FencedTxn(key, {}, std::move(ops), &answer);
  if (trimmed.ok()) trimmed_ = true;
  if (trimmed.ok() && options_.state_answer_fault) trimmed = options_.state_answer_fault();
  if (!trimmed.ok()) {
    // The new objects go only when etcd answered that the transaction did not apply (the
    // fence or the entry moved, or etcd's space is spent). Without an answer it may have
    // applied, and the entry point at them: they stay, and the collector takes them once
    // nothing refers to them.
    if (!StateTxnMayHaveApplied(trimmed)) {
      (void)objects_->Delete(snapshot->state().key());
      if (snapshot->has_readout()) (void)objects_->Delete(snapshot->readout().key());
    }
    entry.checkpoint_error = absl::StrCat("checkpoint: ", trimmed.message());
    return trimmed;
  }
  const adapt::v1::RemoteSnapshot old = entry.meta.snapshot();
  if (!entry.cached_only) CacheState(key, state);
  entry.meta = std::move(meta);
  entry.cached_only = false;
  SetDirty(entry, entry.applied_seq != seq);
  if (entry.applied_seq == seq) {
    entry.log_records = 0;
    entry.log_bytes = 0;
  }
  entry.checkpoint_error.clear();
  DeleteUnreferenced({old.state().key(), old.readout().key()},
                     answer.responses_size() > 2 ? &answer.responses(2).response_range() : nullptr);
  return absl::OkStatus();
}

absl::Status EtcdDurability::StoreCachedState(const std::string& key, Entry& entry) {
  absl::StatusOr<adapt::v1::CatalogEntry> row = cache_->ReadCatalog(key);
  absl::StatusOr<std::string> file =
      row.ok() ? cache_->ReadState(key, *row) : absl::StatusOr<std::string>(row.status());
  if (!file.ok() || row->incarnation() != entry.meta.incarnation() ||
      row->lsn() != entry.applied_seq) {
    // The cache lost it: the store is rebuilt from object storage and the log when next
    // loaded, and stored from memory then.
    entry.cached_only = false;
    return absl::OkStatus();
  }
  EncodedState state;
  state.incarnation = row->incarnation();
  state.seq = row->lsn();
  state.spec = row->spec();
  state.file = *std::move(file);
  state.info = row->info().SerializeAsString();
  absl::StatusOr<std::string> readout = cache_->ReadReadout(key, *row);
  if (readout.ok()) state.readout = *std::move(readout);
  return PublishState(key, entry, state);
}

bool EtcdDurability::CacheState(const std::string& key, const EncodedState& state) {
  if (cache_ == nullptr) return false;
  adapt::v1::CatalogEntry row;
  *row.mutable_spec() = state.spec;
  row.set_incarnation(state.incarnation);
  row.set_lsn(state.seq);
  (void)row.mutable_info()->ParseFromString(state.info);
  absl::StatusOr<StateDb::Writer> writer = cache_->BeginWrite();
  absl::Status cached = writer.status();
  if (cached.ok()) cached = writer->PutStore(key, &row, state.file, state.readout);
  if (cached.ok()) cached = writer->Commit();
  if (!cached.ok()) {
    // Only a cache: the next load reads object storage.
    std::fprintf(stderr, "adaptd: store %s: the local cache: %s\n", key.c_str(),
                 std::string(cached.message()).c_str());
  }
  return cached.ok();
}

absl::StatusOr<std::shared_ptr<Store>> EtcdDurability::Load(
    const std::string& tenant, const std::string& name,
    const std::function<bool(const Store&)>& keep_detached) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " does not exist"));
  }
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store != nullptr) return entry->store;
  ASSIGN_OR_RETURN(Rebuilt rebuilt, Rebuild(key, entry->meta));
  if (keep_detached && StoreFailure(*rebuilt.store).ok() && keep_detached(*rebuilt.store)) {
    return rebuilt.store;
  }
  entry->store = rebuilt.store;
  entry->cached_only = false;  // stored from memory from now on
  entry->behind = false;       // its log replayed
  for (const std::string& id : rebuilt.ids) entry->ids.Add(id);
  entry->next_seq = rebuilt.last_seq + 1;
  entry->applied_seq = rebuilt.last_seq;
  SetDirty(*entry, rebuilt.last_seq > entry->meta.snapshot().seq());
  entry->log_records = rebuilt.log_records;
  entry->log_bytes = rebuilt.log_bytes;
  return entry->store;
}

absl::StatusOr<std::shared_ptr<const LinearReadout>> EtcdDurability::LoadReadout(
    const std::string& tenant, const std::string& name) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("store ", key, " does not exist"));
  }
  adapt::v1::RemoteStoreEntry meta;
  {
    absl::MutexLock entry_lock(&entry->mu);
    // A store behind its log: the stored read-out misses records; the state answers.
    if (entry->store != nullptr || entry->behind) return nullptr;
    meta = entry->meta;
  }
  if (cache_ != nullptr) {
    // The cache's, when it is as recent as the stored state (it is newer after an eviction).
    absl::StatusOr<adapt::v1::CatalogEntry> row = cache_->ReadCatalog(key);
    if (row.ok() && row->incarnation() == meta.incarnation() &&
        row->lsn() >= meta.snapshot().seq()) {
      absl::StatusOr<std::string> cached = cache_->ReadReadout(key, *row);
      if (cached.ok()) {
        return DecodeReadout(*cached, meta.spec(), absl::StrCat("the cached read-out of ", key));
      }
      if (row->lsn() > meta.snapshot().seq()) return nullptr;  // the state answers
    }
  }
  if (!meta.snapshot().has_readout()) return nullptr;
  absl::StatusOr<std::string> record = GetObject(meta.snapshot().readout());
  if (absl::IsDataLoss(record.status())) return nullptr;  // the state answers (and fails)
  if (!record.ok()) return record.status();
  return DecodeReadout(*record, meta.spec(), absl::StrCat("the read-out of ", key));
}

absl::StatusOr<bool> EtcdDurability::Unload(const std::string& tenant, const std::string& name,
                                            const Store* store) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) return false;
  absl::MutexLock entry_lock(&entry->mu);
  if (entry->store.get() != store || !entry->in_flight.empty() || !entry->uncertain.empty()) {
    return false;
  }
  if (entry->dirty) {
    // Evicted to the local cache when there is one (its log stays in etcd until the snapshot
    // loop writes the cached state to object storage), else to object storage at once.
    absl::StatusOr<EncodedState> state = EncodeState(*entry);
    if (!state.ok()) return state.status();
    if (CacheState(key, *state)) {
      entry->cached_only = true;
    } else {
      RETURN_IF_ERROR(PublishState(key, *entry, *state));
    }
  }
  entry->store = nullptr;
  entry->ids = AppliedIds(options_.max_ids_per_store);
  return true;
}

absl::Status EtcdDurability::Checkpoint() {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> entries;
  {
    absl::MutexLock lock(&mu_);
    entries.assign(entries_.begin(), entries_.end());
  }
  std::vector<std::string> failures;
  // Bounded: what is left stays in etcd's log, durable, for the next checkpoint or start.
  const absl::Time deadline = absl::Now() + options_.checkpoint_budget;
  size_t left = 0;
  for (const auto& [key, entry] : entries) {
    if (absl::Now() > deadline) {
      ++left;
      continue;
    }
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->store == nullptr && entry->cached_only) {
      if (absl::Status stored = StoreCachedState(key, *entry); !stored.ok()) {
        failures.push_back(absl::StrCat(key, ": ", stored.message()));
      }
      continue;
    }
    if (entry->store == nullptr || !entry->dirty || !StoreFailure(*entry->store).ok()) continue;
    if (absl::Status stored = StoreState(key, *entry); !stored.ok()) {
      failures.push_back(absl::StrCat(key, ": ", stored.message()));
    }
  }
  if (left > 0) {
    std::fprintf(stderr,
                 "adaptd: a checkpoint stopped after %s with %zu stores not visited; their changes "
                 "stay in etcd's log\n",
                 absl::FormatDuration(options_.checkpoint_budget).c_str(), left);
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("checkpoint: ", failures.size(),
                                          " stores could not be stored: ", failures.front()));
}

void EtcdDurability::WantSnapshot(const std::string& key) {
  absl::MutexLock lock(&snapshot_mu_);
  snapshot_wanted_.insert(key);
}

void EtcdDurability::SnapshotLoop() {
  absl::Time next_sweep = absl::Now() + options_.snapshot_interval;
  {
    absl::MutexLock lock(&snapshot_mu_);
    next_maintenance_ = absl::Now() + options_.maintenance_interval;
    next_collection_ = absl::Now() + options_.gc_interval;
  }
  for (;;) {
    std::set<std::string> wanted;
    bool lost = false;
    {
      absl::MutexLock lock(&snapshot_mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(snapshot_mu_) {
        return snapshot_stop_ || lease_lost_ || !snapshot_wanted_.empty();
      };
      snapshot_mu_.AwaitWithDeadline(absl::Condition(&ready),
                                     std::min({next_sweep, next_maintenance_, next_collection_}));
      if (snapshot_stop_) return;
      wanted.swap(snapshot_wanted_);
      lost = lease_lost_;
    }
    if (lost && !fenced_) {
      // Claimed again (or fenced for good): the loop goes on; else try again in a moment.
      const bool settled = Reclaim();
      absl::MutexLock lock(&snapshot_mu_);
      if (settled) lease_lost_ = false;
      if (!settled) {
        snapshot_mu_.AwaitWithTimeout(absl::Condition(&snapshot_stop_), absl::Milliseconds(500));
      }
      continue;
    }
    bool maintain = false, collect = false;
    {
      absl::MutexLock lock(&snapshot_mu_);
      const absl::Time now = absl::Now();
      maintain = now >= next_maintenance_;
      collect = now >= next_collection_;
      if (maintain) next_maintenance_ = now + options_.maintenance_interval;
      if (collect) next_collection_ = now + options_.gc_interval;
    }
    if (maintain || collect) (void)Maintain(collect);
    if (absl::Now() >= next_sweep) {
      // Failures stay in CheckpointError and are tried again at the next sweep.
      (void)Checkpoint();
      next_sweep = absl::Now() + options_.snapshot_interval;
      continue;
    }
    for (const std::string& key : wanted) {
      std::shared_ptr<Entry> entry = Find(key);
      if (entry == nullptr) continue;
      absl::MutexLock entry_lock(&entry->mu);
      if (entry->store == nullptr || !entry->dirty || !StoreFailure(*entry->store).ok()) continue;
      (void)StoreState(key, *entry);
    }
  }
}

std::string EtcdDurability::CheckpointError(const std::string& tenant,
                                            const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return "";
  absl::MutexLock entry_lock(&entry->mu);
  return entry->checkpoint_error;
}

}  // namespace adaptd
