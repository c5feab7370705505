// EtcdDurability against real processes: a 3-member etcd (Debian's binary) and SeaweedFS (S3),
// started once for the binary. The durability contract (durability_contract.h) runs on it,
// each test under a prefix of its own in etcd and in the bucket; then what only this
// implementation has: payloads as objects, group commits across stores, a claim held by
// another server, a missing object.
#include "server/durability/etcd_durability.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/durability/durability_contract.h"
#include "server/durability/testing/etcd_harness.h"
#include "server/durability/testing/shared_services.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/objstore/s3_object_store.h"
#include "server/persistence/failed_store.h"

namespace adaptd {
namespace {

using testing_util::SharedBucket;
using testing_util::SharedEtcd;
using testing_util::SharedS3;

INSTANTIATE_TYPED_TEST_SUITE_P(Etcd, DurabilityContract, EtcdHarness);

class EtcdDurabilityTest : public DurabilityContract<EtcdHarness> {
 protected:
  std::vector<ObjectStore::Object> ObjectsUnder(const std::string& prefix) {
    absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = harness_->Objects();
    EXPECT_TRUE(objects.ok()) << objects.status();
    if (!objects.ok()) return {};
    absl::StatusOr<std::vector<ObjectStore::Object>> listed = (*objects)->List(prefix);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() ? *listed : std::vector<ObjectStore::Object>();
  }
  // Puts PREFIX/backup-hold (the backup hold), or removes it when `value` is empty.
  void SetBackupHold(const std::string& value) {
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
    ASSERT_TRUE(client.ok()) << client.status();
    const std::string key = BackupHoldKey(harness_->EtcdPrefix());
    if (value.empty()) {
      etcdserverpb::DeleteRangeRequest drop;
      drop.set_key(key);
      ASSERT_TRUE((*client)->DeleteRange(drop).ok());
      return;
    }
    etcdserverpb::PutRequest put;
    put.set_key(key);
    put.set_value(value);
    ASSERT_TRUE((*client)->Put(put).ok());
  }
  static std::string UnixSecondsIn(absl::Duration from_now) {
    return absl::StrCat(absl::ToUnixSeconds(absl::Now() + from_now));
  }
};

// A record past inline_bytes is written as an object first, and the log record points at it;
// replay reads it back.
TEST_F(EtcdDurabilityTest, LargeRecordsGoToObjectsAndRecover) {
  harness_->set_inline_bytes(512);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(64, 1), {"large"}).ok());  // 64 rows of 4 floats: over 512 bytes
  ASSERT_TRUE(Write("a", Batch(1, 2), {"small"}).ok());
  EXPECT_EQ(ObjectsUnder("payloads/").size(), 1u);
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "large"));
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "small"));
}

// Writes of many stores at once share group commits, each store's in its own order.
TEST_F(EtcdDurabilityTest, ManyStoresWritingAtOnceRecoverEqual) {
  constexpr int kStores = 8, kWrites = 12;
  for (int s = 0; s < kStores; ++s) ASSERT_NE(Create(absl::StrCat("s", s)), nullptr);
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int s = 0; s < kStores; ++s) {
    for (int w = 0; w < 2; ++w) {
      writers.emplace_back([this, s, w, &failed] {
        for (int i = 0; i < kWrites; ++i) {
          const std::string id = absl::StrCat("w", w, "-", i);
          if (!Write(absl::StrCat("s", s), Batch(3, s * 1000 + w * 100 + i), {id}).ok()) ++failed;
        }
      });
    }
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(failed.load(), 0);
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
  EXPECT_EQ(durability_->RememberedIds("t", "s3", stores_["s3"].get()).size(), 2u * kWrites);
}

// While one server holds the prefix another cannot open it; once its claim is gone (as when
// its lease lapses while it is paused) and another server holds it, its appends are refused
// and change nothing.
TEST_F(EtcdDurabilityTest, AClaimTakenOverFencesTheEarlierServer) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1), {"first"}).ok());
  std::vector<RecoveredStore> recovered;
  absl::StatusOr<std::unique_ptr<EtcdDurability>> second =
      harness_->OpenEtcd(&recovered, absl::Seconds(1));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("owner"), std::string::npos) << second.status();

  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok()) << client.status();
  etcdserverpb::DeleteRangeRequest drop;
  drop.set_key(harness_->EtcdPrefix() + "owner");
  ASSERT_TRUE((*client)->DeleteRange(drop).ok());
  recovered.clear();
  second = harness_->OpenEtcd(&recovered);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(recovered.size(), 1u);

  std::atomic<int> applied{0};
  const std::string acknowledged = StateOf(*stores_["a"]);
  absl::StatusOr<CommitResult> late = Write("a", Batch(4, 2), {"late"}, false, nullptr, &applied);
  EXPECT_TRUE(IsOwnershipLost(late.status())) << late.status();
  EXPECT_EQ(applied.load(), 0);
  EXPECT_EQ(StateOf(*stores_["a"]), acknowledged);
  EXPECT_TRUE(
      IsOwnershipLost(durability_->AppendPin("t", "a", stores_["a"].get(), true, FenceOf("a"))));
  EXPECT_TRUE(IsOwnershipLost(durability_->AppendDelete("t", "a", FenceOf("a")).status()));

  // The server that holds the prefix now has the acknowledged store, and nothing later.
  absl::StatusOr<std::shared_ptr<Store>> a = (*second)->Load("t", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(StateOf(**a), acknowledged);
  EXPECT_TRUE((*second)->Applied("t", "a", a->get(), "first"));
  EXPECT_FALSE((*second)->Applied("t", "a", a->get(), "late"));
  (*second)->Close();
}

// The records in etcd under t/`name`'s log.
int64_t LogRecordsInEtcd(EtcdHarness& harness, const std::string& name) {
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness.Client();
  if (!client.ok()) return -1;
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
      (*client)->RangePrefix(harness.EtcdPrefix() + "log/t/" + name + "/", /*keys_only=*/true);
  return keys.ok() ? static_cast<int64_t>(keys->size()) : -1;
}

// A store whose log passes snapshot_records has its state written to object storage in the
// background, and the log it covers leaves etcd.
TEST_F(EtcdDurabilityTest, ALongLogIsSnapshotAndTrimmed) {
  harness_->set_snapshot_records(5);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(Write("a", Batch(2, i)).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (LogRecordsInEtcd(*harness_, "a") >= 5 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_LT(LogRecordsInEtcd(*harness_, "a"), 5);
  // One state: each snapshot deletes the one before it (no read-out: nothing is compiled).
  const std::vector<ObjectStore::Object> objects = ObjectsUnder("snapshots/t/a/");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_TRUE(absl::EndsWith(objects[0].key, ".state")) << objects[0].key;
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
}

// With object storage unreachable, small writes go on until a store's log reaches
// max_log_records, then are refused RESOURCE_EXHAUSTED naming the bound; once it is back, the
// next snapshot trims the log and writes go on. Nothing acknowledged is lost.
TEST_F(EtcdDurabilityTest, ObjectStorageDownBoundsTheLogAndNothingIsLost) {
  harness_->set_snapshot_records(4);
  harness_->set_max_log_records(8);
  harness_->set_inline_bytes(4096);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  SharedS3()->Stop();
  int acknowledged = 0;
  absl::Status refused;
  for (int i = 0; i < 20 && refused.ok(); ++i) {
    absl::StatusOr<CommitResult> written = Write("a", Batch(2, i), {absl::StrCat("id", i)});
    if (written.ok()) {
      ++acknowledged;
    } else {
      refused = written.status();
    }
  }
  EXPECT_EQ(acknowledged, 8);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("max_log_records"), std::string::npos) << refused;
  // A large write needs object storage: refused as unavailable, nothing applied.
  EXPECT_FALSE(Write("a", Batch(400, 99)).ok());
  ASSERT_TRUE(SharedS3()->Start().ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  EXPECT_TRUE(Write("a", Batch(2, 100), {"after"}).ok());
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
  EXPECT_EQ(durability_->RememberedIds("t", "a", stores_["a"].get()).size(), 9u);
}

// The lease of this server's claim, as etcd holds it (0 when none).
int64_t ClaimLease(EtcdHarness& harness) {
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness.Client();
  if (!client.ok()) return 0;
  etcdserverpb::RangeRequest range;
  range.set_key(harness.EtcdPrefix() + "owner");
  absl::StatusOr<etcdserverpb::RangeResponse> found = (*client)->Range(range);
  return found.ok() && found->kvs_size() == 1 ? found->kvs(0).lease() : 0;
}

// etcd unanswering past the lease: reads are refused, then, with no one else claiming, the
// server claims again under a new lease and serves and writes on; nothing acknowledged lost.
TEST_F(EtcdDurabilityTest, ALapsedLeaseRefusesReadsThenIsClaimedAgain) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1), {"before"}).ok());
  EXPECT_TRUE(durability_->ReadsAllowed("t", "a").ok());
  auto* etcd = static_cast<EtcdDurability*>(durability_.get());
  const int64_t first_fence = etcd->claim_revision();
  etcd::testing::EtcdCluster& cluster = *SharedEtcd();
  for (int i = 0; i < cluster.size(); ++i) ASSERT_TRUE(cluster.Pause(i).ok());
  absl::SleepFor(absl::Seconds(3));  // past the 2 s lease
  const absl::Status refused = durability_->ReadsAllowed("t", "a");
  for (int i = 0; i < cluster.size(); ++i) ASSERT_TRUE(cluster.Resume(i).ok());
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_NE(refused.message().find("lease"), std::string::npos) << refused;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!durability_->ReadsAllowed("t", "a").ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(durability_->ReadsAllowed("t", "a").ok());
  absl::StatusOr<CommitResult> after = Write("a", Batch(4, 2), {"after"});
  for (int tries = 0; !after.ok() && tries < 50; ++tries) {  // the fence moved on meanwhile
    absl::SleepFor(absl::Milliseconds(100));
    after = Write("a", Batch(4, 2), {"after"});
  }
  ASSERT_TRUE(after.ok()) << after.status();
  std::printf("fence revision %lld, then %lld\n", static_cast<long long>(first_fence),
              static_cast<long long>(etcd->claim_revision()));
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "before"));
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "after"));
}

// A server whose lease lapsed while another server claimed the prefix is fenced for good: it
// appends and serves nothing more.
TEST_F(EtcdDurabilityTest, AServerWhoseLeaseLapsedWhileAnotherClaimedIsFencedForGood) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1), {"first"}).ok());
  const int64_t lease = ClaimLease(*harness_);
  ASSERT_NE(lease, 0);
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->RevokeLease(lease).ok());  // as if it lapsed: the claim goes
  std::vector<RecoveredStore> recovered;
  absl::StatusOr<std::unique_ptr<EtcdDurability>> second = harness_->OpenEtcd(&recovered);
  ASSERT_TRUE(second.ok()) << second.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!IsOwnershipLost(durability_->ReadsAllowed("t", "a")) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(IsOwnershipLost(durability_->ReadsAllowed("t", "a")));
  std::atomic<int> applied{0};
  EXPECT_TRUE(
      IsOwnershipLost(Write("a", Batch(4, 2), {"late"}, false, nullptr, &applied).status()));
  EXPECT_EQ(applied.load(), 0);
  EXPECT_TRUE((*second)->ReadsAllowed("t", "a").ok());
  absl::StatusOr<std::shared_ptr<Store>> a = (*second)->Load("t", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE((*second)->Applied("t", "a", a->get(), "first"));
  EXPECT_FALSE((*second)->Applied("t", "a", a->get(), "late"));
  (*second)->Close();
}

// After trims, upkeep compacts etcd's history; objects nothing points at (a payload whose
// record a snapshot trimmed, an object no entry names) are collected, the current state kept.
TEST_F(EtcdDurabilityTest, UpkeepCompactsAfterTrimsAndCollectsWhatNothingPointsAt) {
  harness_->set_inline_bytes(512);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(64, 1)).ok());  // its record is an object
  ASSERT_EQ(ObjectsUnder("payloads/").size(), 1u);
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = harness_->Objects();
  ASSERT_TRUE(objects.ok());
  ASSERT_TRUE((*objects)->Put("snapshots/t/gone/0-0.state", "left by a crash").ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());  // the log, and the record's object, trimmed
  auto* etcd = static_cast<EtcdDurability*>(durability_.get());
  absl::StatusOr<EtcdDurability::Upkeep> upkeep = etcd->Maintain(/*collect=*/true);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_GT(upkeep->compacted_to, 0);
  EXPECT_EQ(upkeep->objects_deleted, 2);
  EXPECT_TRUE(ObjectsUnder("payloads/").empty());
  EXPECT_EQ(ObjectsUnder("snapshots/").size(), 1u);  // the state the entry points at
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok());
  etcdserverpb::RangeRequest old;
  old.set_key(harness_->EtcdPrefix() + "owner");
  old.set_revision(upkeep->compacted_to - 1);
  EXPECT_EQ((*client)->Range(old).status().code(), absl::StatusCode::kOutOfRange);
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
}

// Past the space guard (half of a small quota here) writes are refused RESOURCE_EXHAUSTED
// naming it, before etcd raises its NOSPACE alarm. Object storage is down meanwhile, so the
// snapshots that would trim the log cannot; once it is back, upkeep snapshots, compacts and
// defragments, and writes resume. Nothing acknowledged is lost.
TEST_F(EtcdDurabilityTest, TheSpaceGuardRefusesWritesBeforeEtcdsQuotaThenUpkeepFreesSpace) {
  constexpr int64_t kQuota = int64_t{16} << 20;
  etcd::testing::EtcdClusterOptions small;
  small.quota_backend_bytes = kQuota;
  absl::StatusOr<std::unique_ptr<etcd::testing::EtcdCluster>> cluster =
      etcd::testing::EtcdCluster::Start(small);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  harness_->set_cluster(cluster->get(), kQuota);
  harness_->set_snapshot_records(size_t{1} << 30);
  harness_->set_max_log_records(size_t{1} << 30);
  Restart();
  auto* etcd = static_cast<EtcdDurability*>(durability_.get());
  ASSERT_NE(Create("a"), nullptr);
  SharedS3()->Kill();
  absl::Status refused;
  int acknowledged = 0;
  for (int i = 0; i < 4000 && refused.ok(); ++i) {
    absl::StatusOr<CommitResult> written = Write("a", Batch(1000, i), {absl::StrCat("id", i)});
    if (written.ok()) {
      ++acknowledged;
    } else {
      refused = written.status();
    }
    if (i % 20 == 19 && refused.ok()) {
      absl::StatusOr<EtcdDurability::Upkeep> upkeep = etcd->Maintain(false);
      ASSERT_TRUE(upkeep.ok()) << upkeep.status();
      if (upkeep->guard_on) break;
    }
  }
  if (refused.ok()) refused = Write("a", Batch(10, 9999)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("space guard"), std::string::npos) << refused;
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = harness_->Client();
  ASSERT_TRUE(client.ok());
  absl::StatusOr<etcdserverpb::AlarmResponse> alarms = (*client)->Alarms();
  ASSERT_TRUE(alarms.ok()) << alarms.status();
  EXPECT_EQ(alarms->alarms_size(), 0);  // etcd's own NOSPACE never raised
  ASSERT_TRUE(SharedS3()->Start().ok());
  absl::StatusOr<EtcdDurability::Upkeep> upkeep = etcd->Maintain(false);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_FALSE(upkeep->guard_on) << upkeep->largest_db_bytes << " bytes";
  EXPECT_GT(upkeep->defragmented, 0);
  EXPECT_TRUE(Write("a", Batch(2, 10000), {"after"}).ok());
  std::printf("acknowledged %d writes of 1000 examples before the guard; %lld bytes after upkeep\n",
              acknowledged, static_cast<long long>(upkeep->largest_db_bytes));
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
  EXPECT_EQ(durability_->RememberedIds("t", "a", stores_["a"].get()).size(),
            static_cast<size_t>(acknowledged) + 1);
  stores_.clear();
  durability_->Close();
  durability_.reset();
  harness_->set_cluster(nullptr, 0);
}

// The local cache: a stored state is read from it when it is as recent as the one etcd points
// at (so a store whose object is gone still loads), and passed over for the object when a
// server without it stored a newer state meanwhile.
TEST_F(EtcdDurabilityTest, TheLocalCacheServesLoadsAndAStaleOneIsPassedOver) {
  const std::string cache =
      ::testing::TempDir() + "/adaptd-etcd-cache-" + testing_util::UniqueName();
  harness_->set_cache_dir(cache);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1), {"x"}).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());  // the cache and the object at the same place

  harness_->set_cache_dir("");
  Restart();
  ASSERT_TRUE(Write("a", Batch(4, 2), {"z"}).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());  // a newer object; the cache is stale now
  const std::map<std::string, std::string> newer = States();

  harness_->set_cache_dir(cache);
  Restart();
  EXPECT_EQ(States(), newer);
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "z"));
  ASSERT_TRUE(Write("a", Batch(4, 3), {"w"}).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  const std::map<std::string, std::string> latest = States();

  absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = harness_->Objects();
  ASSERT_TRUE(objects.ok());
  for (const ObjectStore::Object& object : ObjectsUnder("snapshots/t/a/")) {
    ASSERT_TRUE((*objects)->Delete(object.key).ok());
  }
  Restart();  // the object is gone: the cache holds the same state
  EXPECT_EQ(States(), latest);
  EXPECT_TRUE(StoreFailure(*stores_["a"]).ok());
  EXPECT_TRUE(durability_->Applied("t", "a", stores_["a"].get(), "w"));
  std::filesystem::remove_all(cache);
}

// With a cache, an evicted store goes to the cache (its log stays in etcd, nothing is written
// to object storage); a checkpoint then writes the cached state to object storage and trims the
// log. A server without the cache (the disk lost) rebuilds the store from the log meanwhile.
TEST_F(EtcdDurabilityTest, EvictionsGoToTheCacheAndCheckpointsWriteThemOut) {
  const std::string cache =
      ::testing::TempDir() + "/adaptd-etcd-cache-" + testing_util::UniqueName();
  harness_->set_cache_dir(cache);
  Restart();
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1), {"x"}).ok());
  const std::map<std::string, std::string> before = States();
  absl::StatusOr<bool> evicted = durability_->Unload("t", "a", stores_["a"].get());
  ASSERT_TRUE(evicted.ok() && *evicted) << evicted.status();
  EXPECT_TRUE(ObjectsUnder("snapshots/t/a/").empty());
  EXPECT_EQ(LogRecordsInEtcd(*harness_, "a"), 1);
  absl::StatusOr<std::shared_ptr<Store>> loaded = durability_->Load("t", "a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(StateOf(**loaded), before.at("a"));
  EXPECT_TRUE(durability_->Applied("t", "a", loaded->get(), "x"));

  stores_["a"] = *loaded;
  evicted = durability_->Unload("t", "a", loaded->get());
  ASSERT_TRUE(evicted.ok() && *evicted);
  harness_->set_cache_dir("");  // the disk lost: the log rebuilds it
  Restart();
  EXPECT_EQ(States(), before);

  harness_->set_cache_dir(cache);
  Restart();
  evicted = durability_->Unload("t", "a", stores_["a"].get());
  ASSERT_TRUE(evicted.ok() && *evicted);
  ASSERT_TRUE(durability_->Checkpoint().ok());
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 1u);
  EXPECT_EQ(LogRecordsInEtcd(*harness_, "a"), 0);
  harness_->set_cache_dir("");
  Restart();
  EXPECT_EQ(States(), before);
  std::filesystem::remove_all(cache);
}

// A checkpoint past its budget leaves the stores it did not reach to etcd's log: nothing lost.
TEST_F(EtcdDurabilityTest, ACheckpointPastItsBudgetLeavesTheRestInTheLog) {
  harness_->set_checkpoint_budget(absl::ZeroDuration());
  Restart();
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_NE(Create(name), nullptr);
    ASSERT_TRUE(Write(name, Batch(4, name[0])).ok());
  }
  const std::map<std::string, std::string> before = States();
  ASSERT_TRUE(durability_->Checkpoint().ok());
  EXPECT_TRUE(ObjectsUnder("snapshots/").empty());
  EXPECT_EQ(LogRecordsInEtcd(*harness_, "b"), 1);
  Restart();
  EXPECT_EQ(States(), before);
}

// The backup hold's value is a deadline in unix seconds; anything else is refused, named.
TEST(BackupHoldTest, AHoldIsUnixSecondsAndAnythingElseIsNamed) {
  EXPECT_EQ(BackupHoldKey("/adaptd/"), "/adaptd/backup-hold");
  absl::StatusOr<absl::Time> until = ParseBackupHold(" 1700000000\n");
  ASSERT_TRUE(until.ok()) << until.status();
  EXPECT_EQ(*until, absl::FromUnixSeconds(1700000000));
  for (const char* bad : {"", "soon", "-5", "12.5", "99999999999999999999999"}) {
    absl::StatusOr<absl::Time> parsed = ParseBackupHold(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("unix seconds"), std::string::npos) << bad;
  }
}

// While PREFIX/backup-hold lies in the future no object is deleted: not the state a snapshot
// supersedes, not a deleted store's, not what the collector would take; writes, snapshots and
// trims go on. Once its deadline has passed, the collector takes what was left.
TEST_F(EtcdDurabilityTest, ABackupHoldKeepsEveryObjectUntilItsDeadline) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_NE(Create("b"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1)).ok());
  ASSERT_TRUE(Write("b", Batch(4, 2)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  ASSERT_EQ(ObjectsUnder("snapshots/t/a/").size(), 1u);
  SetBackupHold(UnixSecondsIn(absl::Minutes(10)));
  ASSERT_TRUE(Write("a", Batch(4, 3)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());  // a snapshot and a trim, under the hold
  EXPECT_EQ(LogRecordsInEtcd(*harness_, "a"), 0);
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 2u);  // the superseded state kept
  ASSERT_TRUE(durability_->AppendDelete("t", "b", FenceOf("b")).ok());
  stores_.erase("b");
  EXPECT_EQ(ObjectsUnder("snapshots/t/b/").size(), 1u);  // the deleted store's state kept
  auto* etcd = static_cast<EtcdDurability*>(durability_.get());
  absl::StatusOr<EtcdDurability::Upkeep> upkeep = etcd->Maintain(/*collect=*/true);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_TRUE(upkeep->deletions_held);
  EXPECT_EQ(upkeep->objects_deleted, 0);
  EXPECT_EQ(ObjectsUnder("snapshots/").size(), 3u);

  SetBackupHold(UnixSecondsIn(-absl::Seconds(1)));
  upkeep = etcd->Maintain(/*collect=*/true);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_FALSE(upkeep->deletions_held);
  EXPECT_EQ(upkeep->objects_deleted, 2);
  EXPECT_EQ(ObjectsUnder("snapshots/").size(), 1u);  // a's current state
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
}

// A hold that holds no deadline holds deletions too; once it is removed, a snapshot deletes
// the state it supersedes again, and what the hold kept is the collector's.
TEST_F(EtcdDurabilityTest, AHoldThatIsNoDeadlineHoldsDeletionsUntilRemoved) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  SetBackupHold("tomorrow");
  ASSERT_TRUE(Write("a", Batch(4, 2)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 2u);
  SetBackupHold("");
  ASSERT_TRUE(Write("a", Batch(4, 3)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 2u);  // the current one, and the one kept
  absl::StatusOr<EtcdDurability::Upkeep> upkeep =
      static_cast<EtcdDurability*>(durability_.get())->Maintain(/*collect=*/true);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_EQ(upkeep->objects_deleted, 1);
  const std::map<std::string, std::string> before = States();
  Restart();
  EXPECT_EQ(States(), before);
}

// A snapshot whose transaction applied in etcd but whose answer was lost keeps the objects it
// wrote: the entry may point at them (here it does: the log they cover is trimmed), so a
// restart reads the store back whole, and the collector leaves them.
TEST_F(EtcdDurabilityTest, AStateWhoseTransactionAnswerWasLostKeepsItsObjects) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  ASSERT_TRUE(Write("a", Batch(4, 2)).ok());
  const std::map<std::string, std::string> before = States();
  harness_->LoseNextStateAnswer();
  const absl::Status lost = durability_->Checkpoint();
  EXPECT_FALSE(lost.ok());
  EXPECT_EQ(LogRecordsInEtcd(*harness_, "a"), 0) << "the transaction applied";
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 2u) << "the new state kept beside the old";
  absl::StatusOr<EtcdDurability::Upkeep> upkeep =
      static_cast<EtcdDurability*>(durability_.get())->Maintain(/*collect=*/true);
  ASSERT_TRUE(upkeep.ok()) << upkeep.status();
  EXPECT_EQ(ObjectsUnder("snapshots/t/a/").size(), 1u) << "the collector took the old one only";
  Restart();
  EXPECT_EQ(States(), before);
  ASSERT_NE(stores_["a"], nullptr);
  EXPECT_TRUE(StoreFailure(*stores_["a"]).ok()) << StoreFailure(*stores_["a"]);
}

// A stored state whose object is gone fails its store, naming the object; the others serve.
TEST_F(EtcdDurabilityTest, AMissingStateObjectFailsItsStoreOnly) {
  ASSERT_NE(Create("a"), nullptr);
  ASSERT_NE(Create("b"), nullptr);
  ASSERT_TRUE(Write("a", Batch(4, 1)).ok());
  ASSERT_TRUE(Write("b", Batch(4, 2)).ok());
  ASSERT_TRUE(durability_->Checkpoint().ok());
  const std::string b_state = StateOf(*stores_["b"]);
  std::vector<ObjectStore::Object> a_objects = ObjectsUnder("snapshots/t/a/");
  ASSERT_FALSE(a_objects.empty());
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = harness_->Objects();
  ASSERT_TRUE(objects.ok());
  for (const ObjectStore::Object& object : a_objects) {
    ASSERT_TRUE((*objects)->Delete(object.key).ok());
  }
  Restart();
  ASSERT_NE(stores_["a"], nullptr);
  const absl::Status failure = StoreFailure(*stores_["a"]);
  EXPECT_FALSE(failure.ok());
  EXPECT_NE(failure.message().find("snapshots/t/a/"), std::string::npos) << failure;
  EXPECT_EQ(StateOf(*stores_["b"]), b_state);
}

}  // namespace

}  // namespace adaptd
