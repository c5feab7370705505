// EtcdDurability: a cluster member's store counts (docs/CLUSTER_ETCD.md, "Quotas and base
// stores"). The count of a tenant with max_stores is PREFIX/tenants/TENANT/stores (decimal),
// changed in the very transaction that creates or deletes a store entry, so it is exact over
// every member without asking one. A count that is absent (the limit is new, or was lifted
// and set again) is counted from the tenant's entries under every shard, and the transaction
// that writes it first compares that it is still absent: every create and delete of a limited
// tenant writes the count, so none can slip between the scan and that transaction.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"

namespace adaptd {

std::string EtcdDurability::StoreCountKey(const std::string& tenant) const {
  return absl::StrCat(options_.prefix, "tenants/", tenant, "/stores");
}

absl::StatusOr<int64_t> EtcdDurability::StoreCountRevision(const std::string& count_key,
                                                           uint64_t* count) {
  etcdserverpb::RangeRequest request;
  request.set_key(count_key);
  absl::StatusOr<etcdserverpb::RangeResponse> read = client_->Range(request);
  Count(read.status(), "etcd");
  if (!read.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the store count ", count_key, ": etcd: ", read.status().message()));
  }
  if (read->kvs_size() == 0) return 0;
  // A value that is not a count is counted again, as an absent one.
  if (!absl::SimpleAtoi(read->kvs(0).value(), count)) *count = ~uint64_t{0};
  return read->kvs(0).mod_revision();
}

absl::StatusOr<uint64_t> EtcdDurability::CountEntriesOf(const std::string& tenant) {
  // Keys only, once per count made: entries and log records of every shard
  // (PREFIX/shards/SSSS/stores/TENANT/STORE, PREFIX/shards/SSSS/log/...); a read per shard
  // would be thousands.
  const std::string shards = options_.prefix + "shards/";
  absl::StatusOr<std::vector<mvccpb::KeyValue>> keys =
      client_->RangePrefix(shards, /*keys_only=*/true);
  Count(keys.status(), "etcd");
  if (!keys.ok()) {
    return absl::UnavailableError(
        absl::StrCat("counting tenant '", tenant, "''s stores: etcd: ", keys.status().message()));
  }
  const std::string entry = absl::StrCat("/stores/", tenant, "/");
  uint64_t count = 0;
  for (const mvccpb::KeyValue& kv : *keys) {
    const absl::string_view rest = absl::string_view(kv.key()).substr(shards.size());
    const size_t slash = rest.find('/');
    if (slash != absl::string_view::npos && absl::StartsWith(rest.substr(slash), entry)) ++count;
  }
  return count;
}

absl::StatusOr<EtcdDurability::CountChange> EtcdDurability::ChangeStoreCount(
    const std::string& tenant, int delta) {
  CountChange change;
  if (!CountsStores()) return change;
  const std::string key = StoreCountKey(tenant);
  const uint64_t limit = options_.store_limits->LimitsOf(tenant).max_stores;
  if (limit == 0) {
    // A count an earlier limit left would be stale by the time a limit is set again: dropped
    // (no read; nothing to drop, nothing written).
    change.ops.resize(1);
    change.ops[0].mutable_request_delete_range()->set_key(key);
    return change;
  }
  uint64_t count = 0;
  ASSIGN_OR_RETURN(change.mod_revision, StoreCountRevision(key, &count));
  if (change.mod_revision == 0 || count == ~uint64_t{0}) {
    ASSIGN_OR_RETURN(count, CountEntriesOf(tenant));
  }
  if (delta > 0) RETURN_IF_ERROR(options_.store_limits->CheckStores(tenant, count));
  const uint64_t next = delta > 0 ? count + 1 : (count > 0 ? count - 1 : 0);
  change.key = key;
  change.compares = {change.mod_revision == 0 ? etcd::VersionIs(key, 0)
                                              : etcd::ModRevisionIs(key, change.mod_revision)};
  change.ops.resize(1);
  change.ops[0].mutable_request_put()->set_key(key);
  change.ops[0].mutable_request_put()->set_value(absl::StrCat(next));
  return change;
}

absl::Status EtcdDurability::CountedTxn(const std::string& key, int delta,
                                        std::vector<etcdserverpb::Compare> compares,
                                        std::vector<etcdserverpb::RequestOp> ops) {
  const std::string tenant = key.substr(0, key.find('/'));
  absl::BitGen bits;
  for (int attempt = 0; attempt < kCountTries; ++attempt) {
    ASSIGN_OR_RETURN(CountChange change, ChangeStoreCount(tenant, delta));
    std::vector<etcdserverpb::Compare> all_compares = compares;
    std::vector<etcdserverpb::RequestOp> all_ops = ops;
    std::move(change.compares.begin(), change.compares.end(), std::back_inserter(all_compares));
    std::move(change.ops.begin(), change.ops.end(), std::back_inserter(all_ops));
    absl::Status done = FencedTxn(key, std::move(all_compares), std::move(all_ops));
    if (change.key.empty() || !absl::IsFailedPrecondition(done)) return done;
    // A comparison failed: the count's, when another create or delete of the tenant changed
    // it first (read again and retried), or the caller's own.
    uint64_t count = 0;
    ASSIGN_OR_RETURN(const int64_t now, StoreCountRevision(change.key, &count));
    if (now == change.mod_revision) return done;
    absl::SleepFor(absl::Microseconds(absl::Uniform(bits, 0, 500 * (attempt + 1))));
  }
  return absl::UnavailableError(absl::StrCat(
      "quota max_stores: tenant '", tenant, "': its store count in etcd was changed by other ",
      "creates and deletes of the tenant at each of ", kCountTries, " tries; try again"));
}

}  // namespace adaptd
