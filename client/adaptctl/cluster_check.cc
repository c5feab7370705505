#include "client/adaptctl/cluster_check.h"

#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/backend.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"
#include "server/persistence/replay.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "server/stores/stored_readout.h"

namespace adaptctl {
namespace {

using adaptd::etcd::EtcdClient;

// A failure seen while the store's entry changed is checked again, at most this often.
constexpr int kTries = 3;

// Where stores' keys live: PREFIX itself (a single server's) and each PREFIX/shards/SSSS/ that
// holds any key (a cluster's), found by skipping from one shard's keys to the next.
absl::StatusOr<std::vector<std::string>> Roots(EtcdClient& etcd, const std::string& prefix) {
  std::vector<std::string> roots = {prefix};
  const std::string shards = prefix + "shards/";
  const std::string end = adaptd::etcd::PrefixEnd(shards);
  std::string from = shards;
  while (true) {
    etcdserverpb::RangeRequest next;
    next.set_key(from);
    next.set_range_end(end);
    next.set_limit(1);
    next.set_keys_only(true);
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse found, etcd.Range(next));
    if (found.kvs_size() == 0) return roots;
    const std::string& key = found.kvs(0).key();
    const size_t slash = key.find('/', shards.size());
    if (slash == std::string::npos) {
      from = key + std::string(1, '\0');  // not a shard's: past it
      continue;
    }
    roots.push_back(key.substr(0, slash + 1));
    from = adaptd::etcd::PrefixEnd(roots.back());
  }
}

// Reads `object`, counting it.
absl::StatusOr<std::string> ReadObject(adaptd::ObjectStore& bucket,
                                       const adapt::v1::RemoteObject& object,
                                       ClusterCheckReport& report) {
  ++report.objects;
  return adaptd::ReadStoredObject(bucket, object);
}

// The store's stored state (or a new store, before its first), restored; its read-out read.
absl::StatusOr<std::unique_ptr<adaptd::Store>> RestoreStored(
    adaptd::ObjectStore& bucket, const adapt::v1::RemoteStoreEntry& meta,
    ClusterCheckReport& report) {
  adaptd::kernels::Backend* backend = &adaptd::kernels::HostBackend();
  if (!meta.has_snapshot()) {
    absl::StatusOr<std::unique_ptr<adaptd::Store>> created =
        adaptd::CreateStore(meta.spec(), backend);
    if (!created.ok()) return absl::DataLossError(created.status().message());
    return created;
  }
  const adapt::v1::RemoteSnapshot& snapshot = meta.snapshot();
  ASSIGN_OR_RETURN(const std::string file, ReadObject(bucket, snapshot.state(), report));
  const std::string where = bucket.Describe(snapshot.state().key());
  absl::StatusOr<adaptd::DecodedSnapshot> decoded = adaptd::DecodeSnapshotState(file);
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat("object ", where, ": ", decoded.status().message()));
  }
  decoded->header.clear_durable();
  absl::StatusOr<std::unique_ptr<adaptd::Store>> restored =
      adaptd::RestoreStore(decoded->header, decoded->arrays, backend);
  if (!restored.ok()) {
    return absl::DataLossError(absl::StrCat("object ", where, ": ", restored.status().message()));
  }
  if (snapshot.has_readout()) {
    ASSIGN_OR_RETURN(const std::string readout, ReadObject(bucket, snapshot.readout(), report));
    const std::string readout_where = bucket.Describe(snapshot.readout().key());
    const absl::Status decoded_readout =
        adaptd::DecodeReadout(readout, meta.spec(), readout_where).status();
    if (!decoded_readout.ok()) return absl::DataLossError(decoded_readout.message());
  }
  return restored;
}

// Loads one store as a member's first load does, writing nothing.
absl::Status CheckStore(EtcdClient& etcd, adaptd::ObjectStore& bucket, const std::string& root,
                        const std::string& key, const adapt::v1::RemoteStoreEntry& meta,
                        ClusterCheckReport& report) {
  ASSIGN_OR_RETURN(std::unique_ptr<adaptd::Store> store, RestoreStored(bucket, meta, report));
  const uint64_t stored_seq = meta.has_snapshot() ? meta.snapshot().seq() : 0;
  const std::string log = absl::StrFormat("%slog/%s/%016x/", root, key, meta.incarnation());
  ASSIGN_OR_RETURN(std::vector<mvccpb::KeyValue> records, etcd.RangePrefix(log));
  for (const mvccpb::KeyValue& kv : records) {
    uint64_t seq = 0;
    if (!absl::SimpleHexAtoi(kv.key().substr(log.size()), &seq)) {
      return absl::DataLossError(absl::StrCat("etcd key ", kv.key(), " is not a log record's"));
    }
    if (seq <= stored_seq) continue;  // covered by the state (a trim not yet applied)
    ASSIGN_OR_RETURN(adapt::v1::WalRecord record,
                     adaptd::ReadStoredRecord(bucket, kv.key(), kv.value(),
                                              [&](const absl::Status&) { ++report.objects; }));
    ++report.log_records;
    if (record.has_write()) {
      // A write whose application failed when it was logged fails the same way at a load.
      (void)adaptd::ReplayWrite(*store, record.write());
    } else {
      adaptd::ReplayCompile(*store, record);
    }
  }
  // A member serves on when its last logged compile does not solve (it says so on stderr).
  (void)adaptd::FinishReplay(*store);
  return absl::OkStatus();
}

// Checks the store of the entry `kv` (key TENANT/STORE under `root`); false in `*store` for an
// import never acknowledged, which a member drops.
absl::Status CheckEntry(EtcdClient& etcd, adaptd::ObjectStore& bucket, const std::string& root,
                        const std::string& key, const mvccpb::KeyValue& kv,
                        ClusterCheckReport& report, bool* store) {
  adapt::v1::RemoteStoreEntry meta;
  if (!meta.ParseFromString(kv.value())) {
    return absl::DataLossError(absl::StrCat("etcd key ", kv.key(), " does not hold a store entry"));
  }
  *store = !meta.importing();
  if (!*store) return absl::OkStatus();
  return CheckStore(etcd, bucket, root, key, meta, report);
}

// Checks the stores whose entries are under `root`.
absl::Status CheckRoot(EtcdClient& etcd, adaptd::ObjectStore& bucket, const std::string& root,
                       ClusterCheckReport& report,
                       const std::function<void(const StoreCheckFailure&)>& on_failure) {
  const std::string entries = root + "stores/";
  ASSIGN_OR_RETURN(std::vector<mvccpb::KeyValue> kvs, etcd.RangePrefix(entries));
  for (mvccpb::KeyValue& kv : kvs) {
    const std::string key = kv.key().substr(entries.size());
    absl::Status checked;
    bool store = true, gone = false;
    for (int attempt = 1;; ++attempt) {
      checked = CheckEntry(etcd, bucket, root, key, kv, report, &store);
      if (checked.ok() || attempt == kTries) break;
      // A running member may have moved the entry on (and deleted what it pointed at).
      etcdserverpb::RangeRequest read;
      read.set_key(kv.key());
      ASSIGN_OR_RETURN(etcdserverpb::RangeResponse now, etcd.Range(read));
      gone = now.kvs_size() == 0;  // deleted meanwhile
      if (gone || now.kvs(0).mod_revision() == kv.mod_revision()) break;
      kv = now.kvs(0);
    }
    if (gone) continue;
    if (!checked.ok() && !absl::IsDataLoss(checked)) {
      // etcd or the bucket did not answer: no verdict on this store or the rest.
      return absl::Status(checked.code(), absl::StrCat("store ", key, ": ", checked.message()));
    }
    if (!store) {
      ++report.imports;
      continue;
    }
    ++report.stores;
    if (checked.ok()) continue;
    report.failures.push_back({key, std::string(checked.message())});
    if (on_failure) on_failure(report.failures.back());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterCheckReport> CheckStores(
    EtcdClient& etcd, adaptd::ObjectStore& bucket, const std::string& prefix,
    const std::function<void(const StoreCheckFailure&)>& on_failure) {
  ClusterCheckReport report;
  ASSIGN_OR_RETURN(const std::vector<std::string> roots, Roots(etcd, prefix));
  for (const std::string& root : roots) {
    RETURN_IF_ERROR(CheckRoot(etcd, bucket, root, report, on_failure));
  }
  return report;
}

}  // namespace adaptctl
