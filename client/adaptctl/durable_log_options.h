// The durable log's etcd and bucket as adaptctl's backup commands reach them directly, with
// the server's flag names (docs/DURABLE_LOG.md, "Flags"): --etcd-endpoints, --etcd-prefix,
// --etcd-ca, --etcd-cert, --etcd-key and, for the bucket, --snapshot-store, --s3-endpoint,
// --s3-region, --s3-credentials-file, --s3-ca. Call from the main thread.
#ifndef ADAPTD_CLIENT_ADAPTCTL_DURABLE_LOG_OPTIONS_H_
#define ADAPTD_CLIENT_ADAPTCTL_DURABLE_LOG_OPTIONS_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "server/etcd/etcd_client.h"
#include "server/objstore/object_store.h"

namespace adaptctl {

struct DurableLogOptions {
  std::string etcd_endpoints;  // comma-separated
  std::string etcd_prefix;     // empty: the server's default
  std::string etcd_ca, etcd_cert, etcd_key;
  std::string snapshot_store;
  std::string s3_endpoint, s3_region, s3_credentials_file, s3_ca;
};

// Declares the etcd flags on `command` (--etcd-endpoints required), and the bucket's too
// (--snapshot-store required) when `bucket`.
void AddDurableLogOptions(CLI::App& command, DurableLogOptions* options, bool bucket);

// The prefix of the deployment's keys in etcd.
std::string EtcdPrefix(const DurableLogOptions& options);
// A client of etcd; errors name the flag at fault.
absl::StatusOr<std::unique_ptr<adaptd::etcd::EtcdClient>> ConnectEtcd(
    const DurableLogOptions& options);
// The bucket, once it answers; errors name the flag at fault.
absl::StatusOr<std::unique_ptr<adaptd::ObjectStore>> OpenBucket(const DurableLogOptions& options);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_DURABLE_LOG_OPTIONS_H_
