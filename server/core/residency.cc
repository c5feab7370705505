#include "server/core/residency.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace adaptd {

Residency::Residency(uint64_t budget_bytes, Evict evict, Observe observe)
    : budget_(budget_bytes), evict_(std::move(evict)), observe_(std::move(observe)) {
  thread_ = std::thread([this] { Loop(); });
}

Residency::~Residency() { Stop(); }

void Residency::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void Residency::Loaded(const std::shared_ptr<StoreSlot>& slot) {
  absl::MutexLock lock(&mu_);
  loaded_.push_back(slot);
  wanted_ = true;
  wake_.Signal();
}

void Residency::Grew() {
  absl::MutexLock lock(&mu_);
  wanted_ = true;
  wake_.Signal();
}

void Residency::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      while (!wanted_ && !stopping_) wake_.Wait(&mu_);
      if (stopping_) return;
      wanted_ = false;
    }
    EvictNow();
  }
}

uint64_t Residency::EvictNow() {
  absl::MutexLock round(&round_mu_);
  std::vector<std::shared_ptr<StoreSlot>> live;
  {
    absl::MutexLock lock(&mu_);
    // Forget slots that were deleted or are no longer loaded; keep each once.
    std::vector<std::weak_ptr<StoreSlot>> kept;
    absl::flat_hash_set<const StoreSlot*> seen;
    for (auto& weak : loaded_) {
      std::shared_ptr<StoreSlot> slot = weak.lock();
      if (slot == nullptr || slot->loaded() == nullptr || !seen.insert(slot.get()).second) {
        continue;
      }
      live.push_back(slot);
      kept.push_back(std::move(weak));
    }
    loaded_ = std::move(kept);
  }
  std::vector<std::pair<std::shared_ptr<StoreSlot>, uint64_t>> by_use;
  uint64_t total = 0;
  for (auto& slot : live) {
    const uint64_t bytes = slot->loaded_bytes();
    total += bytes;
    by_use.emplace_back(std::move(slot), bytes);
  }
  size_t loaded = by_use.size();
  if (total > budget_) {
    std::sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) {
      return a.first->last_use_nanos() < b.first->last_use_nanos();
    });
    for (const auto& [slot, bytes] : by_use) {
      if (total <= budget_) break;
      if (evict_(slot)) {
        total -= std::min(total, bytes);
        --loaded;
      }
    }
  }
  if (observe_) observe_(total, loaded);
  return total;
}

}  // namespace adaptd
