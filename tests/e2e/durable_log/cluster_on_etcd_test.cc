// The cluster on etcd end to end (docs/CLUSTER_ETCD.md), with real processes: a 3-member etcd,
// SeaweedFS and three adaptd members registered in etcd. Clients write with example ids through
// every member (each call routed by the claims in etcd: served where its shard is held,
// forwarded otherwise) and record what was acknowledged; after each step every acknowledged
// example is present, exactly once, wherever the store is asked from.
//
// - A member SIGKILLed and its data directory deleted: its shards fail over to the others,
//   which read their stores from etcd and object storage, and the writes go on.
// - A rolling restart within the restart grace: no shard changes holder.
// - A fourth member joins and wins about a quarter of the shards; drained, it gives them back.
// - A member paused past its lease: the others take its shards; running again, it stops.
// - Stores created from a base that another member holds; the base's delete refused while used.
// - A tenant's memory limit held over the stores of every member (the members' usage exchange).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
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
    for (auto& w : writers_) w->Stop();
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
  // Flags every member started from here on gets after Flags'.
  void AddFlags(const std::vector<std::string>& flags) {
    extra_flags_.insert(extra_flags_.end(), flags.begin(), flags.end());
  }
  void StartMembers(int n = kMembers) {
    for (int i = 0; i < n; ++i) ASSERT_NO_FATAL_FAILURE(AddMember());
  }
  void AddMember() {
    const std::string name = "m" + std::to_string(members_.size());
    std::vector<std::string> flags = Flags(name);
    flags.insert(flags.end(), extra_flags_.begin(), extra_flags_.end());
    members_.push_back(std::make_unique<Adaptd>(binary_, root_ + "/" + name,
                                                root_ + "/" + name + ".log", std::move(flags)));
    ASSERT_NO_FATAL_FAILURE(members_.back()->Start());
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
  // Waits (90 s at most) until every shard is claimed by the members named `names`, each
  // holding some; gtest failures otherwise.
  void ExpectShardsHeldBy(const std::set<std::string>& names) {
    std::map<std::string, int> held;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
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

  // Each shard's holder, by the claims in etcd.
  std::map<std::string, std::string> Holders() {
    std::map<std::string, std::string> holders;
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = etcd_->Client();
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return holders;
    absl::StatusOr<std::vector<mvccpb::KeyValue>> claims =
        (*client)->RangePrefix("/cluster/claims/");
    EXPECT_TRUE(claims.ok()) << claims.status();
    if (!claims.ok()) return holders;
    for (const mvccpb::KeyValue& kv : *claims) {
      adapt::v1::ShardClaim claim;
      EXPECT_TRUE(claim.ParseFromString(kv.value())) << kv.key();
      holders[kv.key()] = claim.member();
    }
    return holders;
  }
  // Each registered member's state, by its record in etcd.
  std::map<std::string, std::string> States() {
    std::map<std::string, std::string> states;
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = etcd_->Client();
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return states;
    absl::StatusOr<std::vector<mvccpb::KeyValue>> records =
        (*client)->RangePrefix("/cluster/members/");
    EXPECT_TRUE(records.ok()) << records.status();
    if (!records.ok()) return states;
    for (const mvccpb::KeyValue& kv : *records) {
      adapt::v1::ClusterMemberRecord record;
      EXPECT_TRUE(record.ParseFromString(kv.value())) << kv.key();
      states[record.name()] = adapt::v1::ClusterMemberRecord::State_Name(record.state());
    }
    return states;
  }
  adapt::v1::ClusterStatusResponse Status(int via) {
    adapt::v1::ClusterStatusResponse status;
    const grpc::Status got =
        Via(via)->ClusterStatus(Context(20).get(), adapt::v1::ClusterStatusRequest(), &status);
    EXPECT_TRUE(got.ok()) << got.error_message();
    return status;
  }
  // Writers on stores s0.. each through member i % `through`, after creating the stores.
  void StartWriters(int through) {
    for (int i = 0; i < kStores; ++i) {
      ASSERT_NO_FATAL_FAILURE(CreateFaastStore(Via(i % through), "s" + std::to_string(i), kDim));
    }
    for (int i = 0; i < kStores; ++i) {
      models_.push_back(std::make_unique<FaastModel>(kDim));
      writers_.push_back(std::make_unique<Writers>(Via(i % through), "s" + std::to_string(i),
                                                   models_.back().get(), 1, 100 + i));
    }
  }
  // Waits until each writer had `more` calls acknowledged (90 s at most).
  void ExpectWritesGoOn(uint64_t more) {
    for (int i = 0; i < kStores; ++i) {
      EXPECT_TRUE(writers_[i]->WaitForAcks(more, std::chrono::seconds(90)))
          << "s" << i << ": writes are not acknowledged";
    }
  }
  // Stops the writers, resends what they did not see acknowledged, and checks every store
  // through every member in `through` against its acknowledged examples.
  void ExpectEveryAcknowledgedExample(const std::vector<int>& through) {
    for (auto& w : writers_) w->Stop();
    for (int i = 0; i < kStores; ++i) {
      const std::string store = "s" + std::to_string(i);
      ResendUnknown(Via(through[0]), store, writers_[i]->unknown(), models_[i].get());
      for (int m : through) {
        SCOPED_TRACE("s" + std::to_string(i) + " through m" + std::to_string(m));
        ExpectStatistics(Via(m), store, *models_[i]);
      }
    }
  }

  std::vector<std::unique_ptr<FaastModel>> models_;
  std::vector<std::unique_ptr<Writers>> writers_;
  std::string binary_, root_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<SeaweedFs> s3_;
  std::vector<std::unique_ptr<Adaptd>> members_;
  std::vector<std::string> extra_flags_;
};

// Stores written through every member; one member SIGKILLed and its data directory deleted;
// the writes through the others go on once its shards failed over, and every acknowledged
// example is in every store, asked through each member left.
TEST_F(ClusterOnEtcd, AKilledMembersShardsFailOverWithEveryAcknowledgedWrite) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  ASSERT_NO_FATAL_FAILURE(StartWriters(kMembers));
  ExpectWritesGoOn(10);

  const int killed = kMembers - 1;
  const auto kill_time = std::chrono::steady_clock::now();
  members_[killed]->Kill(SIGKILL);
  fs::remove_all(members_[killed]->data_dir());
  for (int i = killed; i < kStores; i += kMembers) writers_[i]->Stop();  // their member is gone
  for (int i = 0; i < kStores; ++i) {
    if (i % kMembers == killed) continue;
    EXPECT_TRUE(writers_[i]->WaitForAcks(10, std::chrono::seconds(90)))
        << "s" << i << ": writes through m" << i % kMembers << " did not go on";
    std::printf(
        "s%d: 10 more writes acknowledged %.1f s after the SIGKILL\n", i,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_time).count());
  }
  ExpectShardsHeldBy({"m0", "m1"});
  ExpectEveryAcknowledgedExample({0, 1});
  for (int m = 0; m < kMembers; ++m) {
    if (m == killed) continue;
    adapt::v1::ListStoresRequest request;
    request.set_tenant(kTenant);
    adapt::v1::ListStoresResponse listed;
    ASSERT_TRUE(Via(m)->ListStores(Context(10).get(), request, &listed).ok());
    EXPECT_EQ(listed.stores_size(), kStores) << "listed through m" << m;
  }
}

// A rolling restart: each member in turn stopped with SIGTERM and started again within the
// restart grace. No shard changes holder, and every acknowledged example is there.
TEST_F(ClusterOnEtcd, ARollingRestartWithinTheGraceMovesNoShard) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  ASSERT_NO_FATAL_FAILURE(StartWriters(kMembers));
  ExpectWritesGoOn(5);
  const std::map<std::string, std::string> before = Holders();
  for (int m = 0; m < kMembers; ++m) {
    const int status = members_[m]->Kill(SIGTERM);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "m" << m << ": " << status;
    ASSERT_NO_FATAL_FAILURE(members_[m]->Start());
  }
  ExpectWritesGoOn(5);
  const std::map<std::string, std::string> after = Holders();
  int moved = 0;
  std::map<std::string, int> moves;  // "FROM -> TO": shards
  for (const auto& [shard, holder] : before) {
    const auto it = after.find(shard);
    if (it == after.end() || it->second != holder) {
      ++moved;
      ++moves[holder + " -> " + (it == after.end() ? "nobody" : it->second)];
    }
  }
  for (const auto& [move, n] : moves) std::printf("  %s: %d\n", move.c_str(), n);
  std::printf("a rolling restart of %d members moved %d of %zu shards\n", kMembers, moved,
              before.size());
  EXPECT_EQ(moved, 0);
  EXPECT_EQ(before.size(), static_cast<size_t>(kShards));
  // Each member READY again once its shards are open (in etcd, then as every member says).
  const std::map<std::string, std::string> ready = {
      {"m0", "READY"}, {"m1", "READY"}, {"m2", "READY"}};
  for (int i = 0; i < 300 && States() != ready; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(States(), ready);
  const adapt::v1::ClusterStatusResponse status = Status(1);
  ASSERT_EQ(status.members_size(), kMembers);
  for (const adapt::v1::MemberStatus& m : status.members()) {
    EXPECT_EQ(m.state(), "READY") << m.name();
    EXPECT_TRUE(m.error().empty()) << m.name() << ": " << m.error();
  }
  EXPECT_EQ(status.shards_without_holder(), 0u);
  ExpectEveryAcknowledgedExample({0, 1, 2});
}

// A fourth member joins under writes and wins about a quarter of the shards (only those change
// holder); then it is drained (DrainMember waits until it holds none) and its shards go back.
TEST_F(ClusterOnEtcd, AFourthMemberWinsAQuarterAndADrainGivesItBack) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  ASSERT_NO_FATAL_FAILURE(StartWriters(kMembers));
  ExpectWritesGoOn(5);
  const std::map<std::string, std::string> three = Holders();
  ASSERT_NO_FATAL_FAILURE(AddMember());
  ExpectShardsHeldBy({"m0", "m1", "m2", "m3"});
  const std::map<std::string, std::string> four = Holders();
  int moved = 0, to_new = 0;
  for (const auto& [shard, holder] : four) {
    if (three.at(shard) != holder) ++moved;
    if (holder == "m3") ++to_new;
  }
  std::printf("3 -> 4 members moved %d of %d shards (%.3f), all to the new member: %s\n", moved,
              kShards, static_cast<double>(moved) / kShards, moved == to_new ? "yes" : "no");
  EXPECT_EQ(moved, to_new);
  EXPECT_GT(moved, kShards / 6);
  EXPECT_LT(moved, kShards / 3);
  ExpectWritesGoOn(5);

  adapt::v1::DrainMemberRequest drain;
  drain.set_member("m3");
  drain.set_wait(true);
  adapt::v1::DrainMemberResponse drained;
  const grpc::Status status = Via(0)->DrainMember(Context(120).get(), drain, &drained);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (const adapt::v1::MemberStatus& m : drained.status().members()) {
    if (m.name() == "m3") {
      EXPECT_EQ(m.state(), "DRAINING");
      EXPECT_EQ(m.shards(), 0u);
    }
  }
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  const std::map<std::string, std::string> back = Holders();
  EXPECT_EQ(back, three) << "the drain gave the shards to other members than before";
  ExpectWritesGoOn(5);
  ExpectEveryAcknowledgedExample({0, 1, 2, 3});
}

// A member paused (SIGSTOP) past its lease: the others take its shards; let run again
// (SIGCONT) it learns its lease is gone, acknowledges nothing more and stops with status 1,
// and every acknowledged example is there.
TEST_F(ClusterOnEtcd, AMemberPausedPastItsLeaseStopsAndAcknowledgesNothingStale) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  ASSERT_NO_FATAL_FAILURE(StartWriters(kMembers));
  ExpectWritesGoOn(5);
  const int paused = kMembers - 1;
  members_[paused]->Signal(SIGSTOP);
  ExpectShardsHeldBy({"m0", "m1"});
  members_[paused]->Signal(SIGCONT);
  const int status = members_[paused]->WaitExit(std::chrono::seconds(60));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1)
      << "the paused member did not stop on its lost lease: " << status;
  for (int i = paused; i < kStores; i += kMembers) writers_[i]->Stop();  // their member is gone
  for (int i = 0; i < kStores; ++i) {
    if (i % kMembers == paused) continue;
    EXPECT_TRUE(writers_[i]->WaitForAcks(5, std::chrono::seconds(90))) << "s" << i;
  }
  ExpectEveryAcknowledgedExample({0, 1});
}

// Base stores across members: stores created from a base through every member (most of them in
// shards another member than the base's holder holds) read the base's published read-out from
// its holder; the base cannot be deleted while any of them exists, wherever it is held.
TEST_F(ClusterOnEtcd, StoresCreatedFromABaseAnyMemberHoldsAndItsDeleteRefusedWhileUsed) {
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});
  ASSERT_NO_FATAL_FAILURE(CreateFaastStore(Via(0), "base", kDim));
  FaastModel model(kDim);
  std::mt19937 rng(7);
  uint64_t seq = 0;
  ASSERT_NO_FATAL_FAILURE(SendNew(Via(1), "base", MakeCall(&rng, kDim, 6, "base", &seq), &model));
  adapt::v1::CompileRequest compile;
  compile.set_tenant(kTenant);
  compile.set_store("base");
  adapt::v1::CompileResponse compiled;
  ASSERT_TRUE(Via(2)->Compile(Context(20).get(), compile, &compiled).ok());

  constexpr int kDependants = 9;
  for (int i = 0; i < kDependants; ++i) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(kTenant);
    create.set_store("d" + std::to_string(i));
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    create.mutable_spec()->set_base("base");
    create.mutable_spec()->mutable_faast()->set_ridge(0.5);
    adapt::v1::StoreInfo info;
    const grpc::Status status = Via(i % kMembers)->CreateStore(Context(20).get(), create, &info);
    ASSERT_TRUE(status.ok()) << "d" << i << ": " << status.error_message();
    EXPECT_EQ(info.spec().base(), std::string(kTenant) + "/base");
    EXPECT_EQ(info.spec().dim(), static_cast<uint32_t>(kDim));
  }
  adapt::v1::DeleteStoreRequest remove;
  remove.set_tenant(kTenant);
  remove.set_store("base");
  adapt::v1::DeleteStoreResponse removed;
  const grpc::Status refused = Via(1)->DeleteStore(Context(20).get(), remove, &removed);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << refused.error_message();
  EXPECT_NE(refused.error_message().find("is the base of"), std::string::npos)
      << refused.error_message();
  for (int i = 0; i < kDependants; ++i) {
    adapt::v1::DeleteStoreRequest dependant;
    dependant.set_tenant(kTenant);
    dependant.set_store("d" + std::to_string(i));
    ASSERT_TRUE(Via(0)->DeleteStore(Context(20).get(), dependant, &removed).ok()) << i;
  }
  // A read for a create keeps the base from deletion a little while (the creates' lease).
  grpc::Status deleted;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    deleted = Via(2)->DeleteStore(Context(20).get(), remove, &removed);
    if (deleted.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  } while (deleted.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
           deleted.error_message().find("is the base of") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(deleted.ok()) << deleted.error_message();
}

// A tenant's memory limit over the cluster (docs/CLUSTER.md, "Quotas"): stores created and
// grown through every member, each held by whichever member holds its shard, until the limit
// refuses them. Each member alone would hold the tenant to the whole limit (three limits' worth
// in all); the members' usage exchange holds their sum within about 10% of the one limit, and
// a refusal at any member counts the memory the others hold.
TEST_F(ClusterOnEtcd, ATenantsMemoryLimitHoldsOverTheStoresOfEveryMember) {
  constexpr uint64_t kLimit = 400000;
  constexpr int kIntervalMs = 200;
  constexpr int kStoreDim = 32;  // a store grown by one write holds about 11 kB
  const std::string config = root_ + "/quotas.json";
  std::ofstream(config) << R"({"tenant_quotas": {"mem": {"max_memory_bytes": )" << kLimit << "}}}";
  AddFlags({"--config", config, "--usage-interval-ms", std::to_string(kIntervalMs)});
  ASSERT_NO_FATAL_FAILURE(StartMembers());
  ExpectShardsHeldBy({"m0", "m1", "m2"});

  // Each step creates a store, writes to it and compiles it through the next member; a
  // refused step is
  // tried again after a few exchanges, and three refusals in a row (through three members)
  // end it.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(0, 1);
  std::vector<std::string> stores;
  std::string refusal;
  int refused_in_a_row = 0;
  for (int i = 0; i < 100 && refused_in_a_row < kMembers; ++i) {
    adapt::v1::Adaptation::Stub* via = Via(i % kMembers);
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("mem");
    create.set_store("q" + std::to_string(i));
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    create.mutable_spec()->set_dim(kStoreDim);
    adapt::v1::StoreInfo info;
    grpc::Status status = via->CreateStore(Context(20).get(), create, &info);
    if (status.ok()) {
      stores.push_back(create.store());
      adapt::v1::AdaptRequest write;
      write.set_tenant("mem");
      write.set_store(create.store());
      for (const char* label : {"north", "south"}) {
        adapt::v1::Example* e = write.add_examples();
        e->set_label(label);
        for (int d = 0; d < kStoreDim; ++d)
          e->mutable_input()->mutable_vector()->add_values(unit(rng));
      }
      adapt::v1::AdaptResponse written;
      auto ctx = Context(20);
      auto writer = via->Adapt(ctx.get(), &written);
      writer->Write(write);
      writer->WritesDone();
      status = writer->Finish();
    }
    if (status.ok()) {
      // Compiled now, so all it grows by is there before the next step is counted.
      adapt::v1::CompileRequest compile;
      compile.set_tenant("mem");
      compile.set_store(create.store());
      adapt::v1::CompileResponse compiled;
      status = via->Compile(Context(20).get(), compile, &compiled);
    }
    if (status.ok()) {
      refused_in_a_row = 0;
      // The members exchange usage before the next step (a loaded machine's rounds run late).
      std::this_thread::sleep_for(std::chrono::milliseconds(2 * kIntervalMs));
      continue;
    }
    ASSERT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    refusal = status.error_message();
    ASSERT_NE(refusal.find("quota max_memory_bytes: tenant 'mem' may use at most 400000 bytes"),
              std::string::npos)
        << refusal;
    ++refused_in_a_row;
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * kIntervalMs));
  }
  ASSERT_EQ(refused_in_a_row, kMembers) << stores.size() << " stores created";

  uint64_t held = 0, largest = 0;
  for (const std::string& store : stores) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant("mem");
    get.set_store(store);
    adapt::v1::StoreInfo info;
    const grpc::Status status = Via(0)->GetStore(Context(20).get(), get, &info);
    ASSERT_TRUE(status.ok()) << store << ": " << status.error_message();
    held += info.memory_bytes();
    largest = std::max<uint64_t>(largest, info.memory_bytes());
  }
  ASSERT_GE(kLimit / largest, 30u) << "the stores are too large for the limit to count";
  // Within 10% of the limit: a step passes while its member is under its part of the headroom,
  // and what it then grows by (a write's growth is known once applied) may cross it.
  EXPECT_GT(held, kLimit * 9 / 10) << stores.size() << " stores";
  EXPECT_LT(held, kLimit * 11 / 10) << stores.size() << " stores";
  // The last refusal (after exchanges with no change since) counts what the tenant holds over
  // the cluster, more than the refusing member's part.
  const std::regex counted("its stores use ([0-9]+) \\(([0-9]+) on this member\\)");
  std::smatch used;
  ASSERT_TRUE(std::regex_search(refusal, used, counted)) << refusal;
  EXPECT_EQ(std::stoull(used[1]), held) << refusal;
  EXPECT_LT(std::stoull(used[2]), held) << refusal;

  // The members answer each other's USAGE (memory held here, per tenant with a limit); the
  // static cluster's store slots are not theirs to give.
  adapt::v1::ClusterQuotaRequest usage;
  usage.set_op(adapt::v1::ClusterQuotaRequest::USAGE);
  uint64_t reported = 0;
  for (int m = 0; m < kMembers; ++m) {
    adapt::v1::ClusterQuotaResponse answer;
    const grpc::Status status = Via(m)->ClusterQuota(Context(20).get(), usage, &answer);
    ASSERT_TRUE(status.ok()) << "m" << m << ": " << status.error_message();
    for (const adapt::v1::TenantUsage& u : answer.tenants()) {
      if (u.tenant() == "mem") reported += u.memory_bytes();
    }
  }
  EXPECT_EQ(reported, held);
  std::printf("memory limit %llu bytes: %zu stores hold %llu over the cluster\n",
              static_cast<unsigned long long>(kLimit), stores.size(),
              static_cast<unsigned long long>(held));
  adapt::v1::ClusterQuotaRequest reserve;
  reserve.set_op(adapt::v1::ClusterQuotaRequest::RESERVE);
  reserve.set_tenant("mem");
  reserve.set_store("q0");
  adapt::v1::ClusterQuotaResponse answer;
  const grpc::Status slot = Via(0)->ClusterQuota(Context(20).get(), reserve, &answer);
  EXPECT_EQ(slot.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(slot.error_message().find("store counts are exact through etcd"), std::string::npos)
      << slot.error_message();
}

}  // namespace
}  // namespace adaptd::durable_log_test
