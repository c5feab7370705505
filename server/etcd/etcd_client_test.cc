// EtcdClient and LeaseKeeper against real etcd members started by EtcdCluster: EtcdKv shares
// one 3-member cluster; each EtcdFaults test kills, pauses, fills or reshapes a cluster of its
// own; EtcdConnect needs none; EtcdTls runs one member over https with client certificates.
// EtcdWatcher has its own file (etcd_watcher_test.cc) in the same binary.
#include "server/etcd/etcd_client.h"

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/etcd/testing/test_cluster.h"

namespace adaptd::etcd {
namespace {

using etcd::testing::ClientOf;
using etcd::testing::EtcdCluster;
using etcd::testing::EtcdClusterOptions;
using etcd::testing::StartCluster;
using etcdserverpb::Compare;
using etcdserverpb::RangeRequest;
using etcdserverpb::RequestOp;
using etcdserverpb::TxnRequest;

etcdserverpb::PutRequest PutOf(const std::string& key, const std::string& value,
                               int64_t lease = 0) {
  etcdserverpb::PutRequest put;
  put.set_key(key);
  put.set_value(value);
  put.set_lease(lease);
  return put;
}

RequestOp PutOp(const std::string& key, const std::string& value) {
  RequestOp op;
  *op.mutable_request_put() = PutOf(key, value);
  return op;
}

Compare ValueIs(const std::string& key, const std::string& value) {
  Compare compare;
  compare.set_key(key);
  compare.set_target(Compare::VALUE);
  compare.set_result(Compare::EQUAL);
  compare.set_value(value);
  return compare;
}

// The key's value, or "" when it does not exist.
std::string ValueOf(EtcdClient& client, const std::string& key) {
  RangeRequest request;
  request.set_key(key);
  absl::StatusOr<etcdserverpb::RangeResponse> response = client.Range(request);
  EXPECT_TRUE(response.ok()) << response.status();
  if (!response.ok() || response->kvs().empty()) return "";
  return response->kvs(0).value();
}

TEST(EtcdConnect, RejectsBadOptions) {
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Connect({}).status()));
  for (const char* endpoint : {"unix:///tmp/etcd.sock", "localhost", "http://h:port"}) {
    EtcdOptions options;
    options.endpoints = {endpoint};
    EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Connect(options).status())) << endpoint;
  }
  EtcdOptions options;
  options.endpoints = {"127.0.0.1:2379"};
  options.cert_file = "/nonexistent/client.pem";
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Connect(options).status()));
  options.key_file = "/nonexistent/client.key";
  absl::Status missing = EtcdClient::Connect(options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(missing));
  EXPECT_NE(missing.message().find("cert_file"), std::string::npos) << missing;
  EXPECT_FALSE(IsOutcomeUnknown(absl::UnavailableError("x")));
}

TEST(EtcdConnect, NormalisesEndpointsAndRefusesOthers) {
  EtcdOptions options;
  options.endpoints = {"http://127.0.0.1:1", "127.0.0.1:2", "https://localhost:3/"};
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->endpoints(),
            (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2", "localhost:3"}));
  EXPECT_TRUE(absl::IsInvalidArgument((*client)->Status("127.0.0.1:4").status()));
}

TEST(EtcdConnect, NothingListeningIsUnavailableAndNotSent) {
  EtcdOptions options;
  options.endpoints = {"127.0.0.1:1"};  // nothing listens on port 1
  options.call_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Status put = (*client)->Put(PutOf("k", "v")).status();
  EXPECT_TRUE(absl::IsUnavailable(put)) << put;
  EXPECT_FALSE(IsOutcomeUnknown(put)) << put;
  EXPECT_NE(put.message().find("127.0.0.1:1"), std::string::npos) << put;
}

class EtcdKv : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = StartCluster().release(); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    client_ = ClientOf(*cluster_);
    ASSERT_NE(client_, nullptr);
  }
  static EtcdCluster* cluster_;
  std::unique_ptr<EtcdClient> client_;
};

EtcdCluster* EtcdKv::cluster_ = nullptr;

TEST_F(EtcdKv, PutThenRange) {
  ASSERT_TRUE(client_->Put(PutOf("plain/a", "1")).ok());
  EXPECT_EQ(ValueOf(*client_, "plain/a"), "1");
  EXPECT_EQ(ValueOf(*client_, "plain/missing"), "");
}

TEST_F(EtcdKv, RangePrefixPagesAtOneRevision) {
  constexpr int kKeys = 2100;  // three pages of 1000
  for (int first = 0; first < kKeys; first += 100) {
    TxnRequest txn;
    for (int i = first; i < first + 100; ++i) {
      *txn.add_success() = PutOp(absl::StrCat("page/", 10000 + i), "v");
    }
    ASSERT_TRUE(client_->Txn(txn).ok());
  }
  // Keys added while the pages are read must not show: every page is read at the first's
  // revision.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    auto other = ClientOf(*cluster_);
    for (int i = 0; !stop; ++i) other->Put(PutOf(absl::StrCat("page/", 20000 + i), "late")).ok();
  });
  absl::SleepFor(absl::Milliseconds(100));
  int64_t revision = 0;
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
      client_->RangePrefix("page/", false, &revision);
  stop = true;
  writer.join();
  ASSERT_TRUE(keys.ok()) << keys.status();
  RangeRequest count;
  count.set_key("page/");
  count.set_range_end("page0");
  count.set_revision(revision);
  count.set_count_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> at = client_->Range(count);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(static_cast<int64_t>(keys->size()), at->count());
  ASSERT_GE(keys->size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ((*keys)[i].key(), absl::StrCat("page/", 10000 + i));
  for (size_t i = 1; i < keys->size(); ++i) EXPECT_LT((*keys)[i - 1].key(), (*keys)[i].key());
  absl::StatusOr<std::vector<mvccpb::KeyValue>> names = client_->RangePrefix("page/", true);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_GE(names->size(), keys->size());
  EXPECT_EQ((*names)[0].value(), "");
}

TEST_F(EtcdKv, TxnComparesDecide) {
  ASSERT_TRUE(client_->Put(PutOf("txn/k", "v1")).ok());
  TxnRequest txn;
  *txn.add_compare() = ValueIs("txn/k", "v1");
  *txn.add_success() = PutOp("txn/k", "v2");
  *txn.add_failure() = PutOp("txn/failed", "yes");
  absl::StatusOr<etcdserverpb::TxnResponse> first = client_->Txn(txn);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded());
  EXPECT_EQ(ValueOf(*client_, "txn/k"), "v2");
  absl::StatusOr<etcdserverpb::TxnResponse> second = client_->Txn(txn);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->succeeded());
  EXPECT_EQ(ValueOf(*client_, "txn/k"), "v2");
  EXPECT_EQ(ValueOf(*client_, "txn/failed"), "yes");
}

TEST_F(EtcdKv, NestedTxnDecidesEachPart) {
  ASSERT_TRUE(client_->Put(PutOf("nest/a", "1")).ok());
  ASSERT_TRUE(client_->Put(PutOf("nest/b", "1")).ok());
  TxnRequest outer;
  TxnRequest* fails = outer.add_success()->mutable_request_txn();
  *fails->add_compare() = ValueIs("nest/a", "other");
  *fails->add_success() = PutOp("nest/a", "2");
  TxnRequest* holds = outer.add_success()->mutable_request_txn();
  *holds->add_compare() = ValueIs("nest/b", "1");
  *holds->add_success() = PutOp("nest/b", "2");
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(outer);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(response->succeeded());
  ASSERT_EQ(response->responses_size(), 2);
  EXPECT_FALSE(response->responses(0).response_txn().succeeded());
  EXPECT_TRUE(response->responses(1).response_txn().succeeded());
  EXPECT_EQ(ValueOf(*client_, "nest/a"), "1");
  EXPECT_EQ(ValueOf(*client_, "nest/b"), "2");
}

TEST_F(EtcdKv, CompactedRevisionIsOutOfRange) {
  std::vector<int64_t> revisions;
  for (const char* value : {"1", "2", "3"}) {
    absl::StatusOr<etcdserverpb::PutResponse> put = client_->Put(PutOf("compact/k", value));
    ASSERT_TRUE(put.ok()) << put.status();
    revisions.push_back(put->header().revision());
  }
  ASSERT_TRUE(client_->Compact(revisions[1]).ok());
  RangeRequest old;
  old.set_key("compact/k");
  old.set_revision(revisions[0]);
  absl::Status status = client_->Range(old).status();
  EXPECT_TRUE(absl::IsOutOfRange(status)) << status;
  old.set_revision(revisions[2]);
  absl::StatusOr<etcdserverpb::RangeResponse> kept = client_->Range(old);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->kvs(0).value(), "3");
}

TEST_F(EtcdKv, RequestsOverEtcdsLimitsAreInvalidArgument) {
  // etcd's --max-request-bytes is 1.5 MiB; gRPC's own limit is 512 KiB above it.
  for (size_t bytes : {size_t{1600} * 1024, size_t{3} << 20}) {
    absl::Status status = client_->Put(PutOf("big/k", std::string(bytes, 'x'))).status();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bytes << ": " << status;
    EXPECT_FALSE(IsOutcomeUnknown(status));
    EXPECT_NE(status.message().find("127.0.0.1:"), std::string::npos) << status;
  }
  TxnRequest txn;  // etcd's --max-txn-ops is 128
  for (int i = 0; i < 129; ++i) *txn.add_success() = PutOp(absl::StrCat("big/", i), "v");
  absl::Status status = client_->Txn(txn).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
}

TEST_F(EtcdKv, KeeperHoldsTheKeyAndItGoesAfterTheTtl) {
  const absl::Time before = absl::Now();
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper =
      LeaseKeeper::Start(client_.get(), absl::Seconds(2), [] {});
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  const absl::Duration ttl = (*keeper)->ttl();
  EXPECT_GE((*keeper)->ValidUntil(), before + ttl);
  EXPECT_LE((*keeper)->ValidUntil(), absl::Now() + ttl);
  ASSERT_TRUE(client_->Put(PutOf("lease/held", "v", (*keeper)->id())).ok());
  absl::SleepFor(3 * ttl + absl::Milliseconds(500));
  EXPECT_EQ(ValueOf(*client_, "lease/held"), "v");
  EXPECT_FALSE((*keeper)->Lost());
  EXPECT_GT((*keeper)->ValidUntil(), absl::Now());
  EXPECT_GT((*keeper)->ValidUntil(), before + 3 * ttl);
  keeper->reset();
  const absl::Time stopped = absl::Now();
  while (!ValueOf(*client_, "lease/held").empty() &&
         absl::Now() < stopped + ttl + absl::Seconds(5)) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(ValueOf(*client_, "lease/held"), "");
}

TEST_F(EtcdKv, RevokeRemovesTheKeyAtOnce) {
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper =
      LeaseKeeper::Start(client_.get(), absl::Seconds(30), [] {});
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  ASSERT_TRUE(client_->Put(PutOf("lease/revoked", "v", (*keeper)->id())).ok());
  absl::StatusOr<int64_t> remaining = client_->LeaseTimeToLive((*keeper)->id());
  ASSERT_TRUE(remaining.ok()) << remaining.status();
  EXPECT_GT(*remaining, 0);
  ASSERT_TRUE((*keeper)->Revoke().ok());
  EXPECT_EQ(ValueOf(*client_, "lease/revoked"), "");
  EXPECT_TRUE((*keeper)->Lost());
  remaining = client_->LeaseTimeToLive((*keeper)->id());
  ASSERT_TRUE(remaining.ok()) << remaining.status();
  EXPECT_EQ(*remaining, -1);
}

TEST_F(EtcdKv, GrantWantsWholeSeconds) {
  EXPECT_TRUE(absl::IsInvalidArgument(client_->GrantLease(absl::Milliseconds(1500)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(client_->GrantLease(absl::ZeroDuration()).status()));
}

TEST_F(EtcdKv, MemberListAndStatus) {
  absl::StatusOr<etcdserverpb::MemberListResponse> members = client_->MemberList();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(members->members_size(), 3);
  for (const std::string& endpoint : client_->endpoints()) {
    absl::StatusOr<etcdserverpb::StatusResponse> status = client_->Status(endpoint);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_NE(status->leader(), 0u);
  }
}

TEST(EtcdFaults, PausedClusterLosesTheLease) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> client = ClientOf(*cluster);
  absl::Notification lost;
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper =
      LeaseKeeper::Start(client.get(), absl::Seconds(1), [&] { lost.Notify(); });
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE((*keeper)->Lost());
  for (int i = 0; i < cluster->size(); ++i) ASSERT_TRUE(cluster->Pause(i).ok());
  const absl::Time paused = absl::Now();
  EXPECT_TRUE(lost.WaitForNotificationWithTimeout((*keeper)->ttl() + absl::Seconds(2)));
  EXPECT_TRUE((*keeper)->Lost());
  // Renewed no later than the pause, so valid no later than a TTL after it.
  EXPECT_LE((*keeper)->ValidUntil(), paused + (*keeper)->ttl());
  EXPECT_LE((*keeper)->ValidUntil(), absl::Now());
  for (int i = 0; i < cluster->size(); ++i) ASSERT_TRUE(cluster->Resume(i).ok());
}

TEST(EtcdFaults, FailoverWhenTheMemberDies) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> client = ClientOf(*cluster);
  ASSERT_TRUE(client->Put(PutOf("fo/k", "v")).ok());  // the client now talks to member 0
  // Transactions run while member 0 dies: each either succeeds (and its write is there) or
  // fails as Unavailable, never otherwise.
  std::atomic<bool> stop{false};
  std::atomic<int> next{0};
  std::atomic<int> last_success{-1};
  std::vector<int> succeeded;
  std::vector<absl::Status> failed;
  std::thread writer([&] {
    while (!stop) {
      const int i = next++;
      TxnRequest txn;
      *txn.add_success() = PutOp(absl::StrCat("fo/seq/", i), "v");
      absl::StatusOr<etcdserverpb::TxnResponse> response = client->Txn(txn);
      if (response.ok()) {
        succeeded.push_back(i);
        last_success = i;
      } else {
        failed.push_back(response.status());
      }
    }
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(cluster->Kill(0).ok());
  const int killed_at = next;
  // Writes go on at the members left (after an election when member 0 led).
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (last_success <= killed_at && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  stop = true;
  writer.join();
  EXPECT_GT(last_success, killed_at);
  for (const absl::Status& status : failed) EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  for (int i : succeeded) EXPECT_EQ(ValueOf(*client, absl::StrCat("fo/seq/", i)), "v") << i;
  // Reads go on at the members left.
  EXPECT_EQ(ValueOf(*client, "fo/k"), "v");
  EXPECT_NE(client->Status(client->endpoints()[0]).status().message().find(client->endpoints()[0]),
            std::string::npos);
}

TEST(EtcdFaults, UnansweredWriteIsOutcomeUnknownAndReadsMoveOn) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<int> leader = cluster->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  // A follower, so that stopping it needs no election.
  const int follower = (*leader + 1) % cluster->size();
  EtcdOptions options;
  for (int i = 0; i < cluster->size(); ++i) {
    options.endpoints.push_back(cluster->endpoint((follower + i) % cluster->size()));
  }
  options.call_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  options.endpoints.resize(1);
  absl::StatusOr<std::unique_ptr<EtcdClient>> only_follower = EtcdClient::Connect(options);
  ASSERT_TRUE(only_follower.ok()) << only_follower.status();
  ASSERT_TRUE((*only_follower)->Put(PutOf("un/k", "v")).ok());  // connected
  // A stopped member keeps its connections open: the write is sent and never answered.
  ASSERT_TRUE(cluster->Pause(follower).ok());
  absl::Status put = (*only_follower)->Put(PutOf("un/k", "w")).status();
  EXPECT_TRUE(absl::IsUnavailable(put)) << put;
  EXPECT_TRUE(IsOutcomeUnknown(put)) << put;
  EXPECT_NE(put.message().find((*only_follower)->endpoints()[0]), std::string::npos) << put;
  // A client that has the others as well: reads and writes move on to them.
  EXPECT_EQ(ValueOf(**client, "un/k"), "v");
  EXPECT_TRUE((*client)->Put(PutOf("un/k", "x")).ok());
  EXPECT_EQ(ValueOf(**client, "un/k"), "x");
  ASSERT_TRUE(cluster->Resume(follower).ok());
}

TEST(EtcdFaults, ReplaceTheLeaderWithAnEmptyMember) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> client = ClientOf(*cluster);
  ASSERT_TRUE(client->Put(PutOf("rep/before", "v")).ok());
  absl::StatusOr<int> leader = cluster->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  ASSERT_TRUE(cluster->Kill(*leader).ok());
  ASSERT_TRUE(cluster->Wipe(*leader).ok());
  absl::Status removed = cluster->RemoveMember(*leader);
  ASSERT_TRUE(removed.ok()) << removed;
  absl::StatusOr<int> added = cluster->AddMember();
  ASSERT_TRUE(added.ok()) << added.status();
  client = ClientOf(*cluster);
  absl::StatusOr<etcdserverpb::MemberListResponse> members = client->MemberList();
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(members->members_size(), 3);
  ASSERT_TRUE(client->Put(PutOf("rep/after", "v")).ok());
  EXPECT_EQ(ValueOf(*client, "rep/before"), "v");
  // The new member has the data.
  EtcdOptions only_new;
  only_new.endpoints = {cluster->endpoint(*added)};
  absl::StatusOr<std::unique_ptr<EtcdClient>> fresh = EtcdClient::Connect(only_new);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(ValueOf(**fresh, "rep/after"), "v");
}

TEST(EtcdFaults, SpaceQuotaIsResourceExhaustedUntilFreed) {
  EtcdClusterOptions options;
  options.members = 1;
  options.quota_backend_bytes = 512 * 1024;
  std::unique_ptr<EtcdCluster> cluster = StartCluster(options);
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> client = ClientOf(*cluster);
  absl::Status status;
  for (int i = 0; i < 200 && status.ok(); ++i) {
    status = client->Put(PutOf(absl::StrCat("fill/", i), std::string(32 * 1024, 'x'))).status();
  }
  ASSERT_TRUE(absl::IsResourceExhausted(status)) << status;
  absl::StatusOr<etcdserverpb::AlarmResponse> alarms = client->Alarms();
  ASSERT_TRUE(alarms.ok()) << alarms.status();
  ASSERT_EQ(alarms->alarms_size(), 1);
  EXPECT_EQ(alarms->alarms(0).alarm(), etcdserverpb::NOSPACE);
  etcdserverpb::DeleteRangeRequest wipe;
  wipe.set_key("fill/");
  wipe.set_range_end("fill0");
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> deleted = client->DeleteRange(wipe);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  ASSERT_TRUE(client->Compact(deleted->header().revision(), /*physical=*/true).ok());
  for (const std::string& endpoint : client->endpoints()) {
    absl::Status defragmented = client->Defragment(endpoint);
    ASSERT_TRUE(defragmented.ok()) << defragmented;
  }
  ASSERT_TRUE(client->DisarmAlarms().ok());
  alarms = client->Alarms();
  ASSERT_TRUE(alarms.ok()) << alarms.status();
  EXPECT_EQ(alarms->alarms_size(), 0);
  absl::Status put = client->Put(PutOf("fill/again", "v")).status();
  EXPECT_TRUE(put.ok()) << put;
}

TEST(EtcdTls, HttpsWithClientCertificates) {
  std::string dir = ::testing::TempDir() + "/etcd-tls-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  struct RemoveDir {
    std::string path;
    ~RemoveDir() { std::filesystem::remove_all(path); }
  } remove_dir{dir};
  ASSERT_EQ(system((std::string("bash ") + ADAPTD_MAKE_CERTS + " " + dir).c_str()), 0);
  EtcdClusterOptions options;
  options.members = 1;
  options.ca_file = dir + "/ca.pem";
  options.server_cert_file = dir + "/server.pem";
  options.server_key_file = dir + "/server.key";
  options.client_cert_file = dir + "/client.pem";
  options.client_key_file = dir + "/client.key";
  std::unique_ptr<EtcdCluster> cluster = StartCluster(options);
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> client = ClientOf(*cluster);
  ASSERT_TRUE(client->Put(PutOf("tls/k", "v")).ok());
  EXPECT_EQ(ValueOf(*client, "tls/k"), "v");
  // Without the CA the member's certificate is not trusted.
  EtcdOptions untrusted;
  untrusted.endpoints = cluster->endpoints();
  untrusted.cert_file = options.client_cert_file;
  untrusted.key_file = options.client_key_file;
  untrusted.call_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<EtcdClient>> refused = EtcdClient::Connect(untrusted);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_TRUE(absl::IsUnavailable((*refused)->Put(PutOf("tls/k", "w")).status()));
}

}  // namespace
}  // namespace adaptd::etcd
