// Test code for EtcdDurability's tests: a harness that opens servers one after another under one
// prefix of the shared etcd and bucket (shared_services.h), as a single server or as a cluster
// member holding every shard; and TestShardFences, a member's claims of shards in etcd in the
// cluster's format (PREFIX/claims/SSSS under a lease; the fence is the claim's mod revision),
// as server/cluster's ShardClaims makes them.
#ifndef ADAPTD_SERVER_DURABILITY_TESTING_ETCD_HARNESS_H_
#define ADAPTD_SERVER_DURABILITY_TESTING_ETCD_HARNESS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "server/base/stable_hash.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"
#include "server/durability/etcd_fence.h"
#include "server/durability/testing/shared_services.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/objstore/s3_object_store.h"

namespace adaptd {

class TestShardFences final : public ShardFences {
 public:
  // Grants a lease for `member`, holding nothing yet (Take claims).
  static absl::StatusOr<std::shared_ptr<TestShardFences>> Begin(
      std::unique_ptr<etcd::EtcdClient> client, std::string prefix, int shards,
      std::string member) {
    auto fences = std::shared_ptr<TestShardFences>(
        new TestShardFences(std::move(client), std::move(prefix), shards, std::move(member)));
    ASSIGN_OR_RETURN(etcdserverpb::LeaseGrantResponse lease,
                     fences->client_->GrantLease(absl::Seconds(60)));
    fences->lease_ = lease.id();
    return fences;
  }
  // Begin, then claims every one of `shards` shards.
  static absl::StatusOr<std::shared_ptr<TestShardFences>> Claim(
      std::unique_ptr<etcd::EtcdClient> client, std::string prefix, int shards,
      std::string member) {
    ASSIGN_OR_RETURN(std::shared_ptr<TestShardFences> fences,
                     Begin(std::move(client), std::move(prefix), shards, std::move(member)));
    for (int shard = 0; shard < shards; ++shard) RETURN_IF_ERROR(fences->Take(shard));
    return fences;
  }

  int ShardOf(const std::string& tenant, const std::string& name) const override {
    Fnv1a64 hash;
    hash.Add(tenant);
    hash.AddByte('/');
    hash.Add(name);
    return static_cast<int>(hash.value() % static_cast<uint64_t>(shards_));
  }
  absl::StatusOr<EtcdFence> FenceOf(int shard) const override {
    absl::MutexLock lock(&mu_);
    auto held = held_.find(shard);
    if (held == held_.end()) {
      return absl::UnavailableError(
          absl::StrFormat("shard %04x is not held by member '%s'", shard, member_));
    }
    return EtcdFence{ClaimKey(shard), held->second, /*by_mod_revision=*/true};
  }
  absl::Status ReadsAllowed(int shard) const override { return FenceOf(shard).status(); }

  std::string ClaimKey(int shard) const { return absl::StrFormat("%sclaims/%04x", prefix_, shard); }
  // Claims `shard` when nobody holds it.
  absl::Status Take(int shard) {
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = etcd::CreateRevisionIs(ClaimKey(shard), 0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(ClaimKey(shard));
    put->set_value(member_);
    put->set_lease(lease_);
    ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, client_->Txn(txn));
    if (!response.succeeded()) {
      return absl::FailedPreconditionError(absl::StrCat(ClaimKey(shard), " is held"));
    }
    absl::MutexLock lock(&mu_);
    held_[shard] = response.header().revision();
    return absl::OkStatus();
  }
  // Gives `shard` up: deletes its claim.
  absl::Status Release(int shard) {
    etcdserverpb::DeleteRangeRequest request;
    request.set_key(ClaimKey(shard));
    RETURN_IF_ERROR(client_->DeleteRange(request).status());
    absl::MutexLock lock(&mu_);
    held_.erase(shard);
    return absl::OkStatus();
  }
  // This member's lease lapses: every claim goes at once, though this member (paused, say)
  // does not know it: FenceOf still answers the old fences.
  void Revoke() { (void)client_->RevokeLease(lease_); }

 private:
  TestShardFences(std::unique_ptr<etcd::EtcdClient> client, std::string prefix, int shards,
                  std::string member)
      : client_(std::move(client)),
        prefix_(std::move(prefix)),
        shards_(shards),
        member_(std::move(member)) {}

  const std::unique_ptr<etcd::EtcdClient> client_;
  const std::string prefix_;
  const int shards_;
  const std::string member_;
  int64_t lease_ = 0;
  mutable absl::Mutex mu_;
  std::map<int, int64_t> held_ ABSL_GUARDED_BY(mu_);
};

using testing_util::SharedBucket;
using testing_util::SharedEtcd;

// Opens EtcdDurability servers one after another under one prefix.
class EtcdHarness {
 public:
  explicit EtcdHarness(kernels::Backend* backend)
      : backend_(backend), prefix_(testing_util::UniqueName()) {}
  // Servers open as cluster members holding every one of `shards` shards
  // (EtcdDurability::Options::shards; the stores' keys under their shards).
  void set_shards(int shards) { shards_ = shards; }
  // The fences of the last server opened as a member (null before, or for a single server).
  TestShardFences* fences() { return fences_.get(); }

  absl::StatusOr<std::unique_ptr<Durability>> Open(std::vector<RecoveredStore>* recovered) {
    absl::StatusOr<std::unique_ptr<EtcdDurability>> opened = OpenEtcd(recovered);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<Durability>(*std::move(opened));
  }

  // Another member with `fences`, opening no shard (the test opens them).
  absl::StatusOr<std::unique_ptr<EtcdDurability>> OpenMember(
      std::shared_ptr<TestShardFences> fences) {
    std::shared_ptr<TestShardFences> mine = std::exchange(fences_, nullptr);
    const int shards = std::exchange(shards_, 0);
    member_fences_ = std::move(fences);
    std::vector<RecoveredStore> none;
    absl::StatusOr<std::unique_ptr<EtcdDurability>> opened = OpenEtcd(&none);
    member_fences_ = nullptr;
    fences_ = std::move(mine);
    shards_ = shards;
    return opened;
  }
  // A member's fences for `shards` shards under a lease of their own, holding none yet.
  absl::StatusOr<std::shared_ptr<TestShardFences>> NewFences(int shards) {
    ASSIGN_OR_RETURN(std::unique_ptr<etcd::EtcdClient> client, Client());
    return TestShardFences::Begin(std::move(client), EtcdPrefix(), shards,
                                  absl::StrCat("member-", ++members_));
  }

  absl::StatusOr<std::unique_ptr<EtcdDurability>> OpenEtcd(
      std::vector<RecoveredStore>* recovered, absl::Duration claim_wait = absl::Seconds(30)) {
    etcd::testing::EtcdCluster* cluster = cluster_ != nullptr ? cluster_ : SharedEtcd();
    if (cluster == nullptr) return absl::UnavailableError("no etcd");
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client = cluster->Client();
    if (!client.ok()) return client.status();
    absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = SharedBucket(prefix_);
    if (!objects.ok()) return objects.status();
    EtcdDurability::Options options;
    options.prefix = EtcdPrefix();
    options.lease_ttl = absl::Seconds(2);
    options.claim_wait = claim_wait;
    options.inline_bytes = inline_bytes_;
    options.snapshot_records = snapshot_records_;
    options.max_log_records = max_log_records_;
    options.gc_grace = absl::ZeroDuration();
    options.cache_dir = cache_dir_;
    options.checkpoint_budget = checkpoint_budget_;
    if (quota_bytes_ > 0) {
      options.etcd_quota_bytes = quota_bytes_;
      options.space_guard = 0.5;
    }
    options.maintenance_interval = absl::Hours(1);  // the tests call Maintain
    options.commit_timeout = absl::Seconds(10);
    options.commit_fault = [this]() -> absl::Status {
      if (fail_next_.exchange(false)) {
        return absl::UnavailableError("the log record could not be committed (injected)");
      }
      return absl::OkStatus();
    };
    options.state_answer_fault = [this]() -> absl::Status {
      if (lose_state_answer_.exchange(false)) {
        return absl::UnavailableError("etcd: the transaction's answer was lost (injected)");
      }
      return absl::OkStatus();
    };
    options.shards = member_fences_;
    options.store_limits = store_limits_;
    options.hooks.on_restore = on_restore_;
    if (shards_ == 0) {
      return EtcdDurability::Open(*std::move(client), *std::move(objects), backend_, recovered,
                                  std::move(options));
    }
    // A member: the previous one's lease lapses (its claims go), this one claims every shard.
    if (fences_ != nullptr) fences_->Revoke();
    absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> fences_client = cluster->Client();
    if (!fences_client.ok()) return fences_client.status();
    absl::StatusOr<std::shared_ptr<TestShardFences>> fences = TestShardFences::Claim(
        *std::move(fences_client), EtcdPrefix(), shards_, absl::StrCat("member-", ++members_));
    if (!fences.ok()) return fences.status();
    fences_ = *fences;
    options.shards = fences_;
    absl::StatusOr<std::unique_ptr<EtcdDurability>> opened = EtcdDurability::Open(
        *std::move(client), *std::move(objects), backend_, recovered, std::move(options));
    if (!opened.ok()) return opened.status();
    for (int shard = 0; shard < shards_; ++shard) {
      RETURN_IF_ERROR((*opened)->OpenShard(shard, recovered));
    }
    return opened;
  }

  void FailNextAppend() { fail_next_ = true; }
  // The next state a server publishes commits in etcd, but its answer is lost.
  void LoseNextStateAnswer() { lose_state_answer_ = true; }
  // A client of the etcd, and the bucket under this harness's prefix, for tests to look.
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> Client() {
    etcd::testing::EtcdCluster* cluster = cluster_ != nullptr ? cluster_ : SharedEtcd();
    if (cluster == nullptr) return absl::UnavailableError("no etcd");
    return cluster->Client();
  }
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> Objects() { return SharedBucket(prefix_); }
  std::string EtcdPrefix() const { return absl::StrCat("/adaptd-test/", prefix_, "/"); }
  void set_inline_bytes(size_t bytes) { inline_bytes_ = bytes; }
  void set_snapshot_records(size_t records) { snapshot_records_ = records; }
  void set_cache_dir(const std::string& dir) { cache_dir_ = dir; }
  void set_checkpoint_budget(absl::Duration budget) { checkpoint_budget_ = budget; }
  void set_max_log_records(size_t records) { max_log_records_ = records; }
  // Members opened next count stores through etcd (EtcdDurability::Options::store_limits).
  void set_store_limits(std::shared_ptr<const TenantQuotas> limits) {
    store_limits_ = std::move(limits);
  }
  // What servers opened next call for each store they rebuild from its state and log.
  void set_on_restore(std::function<void(double)> on_restore) {
    on_restore_ = std::move(on_restore);
  }
  // Servers open on `cluster` (whose quota is `quota_bytes`) instead of the shared one.
  void set_cluster(etcd::testing::EtcdCluster* cluster, int64_t quota_bytes) {
    cluster_ = cluster;
    quota_bytes_ = quota_bytes;
  }
  const std::string& prefix() const { return prefix_; }

 private:
  kernels::Backend* const backend_;
  const std::string prefix_;
  std::atomic<bool> fail_next_{false};
  std::atomic<bool> lose_state_answer_{false};
  size_t inline_bytes_ = 64 << 10;
  size_t snapshot_records_ = 1024;
  size_t max_log_records_ = 16384;
  etcd::testing::EtcdCluster* cluster_ = nullptr;
  std::string cache_dir_;
  absl::Duration checkpoint_budget_ = absl::Seconds(15);
  int64_t quota_bytes_ = 0;
  int shards_ = 0;
  int members_ = 0;
  std::shared_ptr<TestShardFences> fences_;
  std::shared_ptr<TestShardFences> member_fences_;  // for OpenMember
  std::shared_ptr<const TenantQuotas> store_limits_;
  std::function<void(double)> on_restore_;
};

// EtcdHarness for a cluster member holding every one of 8 shards.
class EtcdShardedHarness : public EtcdHarness {
 public:
  explicit EtcdShardedHarness(kernels::Backend* backend) : EtcdHarness(backend) { set_shards(8); }
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_DURABILITY_TESTING_ETCD_HARNESS_H_
