// Test code shared by the cluster-on-etcd tests (cluster_etcd_test): one real etcd member for
// the whole binary, started on first use, each test working under a prefix of its own; and
// registries of members on it.
#ifndef ADAPTD_SERVER_CLUSTER_CLUSTER_ETCD_TEST_UTIL_H_
#define ADAPTD_SERVER_CLUSTER_CLUSTER_ETCD_TEST_UTIL_H_

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/cluster/cluster_registry.h"
#include "server/etcd/testing/etcd_cluster.h"

namespace adaptd::cluster {

using etcd::testing::EtcdCluster;

inline constexpr absl::Duration kTtl = absl::Seconds(2);

// One etcd for every test of the binary; each test registers under a prefix of its own.
class SharedEtcd {
 public:
  static SharedEtcd& Get() {
    static SharedEtcd* shared = [] {
      // Stopped at the process's exit: no etcd process or data directory outlives the binary.
      std::atexit([] { delete Instance(); });
      return Instance() = new SharedEtcd();
    }();
    return *shared;
  }
  etcd::EtcdClient* client() { return client_.get(); }
  std::string NewPrefix() { return absl::StrCat("/cluster-test/", next_++, "/"); }

 private:
  SharedEtcd() {
    etcd::testing::EtcdClusterOptions options;
    options.members = 1;
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Start(options);
    if (!cluster.ok()) {
      ADD_FAILURE() << cluster.status();
      return;
    }
    cluster_ = std::move(*cluster);
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = cluster_->Client();
    if (!client.ok()) {
      ADD_FAILURE() << client.status();
      return;
    }
    client_ = std::move(*client);
  }
  static SharedEtcd*& Instance() {
    static SharedEtcd* instance = nullptr;
    return instance;
  }
  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::atomic<int> next_{0};
};

inline ClusterRegistry::Options OptionsOf(const std::string& prefix, const std::string& name,
                                          absl::Duration settle = absl::ZeroDuration()) {
  ClusterRegistry::Options options;
  options.prefix = prefix;
  options.self = name;
  options.address = absl::StrCat(name, ".adaptd:50051");
  options.lease_ttl = kTtl;
  options.settle = settle;
  options.register_wait = absl::Seconds(6);
  return options;
}

inline std::unique_ptr<ClusterRegistry> Register(const ClusterRegistry::Options& options) {
  etcd::EtcdClient* client = SharedEtcd::Get().client();
  if (client == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<ClusterRegistry>> registry =
      ClusterRegistry::Start(client, options);
  EXPECT_TRUE(registry.ok()) << registry.status();
  return registry.ok() ? std::move(*registry) : nullptr;
}

// Waits until `check` holds (30 s at most: a loaded machine stretches leases and watches).
template <typename F>
bool Eventually(F check) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!check()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

}  // namespace adaptd::cluster

#endif  // ADAPTD_SERVER_CLUSTER_CLUSTER_ETCD_TEST_UTIL_H_
