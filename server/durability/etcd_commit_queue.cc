#include "server/durability/etcd_commit_queue.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/durability/durability.h"

namespace adaptd {
namespace {

etcdserverpb::RequestOp RangeOf(const std::string& key) {
  etcdserverpb::RequestOp op;
  op.mutable_request_range()->set_key(key);
  return op;
}

// Failures that say the transaction was refused as a whole, before anything was applied.
bool Definitive(const absl::Status& status) {
  return absl::IsResourceExhausted(status) || absl::IsInvalidArgument(status) ||
         absl::IsFailedPrecondition(status) || absl::IsOutOfRange(status) ||
         absl::IsPermissionDenied(status);
}

}  // namespace

etcdserverpb::Compare EtcdFence::Compare() const {
  return by_mod_revision ? etcd::ModRevisionIs(key, revision)
                         : etcd::CreateRevisionIs(key, revision);
}

int64_t EtcdFence::RevisionOf(const mvccpb::KeyValue& claim) const {
  return by_mod_revision ? claim.mod_revision() : claim.create_revision();
}

std::string EtcdFence::Token() const { return absl::StrCat(key, "@", revision); }

EtcdCommitQueue::EtcdCommitQueue(etcd::EtcdClient* client, Options options)
    : client_(client), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

EtcdCommitQueue::~EtcdCommitQueue() { Stop(); }

void EtcdCommitQueue::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status EtcdCommitQueue::Commit(const std::string& store, const std::string& log_key,
                                     std::string value, const EtcdFence& fence, bool* unknown) {
  Item item;
  item.store = store;
  item.log_key = log_key;
  item.value = std::move(value);
  item.fence = fence;
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the etcd log is closed");
  queue_.push_back(&item);
  mu_.Await(absl::Condition(&item.done));
  if (unknown != nullptr) *unknown = item.unknown;
  return item.status;
}

void EtcdCommitQueue::ClearUncertain(const std::string& store) {
  absl::MutexLock lock(&mu_);
  uncertain_.erase(store);
}

void EtcdCommitQueue::Run() {
  for (;;) {
    Group group;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) {
        for (Item* item : queue_) {
          item->status = absl::UnavailableError("the etcd log closed before the record was sent");
          item->done = true;
        }
        queue_.clear();
        return;
      }
      group = TakeGroup();
    }
    if (!group.empty()) CommitGroup(group);
    absl::MutexLock lock(&mu_);
    for (const auto& [store, items] : group) {
      for (Item* item : items) {
        item->done = true;
        if (item->unknown) uncertain_.insert(store);
      }
    }
  }
}

EtcdCommitQueue::Group EtcdCommitQueue::TakeGroup() {
  Group group;
  std::map<std::string, size_t> index;
  size_t bytes = 0, widest = 0;
  while (!queue_.empty()) {
    Item* item = queue_.front();
    if (uncertain_.contains(item->store)) {
      item->status = absl::UnavailableError(
          absl::StrCat("store ", item->store,
                       ": an earlier write's outcome is unknown (etcd stopped answering); retry"));
      item->done = true;
      queue_.pop_front();
      continue;
    }
    auto it = index.find(item->store);
    const size_t stores = group.size() + (it == index.end() ? 1 : 0);
    const size_t records = it == index.end() ? 1 : group[it->second].second.size() + 1;
    const size_t item_bytes = item->log_key.size() + item->value.size() + 64;
    // etcd counts a nested transaction's operations against what its parent leaves.
    const bool fits =
        static_cast<int>(stores + 1 + std::max(widest, records)) <= options_.max_ops &&
        bytes + item_bytes <= options_.max_bytes;
    if (!group.empty() && !fits) break;
    if (it == index.end()) {
      index[item->store] = group.size();
      group.push_back({item->store, {}});
      it = index.find(item->store);
    }
    group[it->second].second.push_back(item);
    widest = std::max(widest, records);
    bytes += item_bytes;
    queue_.pop_front();
  }
  return group;
}

void EtcdCommitQueue::CommitGroup(const Group& group) {
  etcdserverpb::TxnRequest request;
  for (const auto& [store, items] : group) {
    etcdserverpb::TxnRequest* nested = request.add_success()->mutable_request_txn();
    const EtcdFence& fence = items.front()->fence;
    *nested->add_compare() = fence.Compare();
    for (const Item* item : items) {
      *nested->add_compare() = etcd::CreateRevisionIs(item->log_key, 0);
      etcdserverpb::PutRequest* put = nested->add_success()->mutable_request_put();
      put->set_key(item->log_key);
      put->set_value(item->value);
    }
    // What a failed comparison was: the claim as it is, and the first key as it is.
    *nested->add_failure() = RangeOf(fence.key);
    *nested->add_failure() = RangeOf(items.front()->log_key);
  }
  if (options_.fault) {
    if (absl::Status refused = options_.fault(); !refused.ok()) {
      for (const auto& [store, items] : group) {
        for (Item* item : items) item->status = refused;
      }
      return;
    }
  }
  const absl::Time deadline = absl::Now() + options_.commit_timeout;
  bool maybe_committed = false;
  absl::Duration backoff = absl::Milliseconds(50);
  absl::Status last;
  size_t records = 0;
  for (const auto& [store, items] : group) records += items.size();
  for (;;) {
    const absl::Time sent = absl::Now();
    absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(request);
    if (response.ok()) {
      if (options_.on_commit)
        options_.on_commit(absl::ToDoubleSeconds(absl::Now() - sent), records);
      Settle(group, *response);
      return;
    }
    if (options_.on_error) options_.on_error();
    last = response.status();
    maybe_committed = maybe_committed || etcd::IsOutcomeUnknown(last);
    if (Definitive(last) && !maybe_committed) break;
    if (absl::Now() + backoff > deadline) break;
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
  const absl::Status failed =
      absl::IsResourceExhausted(last) && !maybe_committed
          ? last
          : absl::UnavailableError(absl::StrCat(
                "the write's log record could not be committed in etcd: ", last.message()));
  for (const auto& [store, items] : group) {
    for (Item* item : items) {
      item->status = failed;
      item->unknown = maybe_committed;
    }
  }
}

void EtcdCommitQueue::Settle(const Group& group, const etcdserverpb::TxnResponse& response) {
  for (size_t i = 0; i < group.size(); ++i) {
    const std::vector<Item*>& items = group[i].second;
    absl::Status status;
    const etcdserverpb::TxnResponse* nested = static_cast<int>(i) < response.responses_size()
                                                  ? &response.responses(i).response_txn()
                                                  : nullptr;
    if (nested == nullptr) {
      status = absl::InternalError("etcd answered a group commit without its store's part");
    } else if (!nested->succeeded()) {
      const auto& claim = nested->responses(0).response_range();
      const auto& first = nested->responses(1).response_range();
      if (first.kvs_size() == 1 && first.kvs(0).value() == items.front()->value) {
        status = absl::OkStatus();  // an earlier attempt of this transaction committed it
      } else if (const EtcdFence& fence = items.front()->fence;
                 claim.kvs_size() == 0 || fence.RevisionOf(claim.kvs(0)) != fence.revision) {
        status = OwnershipLostError(
            group[i].first,
            claim.kvs_size() == 0
                ? absl::StrCat("the claim ", fence.key, " is gone (its lease lapsed)")
                : absl::StrCat("the claim ", fence.key, " was taken over at revision ",
                               fence.RevisionOf(claim.kvs(0))));
      } else {
        status = absl::InternalError(absl::StrCat("store ", group[i].first, ": log key ",
                                                  items.front()->log_key,
                                                  " holds another record already"));
      }
    }
    if (IsOwnershipLost(status) && options_.on_fence_failure) options_.on_fence_failure();
    for (Item* item : items) item->status = status;
  }
}

}  // namespace adaptd
