// EtcdDurability's upkeep of etcd and of the bucket (docs/DURABLE_LOG.md, "etcd kept
// healthy"): the space guard below etcd's quota, compaction after trims, defragmentation one
// member at a time, and the collection of objects nothing points at. In a cluster on etcd,
// every member keeps its space guard, and the holder of shard 0 alone does the rest. Every
// deletion of an object waits for a backup hold (docs/CLUSTER_OPERATIONS.md).
#include <cstdio>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"

namespace adaptd {

std::string BackupHoldKey(const std::string& prefix) { return prefix + "backup-hold"; }

absl::StatusOr<absl::Time> ParseBackupHold(const std::string& value) {
  int64_t seconds = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &seconds) || seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the backup hold \"", value.substr(0, 64),
                     "\" is not a deadline in unix seconds (a whole number at least 0)"));
  }
  return absl::FromUnixSeconds(seconds);
}

etcdserverpb::RequestOp EtcdDurability::ReadBackupHold() const {
  etcdserverpb::RequestOp op;
  op.mutable_request_range()->set_key(BackupHoldKey(options_.prefix));
  return op;
}

bool EtcdDurability::DeletionsHeld(const etcdserverpb::RangeResponse* read) {
  absl::StatusOr<etcdserverpb::RangeResponse> now;
  if (read == nullptr) {
    now = client_->Range(ReadBackupHold().request_range());
    Count(now.status(), "etcd");
    if (now.ok()) read = &*now;
  }
  std::string why;
  bool held = true;
  if (read == nullptr) {
    why = absl::StrCat("etcd did not answer a read of ", BackupHoldKey(options_.prefix), ": ",
                       now.status().message());
  } else if (read->kvs_size() == 0) {
    held = false;
  } else {
    absl::StatusOr<absl::Time> until = ParseBackupHold(read->kvs(0).value());
    held = !until.ok() || *until > absl::Now();
    why = until.ok() ? absl::StrCat("a backup hold until ", absl::FormatTime(*until))
                     : std::string(until.status().message());
  }
  if (held != hold_seen_.exchange(held)) {
    const std::string line =
        held ? absl::StrCat("object deletions wait (the collector takes them later): ", why)
             : "no backup hold in force: object deletions go on";
    std::fprintf(stderr, "adaptd: %s\n", line.c_str());
  }
  return held;
}

void EtcdDurability::DeleteUnreferenced(const std::vector<std::string>& keys,
                                        const etcdserverpb::RangeResponse* read) {
  bool any = false;
  for (const std::string& key : keys) any = any || !key.empty();
  if (!any || DeletionsHeld(read)) return;
  for (const std::string& key : keys) {
    if (!key.empty()) (void)objects_->Delete(key);
  }
}

absl::Status EtcdDurability::SpaceGuard(const std::string& key) const {
  if (!space_guard_on_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "store %s: etcd's database is at %d bytes, past the space guard (%.0f%% of its quota of %d "
      "bytes): writes are refused until snapshots trim the log and etcd is compacted and "
      "defragmented",
      key, largest_db_bytes_.load(), options_.space_guard * 100, options_.etcd_quota_bytes));
}

absl::StatusOr<EtcdDurability::Upkeep> EtcdDurability::Maintain(bool collect) {
  Upkeep upkeep;
  const auto largest = [this]() -> absl::StatusOr<etcdserverpb::StatusResponse> {
    etcdserverpb::StatusResponse top;
    for (const std::string& endpoint : client_->endpoints()) {
      absl::StatusOr<etcdserverpb::StatusResponse> status = client_->Status(endpoint);
      Count(status.status(), "etcd");
      if (status.ok() && status->dbsize() > top.dbsize()) top = *status;
    }
    return top;
  };
  ASSIGN_OR_RETURN(etcdserverpb::StatusResponse top, largest());
  const int64_t guard = static_cast<int64_t>(options_.space_guard * options_.etcd_quota_bytes);
  if (top.dbsize() >= guard) {
    // Over the guard: refuse writes, snapshot every changed store to trim the log.
    largest_db_bytes_ = top.dbsize();
    if (!space_guard_on_.exchange(true)) {
      std::fprintf(stderr,
                   "adaptd: etcd's database is at %lld bytes, past the space guard; writes are "
                   "refused while snapshots trim the log\n",
                   static_cast<long long>(top.dbsize()));
    }
    (void)Checkpoint();
  }
  // In a cluster one member keeps etcd for all, the holder of shard 0. It does not see the
  // others' trims, so it compacts whenever etcd's revision moved on since its last compaction.
  const bool member = options_.shards != nullptr;
  upkeep.upkeep_here = !member || options_.shards->FenceOf(0).ok();
  const bool trimmed = trimmed_.exchange(false);
  if (upkeep.upkeep_here && (trimmed || member || top.dbsize() >= guard)) {
    etcdserverpb::RangeRequest probe;
    probe.set_key(options_.prefix + "owner");
    probe.set_count_only(true);
    absl::StatusOr<etcdserverpb::RangeResponse> now = client_->Range(probe);
    Count(now.status(), "etcd");
    if (now.ok() && (!member || now->header().revision() > compacted_revision_)) {
      const absl::Status compacted = client_->Compact(now->header().revision());
      // Compacted already to there or beyond (by another deployment) is as good.
      if (compacted.ok() || absl::IsOutOfRange(compacted)) {
        upkeep.compacted_to = now->header().revision();
        compacted_revision_ = upkeep.compacted_to;
      } else {
        Count(compacted, "etcd");
      }
    }
  }
  if (upkeep.compacted_to > 0) {
    for (const std::string& endpoint : client_->endpoints()) {
      absl::StatusOr<etcdserverpb::StatusResponse> status = client_->Status(endpoint);
      if (!status.ok()) continue;
      // One member at a time: each blocks its own traffic while it rewrites its file.
      const bool loose =
          status->dbsize() > 2 * status->dbsizeinuse() && status->dbsize() > int64_t{1} << 20;
      if (!loose && status->dbsize() < guard) continue;
      const absl::Status defragmented = client_->Defragment(endpoint);
      Count(defragmented, "etcd");
      if (defragmented.ok()) ++upkeep.defragmented;
    }
  }
  ASSIGN_OR_RETURN(top, largest());
  largest_db_bytes_ = top.dbsize();
  if (top.dbsize() < guard && space_guard_on_.exchange(false)) {
    std::fprintf(stderr, "adaptd: etcd's database is back under the space guard; writes resume\n");
  }
  upkeep.largest_db_bytes = top.dbsize();
  upkeep.guard_on = space_guard_on_;
  if (collect && upkeep.upkeep_here) {
    ASSIGN_OR_RETURN(upkeep.objects_deleted, CollectObjects(&upkeep.deletions_held));
  }
  return upkeep;
}

absl::StatusOr<int> EtcdDurability::CollectObjects(bool* held) {
  // Listed before the references are read: an object written after the listing is not in it.
  std::vector<ObjectStore::Object> listed;
  for (const char* prefix : {"snapshots/", "payloads/", "readouts/"}) {
    absl::StatusOr<std::vector<ObjectStore::Object>> objects = objects_->List(prefix);
    Count(objects.status(), "s3");
    if (!objects.ok()) return objects.status();
    listed.insert(listed.end(), objects->begin(), objects->end());
  }
  std::set<std::string> referenced;
  // A single server's entries and records, or every shard's (any member's) in a cluster.
  const bool member = options_.shards != nullptr;
  const std::vector<std::string> ranges =
      member ? std::vector<std::string>{options_.prefix + "shards/"}
             : std::vector<std::string>{options_.prefix + "stores/", options_.prefix + "log/"};
  for (const std::string& range : ranges) {
    absl::StatusOr<std::vector<mvccpb::KeyValue>> kvs = client_->RangePrefix(range);
    Count(kvs.status(), "etcd");
    if (!kvs.ok()) return kvs.status();
    for (const mvccpb::KeyValue& kv : *kvs) {
      // PREFIX/shards/SSSS/stores/... in a cluster.
      const bool entry = member ? absl::StartsWith(kv.key().substr(range.size() + 5), "stores/")
                                : range == options_.prefix + "stores/";
      if (entry) {
        adapt::v1::RemoteStoreEntry meta;
        if (!meta.ParseFromString(kv.value())) continue;
        referenced.insert(meta.snapshot().state().key());
        referenced.insert(meta.snapshot().readout().key());
      } else {
        adapt::v1::RemoteLogRecord record;
        if (!record.ParseFromString(kv.value())) continue;
        if (record.has_payload()) referenced.insert(record.payload().key());
        if (record.has_base_readout()) referenced.insert(record.base_readout().key());
      }
    }
  }
  // Read after the references: an object they leave out was unreferenced before any hold put
  // since, so no etcd snapshot taken under that hold points at it.
  *held = DeletionsHeld();
  if (*held) return 0;
  const absl::Time cutoff = absl::Now() - options_.gc_grace;
  int deleted = 0;
  for (const ObjectStore::Object& object : listed) {
    if (referenced.contains(object.key) || object.modified > cutoff) continue;
    const absl::Status removed = objects_->Delete(object.key);
    Count(removed, "s3");
    if (removed.ok()) ++deleted;
  }
  return deleted;
}

}  // namespace adaptd
