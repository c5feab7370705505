// The durable log's fault tests (docs/DURABLE_LOG.md), each with real processes: a 3-member
// etcd, SeaweedFS and adaptd. Clients write with example ids and record what was acknowledged;
// at the end adaptd starts on an empty data directory, resends the calls whose outcome is
// unknown (each applied entirely or not at all), and every store's exported faast statistics
// must equal the float64 model of the acknowledged calls exactly: nothing lost, nothing applied
// twice, nothing half-applied.
//
// - The etcd leader killed, wiped, removed and replaced by a new member while clients write.
// - Object storage stopped: small writes go on, a write past the inline bound is refused
//   UNAVAILABLE; once it is back, snapshots resume and the log they cover is trimmed.
// - A stale fence: a server paused past its lease while another takes the claim can
//   acknowledge nothing once it runs again.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

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

class DurableLogFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("ADAPTD_BIN");
    ASSERT_NE(bin, nullptr) << "ADAPTD_BIN must name the adaptd binary";
    binary_ = bin;
    std::random_device rd;
    root_ = ::testing::TempDir() + "/adaptd-durable-faults-" + std::to_string(rd());
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
    bucket.url = "s3://adaptd-faults";
    bucket.endpoint = s3_->endpoint();
    absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = S3ObjectStore::OpenUnchecked(bucket);
    ASSERT_TRUE(objects.ok()) << objects.status();
    ASSERT_TRUE((*objects)->CreateBucket().ok());
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  // The durable log's flags, with `lease_ttl` seconds.
  std::vector<std::string> Flags(int lease_ttl) const {
    std::string endpoints;
    for (const std::string& e : etcd_->endpoints()) {
      endpoints += (endpoints.empty() ? "" : ",") + e;
    }
    return {"--etcd-endpoints", endpoints,
            "--etcd-prefix",    kPrefix,
            "--etcd-lease-ttl", std::to_string(lease_ttl),
            "--snapshot-store", "s3://adaptd-faults/faults",
            "--s3-endpoint",    s3_->endpoint()};
  }
  std::unique_ptr<Adaptd> Server(const std::string& name, int lease_ttl) {
    return std::make_unique<Adaptd>(binary_, root_ + "/" + name, root_ + "/" + name + ".log",
                                    Flags(lease_ttl));
  }
  // The keys of `store`'s log in etcd (records past its last stored state).
  size_t LogKeys(const std::string& store) {
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = etcd_->Client();
    if (!client.ok()) return 0;
    absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
        (*client)->RangePrefix(std::string(kPrefix) + "log/" + kTenant + "/" + store + "/", true);
    EXPECT_TRUE(keys.ok()) << keys.status();
    return keys.ok() ? keys->size() : 0;
  }

  static constexpr char kPrefix[] = "/faults/";
  std::string binary_, root_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<SeaweedFs> s3_;
};

// Clients stream Adapt calls while the etcd leader is killed, its data wiped, it is removed and
// a new member added in its place; then, with the new member part of every quorum (another of
// the first members stopped), writes go on. adaptd restarted on an empty disk has every
// acknowledged example.
TEST_F(DurableLogFaults, LeaderKilledWipedRemovedAndReplacedUnderWrites) {
  std::unique_ptr<Adaptd> server = Server("leader", 5);
  ASSERT_NO_FATAL_FAILURE(server->Start());
  ASSERT_NO_FATAL_FAILURE(CreateFaastStore(server->stub(), "fa", kDim));
  FaastModel model(kDim);
  Writers writers(server->stub(), "fa", &model, 3, 1);
  ASSERT_TRUE(writers.WaitForAcks(50, std::chrono::seconds(60)));

  absl::StatusOr<int> leader = etcd_->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  ASSERT_TRUE(etcd_->Kill(*leader).ok());
  const uint64_t at_kill = writers.acked();
  EXPECT_TRUE(writers.WaitForAcks(50, std::chrono::seconds(60)))
      << "writes did not go on without the leader";
  ASSERT_TRUE(etcd_->Wipe(*leader).ok());
  ASSERT_TRUE(etcd_->RemoveMember(*leader).ok());
  absl::StatusOr<int> added = etcd_->AddMember();
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_TRUE(writers.WaitForAcks(50, std::chrono::seconds(60)))
      << "writes did not go on after the new member joined";
  // One of the first members stopped: a quorum now needs the new one.
  int other = -1;
  for (int i = 0; i < etcd_->size(); ++i) {
    if (i != *leader && i != *added && etcd_->running(i)) other = i;
  }
  ASSERT_GE(other, 0);
  ASSERT_TRUE(etcd_->Stop(other).ok());
  EXPECT_TRUE(writers.WaitForAcks(50, std::chrono::seconds(60)))
      << "writes did not go on with the new member in the quorum";
  ASSERT_TRUE(etcd_->Restart(other).ok());
  ASSERT_TRUE(writers.WaitForAcks(20, std::chrono::seconds(60)));
  writers.Stop();
  std::printf(
      "leader %d replaced by member %d: %llu calls acknowledged (%llu after the kill), "
      "%llu failed\n",
      *leader, *added, static_cast<unsigned long long>(writers.acked()),
      static_cast<unsigned long long>(writers.acked() - at_kill),
      static_cast<unsigned long long>(writers.failed()));
  // UNAVAILABLE from the server; DEADLINE_EXCEEDED is the client's own 20 s.
  for (const auto& [code, count] : writers.codes()) {
    EXPECT_TRUE(code == grpc::StatusCode::UNAVAILABLE ||
                code == grpc::StatusCode::DEADLINE_EXCEEDED)
        << count << " calls failed with code " << code;
  }

  // SIGKILL, the disk lost, a start on an empty one.
  server->Kill(SIGKILL);
  fs::remove_all(root_ + "/leader");
  ASSERT_NO_FATAL_FAILURE(server->Start());
  const int applied = ResendUnknown(server->stub(), "fa", writers.unknown(), &model);
  std::printf("%zu failed calls resent, %d of them applied before\n", writers.unknown().size(),
              applied);
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(server->stub(), "fa", model));
}

// Object storage killed: small writes go on and are acknowledged past the store's snapshot bound,
// the snapshot the bound asks for fails (the store's checkpoint error says so), and a write whose
// record is past 64 KiB (600 examples at d = 32, written as an object first) is refused UNAVAILABLE
// with nothing applied. Object storage back: the snapshot is written and the log it covers trimmed,
// the refused writes apply when sent again, and adaptd restarted on an empty disk has every
// acknowledged example.
TEST_F(DurableLogFaults, ObjectStorageStoppedThenBack) {
  constexpr int kBigDim = 32;
  constexpr int kBigExamples = 600;
  // A store's state is written to object storage, and its log trimmed, once the log holds this
  // many records (EtcdDurability's snapshot_records; no flag sets it).
  constexpr size_t kSnapshotRecords = 1024;
  std::unique_ptr<Adaptd> server = Server("objects", 5);
  ASSERT_NO_FATAL_FAILURE(server->Start());
  ASSERT_NO_FATAL_FAILURE(CreateFaastStore(server->stub(), "fa", kDim));
  ASSERT_NO_FATAL_FAILURE(CreateFaastStore(server->stub(), "big", kBigDim));
  FaastModel model(kDim), big(kBigDim);
  std::mt19937 rng(37);
  uint64_t big_seq = 0;
  const auto big_call = [&] { return MakeCall(&rng, kBigDim, kBigExamples, "big", &big_seq); };
  ASSERT_NO_FATAL_FAILURE(SendNew(server->stub(), "big", big_call(), &big, true));

  // Object storage gone; small writes until the store's log passes its bound, and more once
  // the snapshot it asked for has failed.
  s3_->Kill();
  auto writers = std::make_unique<Writers>(server->stub(), "fa", &model, 8, 2);
  const auto past_bound = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::string checkpoint_error;
  while (checkpoint_error.empty() && std::chrono::steady_clock::now() < past_bound) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    checkpoint_error = Info(server->stub(), "fa").checkpoint_error();
  }
  EXPECT_FALSE(checkpoint_error.empty()) << "no snapshot was tried past the bound";
  EXPECT_GE(LogKeys("fa"), kSnapshotRecords);
  ASSERT_TRUE(writers->WaitForAcks(20, std::chrono::seconds(60)))
      << "small writes stopped once snapshots failed";
  writers->Stop();
  const uint64_t acked_while_down = writers->acked();
  EXPECT_EQ(writers->failed(), 0u) << "small writes failed while object storage was down";
  std::vector<Call> unknown = writers->unknown();
  std::vector<Call> refused;
  for (int i = 0; i < 2; ++i) {
    refused.push_back(big_call());
    adapt::v1::AdaptResponse response;
    const grpc::Status status = SendAdapt(server->stub(), "big", refused.back(), &response, true);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    if (i == 0) std::printf("a large write refused: %s\n", status.error_message().c_str());
  }
  EXPECT_EQ(Info(server->stub(), "big").examples(), big.examples);

  // Object storage back: the next append past the bound asks for a snapshot, and it is written.
  ASSERT_TRUE(s3_->Start().ok());
  writers = std::make_unique<Writers>(server->stub(), "fa", &model, 2, 4);
  const auto resumed = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  size_t log_keys = LogKeys("fa");
  while ((log_keys >= kSnapshotRecords || !checkpoint_error.empty()) &&
         std::chrono::steady_clock::now() < resumed) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    checkpoint_error = Info(server->stub(), "fa").checkpoint_error();
    log_keys = LogKeys("fa");
  }
  writers->Stop();
  for (const Call& call : writers->unknown()) unknown.push_back(call);
  EXPECT_TRUE(checkpoint_error.empty()) << checkpoint_error;
  EXPECT_LT(log_keys, kSnapshotRecords) << "the log was not trimmed by a snapshot";
  for (const Call& call : refused) {
    ASSERT_NO_FATAL_FAILURE(SendNew(server->stub(), "big", call, &big, true)) << "a refused call";
  }
  std::printf(
      "%llu small calls acknowledged with object storage down; the log held %zu records "
      "once a snapshot was written\n",
      static_cast<unsigned long long>(acked_while_down), log_keys);

  server->Kill(SIGKILL);
  fs::remove_all(root_ + "/objects");
  ASSERT_NO_FATAL_FAILURE(server->Start());
  ASSERT_NO_FATAL_FAILURE(ResendUnknown(server->stub(), "fa", unknown, &model));
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(server->stub(), "fa", model));
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(server->stub(), "big", big));
}

// Server A (lease 2 s) acknowledges writes, then is stopped (SIGSTOP) past its lease; server B
// starts on the same etcd prefix and bucket, takes the claim and acknowledges writes of its
// own. A, running again, must refuse every write (UNAVAILABLE) and acknowledge none; B has A's
// acknowledged examples and its own, and so does a server started on an empty disk after B.
TEST_F(DurableLogFaults, StaleFenceAcknowledgesNothing) {
  std::unique_ptr<Adaptd> a = Server("a", 2);
  ASSERT_NO_FATAL_FAILURE(a->Start());
  ASSERT_NO_FATAL_FAILURE(CreateFaastStore(a->stub(), "fa", kDim));
  FaastModel model(kDim);
  std::mt19937 rng(38);
  uint64_t seq = 0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_NO_FATAL_FAILURE(SendNew(a->stub(), "fa", MakeCall(&rng, kDim, 3, "a", &seq), &model));
  }
  a->Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // past A's lease (2 s)

  std::unique_ptr<Adaptd> b = Server("b", 2);
  ASSERT_NO_FATAL_FAILURE(b->Start());
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(b->stub(), "fa", model)) << "A's writes through B";
  for (int i = 0; i < 20; ++i) {
    ASSERT_NO_FATAL_FAILURE(SendNew(b->stub(), "fa", MakeCall(&rng, kDim, 3, "b", &seq), &model));
  }

  // The calls spread over 5 s, past A's lease keeper noticing its lease went.
  a->Signal(SIGCONT);
  std::vector<Call> stale;
  for (int i = 0; i < 10; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stale.push_back(MakeCall(&rng, kDim, 3, "stale", &seq));
    adapt::v1::AdaptResponse response;
    const grpc::Status status = SendAdapt(a->stub(), "fa", stale.back(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "call " << i << " to the stale server: " << status.error_message();
    if (i == 0) std::printf("the stale server refused: %s\n", status.error_message().c_str());
  }
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(b->stub(), "fa", model));
  a->Kill(SIGKILL);

  // What etcd and the bucket hold: a server on an empty disk after B, and the stale calls
  // apply there as new ones.
  b->Kill(SIGKILL);
  std::unique_ptr<Adaptd> c = Server("c", 2);
  ASSERT_NO_FATAL_FAILURE(c->Start());
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(c->stub(), "fa", model));
  for (const Call& call : stale) {
    ASSERT_NO_FATAL_FAILURE(SendNew(c->stub(), "fa", call, &model)) << "a refused call";
  }
  ASSERT_NO_FATAL_FAILURE(ExpectStatistics(c->stub(), "fa", model));
}

}  // namespace
}  // namespace adaptd::durable_log_test
