// HotStores: the shards' hot lists from the stores' uses.
#include "server/cluster/hot_stores.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace adaptd::cluster {

std::string EncodeHotList(const std::vector<std::string>& keys) {
  return absl::StrJoin(keys, "\n");
}

std::vector<std::string> DecodeHotList(absl::string_view value) {
  return absl::StrSplit(value, '\n', absl::SkipEmpty());
}

void HotStores::Adopted(int shard, int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  shards_[shard] = Shard{.adopted_nanos = now_nanos};
}

void HotStores::Inherit(int shard, std::vector<std::string> list) {
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(shard);
  if (it == shards_.end()) return;
  it->second.known = true;
  it->second.written = list;
  it->second.inherited = std::move(list);
}

void HotStores::Restored(int shard, const std::string& key, int64_t stamp) {
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(shard);
  if (it != shards_.end()) it->second.restored[key] = stamp;
}

void HotStores::Released(int shard) {
  absl::MutexLock lock(&mu_);
  shards_.erase(shard);
}

std::optional<std::vector<std::string>> HotStores::Changed(
    int shard, const std::vector<StoreUse>& uses) const {
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(shard);
  if (it == shards_.end() || !it->second.known) return std::nullopt;
  const Shard& state = it->second;
  std::vector<const StoreUse*> called;
  std::set<std::string> held;
  for (const StoreUse& use : uses) {
    held.insert(use.key);
    if (use.last_use_nanos <= state.adopted_nanos) continue;  // not since the adoption
    auto restored = state.restored.find(use.key);
    if (restored != state.restored.end() && restored->second == use.last_use_nanos) continue;
    called.push_back(&use);
  }
  std::sort(called.begin(), called.end(), [](const StoreUse* a, const StoreUse* b) {
    return a->last_use_nanos != b->last_use_nanos ? a->last_use_nanos > b->last_use_nanos
                                                  : a->key < b->key;
  });
  std::vector<std::string> list;
  std::set<std::string> listed;
  for (const StoreUse* use : called) {
    if (list.size() == size_) break;
    list.push_back(use->key);
    listed.insert(use->key);
  }
  for (const std::string& key : state.inherited) {
    if (list.size() == size_) break;
    if (held.count(key) == 0 || listed.count(key) > 0) continue;
    list.push_back(key);
    listed.insert(key);
  }
  if (list == state.written) return std::nullopt;
  return list;
}

void HotStores::Written(int shard, std::vector<std::string> list) {
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(shard);
  if (it != shards_.end()) it->second.written = std::move(list);
}

}  // namespace adaptd::cluster
