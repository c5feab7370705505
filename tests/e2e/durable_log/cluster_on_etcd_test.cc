// The cluster on etcd end to end (docs/CLUSTER_ETCD.md), with real processes: a 3-member etcd,
// SeaweedFS and three adaptd members registered in etcd. Clients write with example ids through
// every member (each call routed by the claims in etcd: served where its shard is held,
// forwarded otherwise) and record what was acknowledged; after each step every acknowledged
// example is present, exactly once, wherever the store is asked from.
//
// - A member SIGKILLed and its data directory deleted: its shards fail over to the others,
//   which read their stores from etcd and object storage, and the writes go on.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapt/v1/cluster.pb.h"
#include "gtest/gtest.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/objstore/s3_object_store.h"
#include "server/objstore/testing/seaweedfs.h"
#include "tests/e2e/durable_log/durable_log_harness.h"

namespace adaptd::durable_log_test {
namespace {

namespace fs = std::filesystem;
using etcd::testing::EtcdCluster;
using testing_util::SeaweedFs;

constexpr int kDim = 4;
constexpr int kMembers = 3;
constexpr int kStores = 6;
constexpr int kShards = 4096;

class ClusterOnEtcd : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("ADAPTD_BIN");
    ASSERT_NE(bin, nullptr) << "ADAPTD_BIN must name the adaptd binary";
    binary_ = bin;
    std::random_device rd;
    root_ = ::testing::TempDir() + "/adaptd-cluster-etcd-" + std::to_string(rd());
    fs::create_directories(root_);
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster =
        EtcdCluster::Start(etcd::testing::EtcdClusterOptions());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    etcd_ = *std::move(cluster);
    absl::StatusOr<std::unique_ptr<SeaweedFs>> s3 = SeaweedFs::Create();
    ASSERT_TRUE(s3.ok()) << s3.status();
    s3_ = *std::move(s3);
    setenv("AWS_ACCESS_KEY_ID", s3_->access_key().c_str(), 1);
    setenv("AWS_SECRET_ACCESS_KEY", s3_->secret_key().c_str(), 1);
    S3Options bucket;
    bucket.url = "s3://adaptd-cluster";
    bucket.endpoint = s3_->endpoint();
    absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = S3ObjectStore::OpenUnchecked(bucket);
    ASSERT_TRUE(objects.ok()) << objects.status();
    ASSERT_TRUE((*objects)->CreateBucket().ok());
  }
  void TearDown() override {
    members_.clear();
    if (!HasFailure()) fs::remove_all(root_);
  }

  // A member's flags: the durable log, its name and its address; a lease of 2 s and a settle
  // time of 1 s keep the test short.
  std::vector<std::string> Flags(const std::string& name) const {
    std::string endpoints;
    for (const std::string& e : etcd_->endpoints()) {
      endpoints += (endpoints.empty() ? "" : ",") + e;
    }
    return {"--etcd-endpoints",    endpoints,
            "--etcd-prefix",       "/cluster/",
            "--etcd-lease-ttl",    "2",
            "--snapshot-store",    "s3://adaptd-cluster/c",
            "--s3-endpoint",       s3_->endpoint(),
            "--cluster-self",      name,
            "--advertise-address", kAddressFlag,
            "--cluster-settle",    "1",
            "--restart-grace",     "20"};
  }
  void StartMembers() {
    for (int i = 0; i < kMembers; ++i) {
      const std::string name = "m" + std::to_string(i);
      members_.push_back(std::make_unique<Adaptd>(binary_, root_ + "/" + name,
                                                  root_ + "/" + name + ".log", Flags(name)));
      ASSERT_NO_FATAL_FAILURE(members_.back()->Start());
    }
  }
  adapt::v1::Adaptation::Stub* Via(int member) { return members_[member]->stub(); }

  // How many shards each member holds, by the claims in etcd.
  std::map<std::string, int> ClaimsByMember() {
    std::map<std::string, int> held;
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = etcd_->Client();
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return held;
    absl::StatusOr<std::vector<mvccpb::KeyValue>> claims =
        (*client)->RangePrefix("/cluster/claims/");
    EXPECT_TRUE(claims.ok()) << claims.status();
    if (!claims.ok()) return held;
    for (const mvccpb::KeyValue& kv : *claims) {
      adapt::v1::ShardClaim claim;
      EXPECT_TRUE(claim.ParseFromString(kv.value())) << kv.key();
      ++held[claim.member()];
    }
    return held;
  }
  // Waits (60 s at most) until every shard is claimed by the members named `names`, each
  // holding some; gtest failures otherwise.
  void ExpectShardsHeldBy(const std::set<std::string>& names) {
    std::map<std::string, int> held;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      held = ClaimsByMember();
      int total = 0;
      std::set<std::string> holders;
      for (const auto& [name, n] : held) {
        total += n;
        holders.insert(name);
      }
      if (total == kShards && holders == names) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::string seen;
    for (const auto& [name, n] : held) seen += " " + name + "=" + std::to_string(n);
    ADD_FAILURE() << "the shards' claims did not settle; held:" << seen;
  }

  std::string binary_, root_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<SeaweedFs> s3_;
  std::vector<std::unique_ptr<Adaptd>> members_;
};

// Stores written through every member; one member SIGKILLed and its data directory deleted;
// the writes through the others go on once its shards failed over, and every acknowledged
// example is in every store, asked through each member left.
TEST_F(ClusterOnEtcd, AKilledMembersShardsFailOverWithEveryAcknowledgedWrite) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  for (int i = 0; i < kStores; ++i) {
    ASSERT_NO_FATAL_FAILURE(CreateFaastStore(Via(i % kMembers), "s" + std::to_string(i), kDim));
  }
  std::vector<std::unique_ptr<FaastModel>> models;
  std::vector<std::unique_ptr<Writers>> writers;
  for (int i = 0; i < kStores; ++i) {
    models.push_back(std::make_unique<FaastModel>(kDim));
    writers.push_back(std::make_unique<Writers>(Via(i % kMembers), "s" + std::to_string(i),
                                                models.back().get(), 1, 100 + i));
  }
  for (int i = 0; i < kStores; ++i) {
    EXPECT_TRUE(writers[i]->WaitForAcks(10, std::chrono::seconds(60)))
        << "s" << i << ": no writes acknowledged through member m" << i % kMembers;
  }

  const int killed = kMembers - 1;
  const auto kill_time = std::chrono::steady_clock::now();
  members_[killed]->Kill(SIGKILL);
  fs::remove_all(members_[killed]->data_dir());
  for (int i = killed; i < kStores; i += kMembers) writers[i]->Stop();  // their member is gone
  for (int i = 0; i < kStores; ++i) {
    if (i % kMembers == killed) continue;  // its writer's member is gone
    EXPECT_TRUE(writers[i]->WaitForAcks(10, std::chrono::seconds(90)))
        << "s" << i << ": writes through m" << i % kMembers << " did not go on";
    std::printf(
        "s%d: 10 more writes acknowledged %.1f s after the SIGKILL\n", i,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_time).count());
  }

  ExpectShardsHeldBy({"m0", "m1"});
  for (auto& w : writers) w->Stop();
  for (int i = 0; i < kStores; ++i) {
    const std::string store = "s" + std::to_string(i);
    ResendUnknown(Via(0), store, writers[i]->unknown(), models[i].get());
    for (int m = 0; m < kMembers; ++m) {
      if (m == killed) continue;
      SCOPED_TRACE("through m" + std::to_string(m));
      ExpectStatistics(Via(m), store, *models[i]);
    }
  }
  for (int m = 0; m < kMembers; ++m) {
    if (m == killed) continue;
    adapt::v1::ListStoresRequest request;
    request.set_tenant(kTenant);
    adapt::v1::ListStoresResponse listed;
    ASSERT_TRUE(Via(m)->ListStores(Context(10).get(), request, &listed).ok());
    EXPECT_EQ(listed.stores_size(), kStores) << "listed through m" << m;
  }
}

}  // namespace
}  // namespace adaptd::durable_log_test
