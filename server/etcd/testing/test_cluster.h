// Test code shared by the etcd client's tests (one binary): a cluster started, and a client of
// it, each failing the test (and answering null) when it could not be had.
#ifndef ADAPTD_SERVER_ETCD_TESTING_TEST_CLUSTER_H_
#define ADAPTD_SERVER_ETCD_TESTING_TEST_CLUSTER_H_

#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "server/etcd/testing/etcd_cluster.h"

namespace adaptd::etcd::testing {

inline std::unique_ptr<EtcdCluster> StartCluster(EtcdClusterOptions options = {}) {
  absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(std::move(options));
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? std::move(*cluster) : nullptr;
}

inline std::unique_ptr<EtcdClient> ClientOf(const EtcdCluster& cluster) {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = cluster.Client();
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

}  // namespace adaptd::etcd::testing

#endif  // ADAPTD_SERVER_ETCD_TESTING_TEST_CLUSTER_H_
