// EtcdDurability's upkeep of etcd and of the bucket (docs/DURABLE_LOG.md, "etcd kept
// healthy"): the space guard below etcd's quota, compaction after trims, defragmentation one
// member at a time, and the collection of objects nothing points at. In a cluster on etcd,
// every member keeps its space guard, and the holder of shard 0 alone does the rest.
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"

namespace adaptd {

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
    ASSIGN_OR_RETURN(upkeep.objects_deleted, CollectObjects());
  }
  return upkeep;
}

absl::StatusOr<int> EtcdDurability::CollectObjects() {
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
