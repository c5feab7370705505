// Test-only: a 3-member etcd and SeaweedFS (S3) for a test binary, started on first use and
// killed when it exits, and buckets on that SeaweedFS under a prefix per test: what the tests
// of the durable log in etcd (docs/DURABLE_LOG.md) run against.
#ifndef ADAPTD_SERVER_DURABILITY_TESTING_SHARED_SERVICES_H_
#define ADAPTD_SERVER_DURABILITY_TESTING_SHARED_SERVICES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/objstore/s3_object_store.h"
#include "server/objstore/testing/seaweedfs.h"

namespace adaptd::testing_util {

inline constexpr char kSharedBucket[] = "adaptd-durability-test";

// Null (with a test failure) when it could not start.
etcd::testing::EtcdCluster* SharedEtcd();
SeaweedFs* SharedS3();

// The shared SeaweedFS's bucket (created once) under `prefix`, its credentials exported to
// this process's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), as adaptd reads them.
absl::StatusOr<std::unique_ptr<S3ObjectStore>> SharedBucket(const std::string& prefix);

// A name no other test of the run uses.
std::string UniqueName();

}  // namespace adaptd::testing_util

#endif  // ADAPTD_SERVER_DURABILITY_TESTING_SHARED_SERVICES_H_
