// EtcdWatcher against real etcd members: the copy a watcher keeps equals etcd's range after
// every kind of change, each change delivered once and in order, while the member it watches
// through dies, or stops answering while the history it would resume from is compacted.
#include "server/etcd/etcd_watcher.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/etcd/testing/test_cluster.h"

namespace adaptd::etcd {
namespace {

using etcd::testing::ClientOf;
using etcd::testing::EtcdCluster;
using etcd::testing::StartCluster;

constexpr absl::Duration kStall = absl::Seconds(1);

// What a watcher's callbacks build: the range as a map, and every delivered revision.
class Mirror {
 public:
  EtcdWatcher::Callbacks Callbacks() {
    return {
        [this](const std::vector<mvccpb::KeyValue>& kvs, int64_t revision) {
          absl::MutexLock lock(&mu_);
          keys_.clear();
          for (const mvccpb::KeyValue& kv : kvs) keys_[kv.key()] = kv.value();
          reset_revisions_.push_back(revision);
        },
        [this](const std::vector<mvccpb::Event>& events) {
          absl::MutexLock lock(&mu_);
          for (const mvccpb::Event& event : events) {
            if (event.type() == mvccpb::Event::DELETE) {
              keys_.erase(event.kv().key());
            } else {
              keys_[event.kv().key()] = event.kv().value();
            }
            revisions_.push_back(event.kv().mod_revision());
          }
        },
    };
  }
  std::map<std::string, std::string> keys() const {
    absl::MutexLock lock(&mu_);
    return keys_;
  }
  std::vector<int64_t> revisions() const {
    absl::MutexLock lock(&mu_);
    return revisions_;
  }
  std::vector<int64_t> reset_revisions() const {
    absl::MutexLock lock(&mu_);
    return reset_revisions_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> revisions_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> reset_revisions_ ABSL_GUARDED_BY(mu_);
};

std::map<std::string, std::string> RangeOf(EtcdClient& client, const std::string& prefix) {
  std::map<std::string, std::string> keys;
  absl::StatusOr<std::vector<mvccpb::KeyValue>> kvs = client.RangePrefix(prefix);
  EXPECT_TRUE(kvs.ok()) << kvs.status();
  if (kvs.ok()) {
    for (const mvccpb::KeyValue& kv : *kvs) keys[kv.key()] = kv.value();
  }
  return keys;
}

// Puts key=value; the revision it was written at (0 on failure).
int64_t Put(EtcdClient& client, const std::string& key, const std::string& value) {
  etcdserverpb::PutRequest put;
  put.set_key(key);
  put.set_value(value);
  absl::StatusOr<etcdserverpb::PutResponse> response = client.Put(put);
  return response.ok() ? response->header().revision() : 0;
}

int64_t Delete(EtcdClient& client, const std::string& key) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> response = client.DeleteRange(request);
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? response->header().revision() : 0;
}

// Each revision at most once and rising (a transaction's changes share one revision).
void ExpectInOrderOnce(const std::vector<int64_t>& revisions) {
  for (size_t i = 1; i < revisions.size(); ++i) {
    EXPECT_LE(revisions[i - 1], revisions[i]) << "at " << i;
  }
}

TEST(EtcdWatcherTest, ResetThenEveryChangeUnderThePrefix) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> writer = ClientOf(*cluster);
  std::unique_ptr<EtcdClient> watching = ClientOf(*cluster);
  ASSERT_GT(Put(*writer, "w/a", "1"), 0);
  ASSERT_GT(Put(*writer, "w/b", "2"), 0);
  ASSERT_GT(Put(*writer, "x/outside", "0"), 0);
  Mirror mirror;
  std::unique_ptr<EtcdWatcher> watcher =
      EtcdWatcher::Start(watching.get(), "w/", mirror.Callbacks());
  ASSERT_TRUE(watcher->WaitFor(1, absl::Seconds(10)));
  EXPECT_EQ(mirror.keys(), (std::map<std::string, std::string>{{"w/a", "1"}, {"w/b", "2"}}));
  // An idle stream answers its progress requests: it is kept, not taken for a stalled one.
  absl::SleepFor(3 * kStall);
  EXPECT_EQ(watcher->streams(), 1);

  ASSERT_GT(Put(*writer, "w/a", "3"), 0);
  ASSERT_GT(Delete(*writer, "w/b"), 0);
  ASSERT_GT(Put(*writer, "x/outside", "changed"), 0);
  ASSERT_GT(Put(*writer, "w0", "not under w/"), 0);
  etcdserverpb::TxnRequest txn;  // two puts at one revision
  for (const char* key : {"w/c", "w/d"}) {
    etcdserverpb::RequestOp* op = txn.add_success();
    op->mutable_request_put()->set_key(key);
    op->mutable_request_put()->set_value("t");
  }
  absl::StatusOr<etcdserverpb::TxnResponse> committed = writer->Txn(txn);
  ASSERT_TRUE(committed.ok()) << committed.status();
  const int64_t last = committed->header().revision();
  ASSERT_TRUE(watcher->WaitFor(last, absl::Seconds(10)));
  EXPECT_EQ(watcher->revision(), last);
  EXPECT_EQ(mirror.keys(), RangeOf(*writer, "w/"));
  EXPECT_EQ(mirror.keys().size(), 3u);
  const std::vector<int64_t> revisions = mirror.revisions();
  ASSERT_EQ(revisions.size(), 4u);  // the put, the delete, the transaction's two puts
  EXPECT_EQ(revisions[2], last);
  EXPECT_EQ(revisions[3], last);
  ExpectInOrderOnce(revisions);
  EXPECT_EQ(watcher->resets(), 1);
}

TEST(EtcdWatcherTest, FollowsTheChangesWhileItsMemberDies) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  std::unique_ptr<EtcdClient> writer = ClientOf(*cluster);
  std::unique_ptr<EtcdClient> watching = ClientOf(*cluster);  // watches through member 0 first
  Mirror mirror;
  std::unique_ptr<EtcdWatcher> watcher =
      EtcdWatcher::Start(watching.get(), "kill/", mirror.Callbacks());
  ASSERT_TRUE(watcher->WaitFor(1, absl::Seconds(10)));
  std::atomic<bool> stop{false};
  std::vector<int64_t> written;  // the revisions of the writes etcd acknowledged
  std::thread writes([&] {
    for (int i = 0; !stop; ++i) {
      const int64_t revision = Put(*writer, absl::StrCat("kill/", i % 50), absl::StrCat(i));
      if (revision > 0) written.push_back(revision);
    }
  });
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(cluster->Kill(0).ok());
  absl::SleepFor(absl::Seconds(2));
  stop = true;
  writes.join();
  ASSERT_FALSE(written.empty());
  ASSERT_TRUE(watcher->WaitFor(written.back(), absl::Seconds(15)));
  EXPECT_EQ(mirror.keys(), RangeOf(*writer, "kill/"));
  // Every acknowledged write was delivered exactly once, in order, with no reset needed.
  const std::vector<int64_t> revisions = mirror.revisions();
  ExpectInOrderOnce(revisions);
  for (size_t i = 1; i < revisions.size(); ++i) EXPECT_LT(revisions[i - 1], revisions[i]);
  for (int64_t revision : written) {
    EXPECT_TRUE(std::binary_search(revisions.begin(), revisions.end(), revision)) << revision;
  }
  EXPECT_EQ(watcher->resets(), 1);
  EXPECT_GE(watcher->streams(), 2);  // it moved to another member
}

TEST(EtcdWatcherTest, ReadsAgainWhenItsResumeRevisionWasCompacted) {
  std::unique_ptr<EtcdCluster> cluster = StartCluster();
  ASSERT_NE(cluster, nullptr);
  // The watcher follows through a member that does not lead, so that pausing it needs no
  // election: the writes and the compaction below are done well within the stall timeout.
  absl::StatusOr<int> leader = cluster->LeaderIndex();
  ASSERT_TRUE(leader.ok()) << leader.status();
  const int watched = (*leader + 1) % cluster->size();
  EtcdOptions to_watched;
  to_watched.endpoints = {cluster->endpoint(watched), cluster->endpoint(*leader)};
  to_watched.call_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<EtcdClient>> watching = EtcdClient::Connect(to_watched);
  ASSERT_TRUE(watching.ok()) << watching.status();
  Mirror mirror;
  EtcdWatcher::Options options;
  options.stall_timeout = 2 * kStall;
  std::unique_ptr<EtcdWatcher> watcher =
      EtcdWatcher::Start(watching->get(), "cmp/", mirror.Callbacks(), options);
  ASSERT_TRUE(watcher->WaitFor(1, absl::Seconds(10)));
  // The watched member stops answering: the stream neither breaks nor delivers.
  ASSERT_TRUE(cluster->Pause(watched).ok());
  EtcdOptions to_leader;
  to_leader.endpoints = {cluster->endpoint(*leader)};
  to_leader.call_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<EtcdClient>> others = EtcdClient::Connect(std::move(to_leader));
  ASSERT_TRUE(others.ok()) << others.status();
  EtcdClient& writer = **others;
  int64_t last = Put(writer, "cmp/first", "1");
  ASSERT_GT(last, 0);
  ASSERT_GT(Delete(writer, "cmp/first"), 0);
  last = Put(writer, "cmp/kept", "2");
  ASSERT_GT(last, 0);
  ASSERT_TRUE(writer.Compact(last).ok());
  // The watcher gives member 0 up, finds its next revision compacted, and reads the range again.
  ASSERT_TRUE(watcher->WaitFor(last, absl::Seconds(15)));
  EXPECT_EQ(watcher->resets(), 2);
  EXPECT_GE(watcher->streams(), 2);
  EXPECT_EQ(mirror.keys(), (std::map<std::string, std::string>{{"cmp/kept", "2"}}));
  const int64_t after = Put(writer, "cmp/after", "3");
  ASSERT_GT(after, 0);
  ASSERT_TRUE(watcher->WaitFor(after, absl::Seconds(10)));
  EXPECT_EQ(mirror.keys(), RangeOf(writer, "cmp/"));
  ASSERT_TRUE(cluster->Resume(watched).ok());
}

}  // namespace
}  // namespace adaptd::etcd
