// `adaptctl cluster check`: whether every store of a deployment on the durable log in etcd
// (docs/DURABLE_LOG.md; a cluster's or a single server's, as restored from a backup) can be
// loaded: its entry parses, its state object and read-out object are in the bucket as the entry
// names them (size and CRC-32), the state restores, and every log record after it reads (its
// payload and base read-out objects too) and replays, as a member's first load does. Read-only:
// nothing is written to etcd or the bucket (docs/CLUSTER_OPERATIONS.md, "Backup and restore").
#ifndef ADAPTD_CLIENT_ADAPTCTL_CLUSTER_CHECK_H_
#define ADAPTD_CLIENT_ADAPTCTL_CLUSTER_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/etcd/etcd_client.h"
#include "server/objstore/object_store.h"

namespace adaptctl {

struct StoreCheckFailure {
  std::string store;  // TENANT/STORE
  std::string error;  // the object missing or corrupt, the record unreadable
};

struct ClusterCheckReport {
  int64_t stores = 0;       // entries checked
  int64_t log_records = 0;  // records read and replayed
  int64_t objects = 0;      // objects read
  int64_t imports = 0;      // entries of imports never acknowledged (a member drops them)
  std::vector<StoreCheckFailure> failures;
};

// Checks every store under `prefix` (PREFIX/stores/ and every PREFIX/shards/SSSS/stores/),
// calling `on_failure` (if set) as each failure is found: an object missing or corrupt (the
// read-out's too, though a member would fall back to the state), an entry or a record that does
// not parse, a state that does not restore. A failure seen while the store's entry changed
// meanwhile (a running member's snapshot) is checked again. Fails, naming the store it was at,
// when etcd or the bucket does not answer.
absl::StatusOr<ClusterCheckReport> CheckStores(
    adaptd::etcd::EtcdClient& etcd, adaptd::ObjectStore& bucket, const std::string& prefix,
    const std::function<void(const StoreCheckFailure&)>& on_failure = nullptr);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_CLUSTER_CHECK_H_
