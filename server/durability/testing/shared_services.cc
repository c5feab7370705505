#include "server/durability/testing/shared_services.h"

#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace adaptd::testing_util {
namespace {

struct Services {
  std::unique_ptr<etcd::testing::EtcdCluster> etcd;
  std::unique_ptr<SeaweedFs> s3;
};

Services* started = nullptr;

Services& Started() {
  static Services* services = [] {
    auto* s = new Services;
    // Stopped at the process's exit, so no etcd or SeaweedFS process and no data directory
    // outlives the test binary (ctest runs each test in a process of its own).
    started = s;
    std::atexit([] {
      delete started;
      started = nullptr;
    });
    absl::StatusOr<std::unique_ptr<etcd::testing::EtcdCluster>> cluster =
        etcd::testing::EtcdCluster::Start(etcd::testing::EtcdClusterOptions());
    if (!cluster.ok()) {
      ADD_FAILURE() << "etcd: " << cluster.status();
      return s;
    }
    s->etcd = *std::move(cluster);
    absl::StatusOr<std::unique_ptr<SeaweedFs>> s3 = SeaweedFs::Create();
    if (!s3.ok()) {
      ADD_FAILURE() << "SeaweedFS: " << s3.status();
      return s;
    }
    s->s3 = *std::move(s3);
    return s;
  }();
  return *services;
}

}  // namespace

etcd::testing::EtcdCluster* SharedEtcd() { return Started().etcd.get(); }
SeaweedFs* SharedS3() { return Started().s3.get(); }

absl::StatusOr<std::unique_ptr<S3ObjectStore>> SharedBucket(const std::string& prefix) {
  SeaweedFs* s3 = SharedS3();
  if (s3 == nullptr) return absl::UnavailableError("no SeaweedFS");
  S3Options options;
  options.url = absl::StrCat("s3://", kSharedBucket, "/", prefix);
  options.endpoint = s3->endpoint();
  setenv("AWS_ACCESS_KEY_ID", s3->access_key().c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", s3->secret_key().c_str(), 1);
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> store = S3ObjectStore::OpenUnchecked(options);
  if (!store.ok()) return store.status();
  static const absl::Status created = (*store)->CreateBucket();
  if (!created.ok()) return created;
  return store;
}

std::string UniqueName() {
  std::random_device rd;
  return absl::StrCat("t", rd(), rd());
}

}  // namespace adaptd::testing_util
