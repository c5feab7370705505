// EtcdDurability's appends: a write or compile record numbered under its store's lock,
// committed by the group commit (etcd_commit_queue.h), then applied in the store's order.
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "openssl/sha.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"
#include "server/persistence/replay.h"

namespace adaptd {
namespace {

absl::Status Gone(const std::string& key) {
  return absl::NotFoundError(absl::StrCat("store ", key, " was deleted during the call"));
}

std::string RandomHex() {
  absl::BitGen bits;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(bits),
                         absl::Uniform<uint64_t>(bits));
}

}  // namespace

void EtcdDurability::AppendWrite(const std::string& tenant, const std::string& name,
                                 const Store* store, adapt::v1::WalWrite write, const Fence& fence,
                                 Apply apply, WriteDone done) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) {
    std::move(done)(Gone(key));
    return;
  }
  adapt::v1::WalRecord record;
  *record.mutable_write() = std::move(write);
  std::move(done)(AppendAndApply(key, *entry, std::move(record), fence,
                                 [&apply] { return std::move(apply)(); }));
}

absl::Status EtcdDurability::AppendCompile(const std::string& tenant, const std::string& name,
                                           const Store* store,
                                           const adapt::v1::CompileRequest& request,
                                           const BaseReadout* base, const Fence& fence) {
  const std::string key = StoreKey(tenant, name);
  std::shared_ptr<Entry> entry = FindLoaded(key, store);
  if (entry == nullptr) return absl::OkStatus();  // deleted meanwhile: nothing to record
  adapt::v1::WalRecord record = CompileRecord(0, request, base);
  absl::StatusOr<CommitResult> logged =
      AppendAndApply(key, *entry, std::move(record), fence, [] { return CommitResult(); });
  if (absl::IsNotFound(logged.status())) return absl::OkStatus();
  return logged.status();
}

absl::Status EtcdDurability::AppendAutoCompile(const Store* store, std::string* tenant,
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

absl::StatusOr<CommitResult> EtcdDurability::AppendAndApply(
    const std::string& key, Entry& entry, adapt::v1::WalRecord record, const Fence& fence,
    absl::FunctionRef<absl::StatusOr<CommitResult>()> apply) {
  RETURN_IF_ERROR(CheckFence(key, fence));
  const std::vector<std::string> ids(record.write().ids().begin(), record.write().ids().end());
  uint64_t seq = 0;
  std::string log_key;
  {
    absl::MutexLock entry_lock(&entry.mu);
    if (entry.store == nullptr) return Gone(key);
    if (!entry.uncertain.empty()) RETURN_IF_ERROR(ResolveUncertain(key, entry));
    RETURN_IF_ERROR(SpaceGuard(key));
    if (entry.log_records >= options_.max_log_records) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "store ", key, ": its log in etcd holds ", entry.log_records,
          " records past its last state in object storage, the bound (max_log_records ",
          options_.max_log_records, "); its state cannot be written: ",
          entry.checkpoint_error.empty() ? "(not tried yet)" : entry.checkpoint_error));
    }
    for (const std::string& id : ids) {
      if (entry.ids.Contains(id) || entry.pending_ids.contains(id)) {
        return absl::AbortedError(absl::StrCat(
            "examples: id '", id,
            "' was applied by a concurrent call; resend the call to apply the others"));
      }
    }
    entry.pending_ids.insert(ids.begin(), ids.end());
    record.set_incarnation(entry.meta.incarnation());
    seq = entry.next_seq++;
    entry.in_flight.push_back(seq);
    log_key = LogKey(key, entry.meta.incarnation(), seq);
  }
  // The value: the record itself, or (large) an object holding it, written first; a base's
  // read-out copied by a compile goes to an object of its own, shared.
  adapt::v1::RemoteLogRecord value;
  absl::Status status = ShareBaseReadout(key, &record, &value);
  std::string bytes;
  if (value.has_base_readout()) {
    adapt::v1::WalRecord stripped = record;
    stripped.mutable_base_compile()->clear_labels();
    stripped.mutable_base_compile()->clear_s();
    bytes = stripped.SerializeAsString();
  } else {
    bytes = record.SerializeAsString();
  }
  if (!status.ok()) {
    // Nothing is committed without the base's read-out.
  } else if (bytes.size() > options_.inline_bytes) {
    absl::StatusOr<adapt::v1::RemoteObject> object = PutObject(
        absl::StrFormat("payloads/%s/%016x/%s", key, record.incarnation(), RandomHex()), bytes);
    if (object.ok()) {
      *value.mutable_payload() = *std::move(object);
    } else {
      status = absl::UnavailableError(absl::StrCat(
          "store ", key,
          ": writing the record's payload to object storage: ", object.status().message()));
    }
  } else {
    value.set_record(std::move(bytes));
  }
  bool unknown = false;
  const std::string serialized = value.SerializeAsString();
  absl::StatusOr<EtcdFence> claim = FenceOf(key);
  if (status.ok() && !claim.ok()) status = claim.status();
  if (status.ok()) status = commits_->Commit(key, log_key, serialized, *claim, &unknown);
  bool snapshot_due = false;
  absl::StatusOr<CommitResult> result = FinishAppend(key, entry, seq, status, unknown, record,
                                                     serialized.size(), apply, &snapshot_due);
  if (snapshot_due) WantSnapshot(key);
  return result;
}

absl::StatusOr<CommitResult> EtcdDurability::FinishAppend(
    const std::string& key, Entry& entry, uint64_t seq, const absl::Status& committed, bool unknown,
    const adapt::v1::WalRecord& record, size_t bytes,
    absl::FunctionRef<absl::StatusOr<CommitResult>()> apply, bool* snapshot_due) {
  absl::MutexLock entry_lock(&entry.mu);
  const auto my_turn = [&entry, seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
    return entry.in_flight.front() == seq;
  };
  entry.mu.Await(absl::Condition(&my_turn));
  absl::StatusOr<CommitResult> result = absl::UnknownError("not committed");
  if (!committed.ok()) result = committed;
  if (unknown) {
    entry.uncertain[seq] = record;
  } else if (committed.ok() && entry.store == nullptr) {
    result = Gone(key);
  } else if (committed.ok()) {
    result = apply();
    entry.applied_seq = seq;
    SetDirty(entry, true);
    ++entry.log_records;
    entry.log_bytes += bytes;
    *snapshot_due = entry.log_records >= options_.snapshot_records ||
                    entry.log_bytes >= options_.snapshot_bytes;
    if (result.ok()) {
      for (const std::string& id : record.write().ids()) entry.ids.Add(id);
    }
  }
  for (const std::string& id : record.write().ids()) entry.pending_ids.erase(id);
  entry.in_flight.pop_front();
  return result;
}

absl::Status EtcdDurability::ShareBaseReadout(const std::string& key, adapt::v1::WalRecord* record,
                                              adapt::v1::RemoteLogRecord* value) {
  if (!record->has_base_compile() || record->base_compile().s_size() == 0) {
    return absl::OkStatus();
  }
  adapt::v1::WalBaseCompile readout = record->base_compile();
  readout.clear_compile();
  const std::string bytes = readout.SerializeAsString();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  std::string name = "readouts/";
  for (unsigned char byte : digest) absl::StrAppend(&name, absl::Hex(byte, absl::kZeroPad2));
  absl::StatusOr<adapt::v1::RemoteObject> object = PutObject(name, bytes);
  if (!object.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "store ", key,
        ": writing the base's read-out to object storage: ", object.status().message()));
  }
  *value->mutable_base_readout() = *std::move(object);
  return absl::OkStatus();
}

absl::Status EtcdDurability::ResolveUncertain(const std::string& key, Entry& entry) {
  const auto settled = [&entry]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(entry.mu) {
    return entry.in_flight.empty();
  };
  entry.mu.Await(absl::Condition(&settled));
  while (!entry.uncertain.empty()) {
    auto it = entry.uncertain.begin();
    etcdserverpb::RangeRequest range;
    range.set_key(LogKey(key, entry.meta.incarnation(), it->first));
    range.set_count_only(true);
    absl::StatusOr<etcdserverpb::RangeResponse> found = client_->Range(range);
    Count(found.status(), "etcd");
    if (!found.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "store ", key, ": an earlier write's outcome is unknown and etcd does not answer: ",
          found.status().message()));
    }
    if (found->count() > 0 && entry.store != nullptr) {
      // It was committed: the store applies it now, as replay would.
      const adapt::v1::WalRecord& record = it->second;
      if (record.has_write()) {
        if (ReplayWrite(*entry.store, record.write()).ok()) {
          for (const std::string& id : record.write().ids()) entry.ids.Add(id);
        }
      } else if (ReplayCompile(*entry.store, record)) {
        (void)FinishReplay(*entry.store);
      }
      entry.applied_seq = it->first;
      SetDirty(entry, true);
    }
    entry.uncertain.erase(it);
  }
  commits_->ClearUncertain(key);
  return absl::OkStatus();
}

bool EtcdDurability::Applied(const std::string& tenant, const std::string& name, const Store* store,
                             const std::string& id) const {
  std::shared_ptr<Entry> entry = FindLoaded(StoreKey(tenant, name), store);
  if (entry == nullptr) return false;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.Contains(id);
}

std::vector<std::string> EtcdDurability::RememberedIds(const std::string& tenant,
                                                       const std::string& name,
                                                       const Store* store) const {
  std::shared_ptr<Entry> entry = FindLoaded(StoreKey(tenant, name), store);
  if (entry == nullptr) return {};
  absl::MutexLock entry_lock(&entry->mu);
  return entry->ids.List();
}

uint64_t EtcdDurability::RememberedBytes(const std::string& tenant, const std::string& name) const {
  std::shared_ptr<Entry> entry = Find(StoreKey(tenant, name));
  if (entry == nullptr) return 0;
  absl::MutexLock entry_lock(&entry->mu);
  return entry->store != nullptr ? entry->ids.bytes() : 0;
}

}  // namespace adaptd
