#include "server/core/residency.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace adaptd {

Residency::Residency(uint64_t budget_bytes, Evict evict, Observe observe, Overhead overhead)
    : budget_(budget_bytes),
      evict_(std::move(evict)),
      observe_(std::move(observe)),
      overhead_(std::move(overhead)) {
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

uint64_t Residency::PinnedBytes() const {
  absl::MutexLock lock(&mu_);
  uint64_t total = 0;
  absl::flat_hash_set<const StoreSlot*> seen;
  for (const auto& weak : loaded_) {
    std::shared_ptr<StoreSlot> slot = weak.lock();
    if (slot != nullptr && slot->pinned() && seen.insert(slot.get()).second) {
      total += slot->noted_bytes();
    }
  }
  return total;
}

void Residency::Loop() {
  // Still over the budget after a round (the stores it would evict were in use): look again
  // after a pause that doubles, from 5 ms to 1 s, until a round fits.
  absl::Duration retry = absl::InfiniteDuration();
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time deadline = absl::Now() + retry;
      while (!wanted_ && !stopping_ && absl::Now() < deadline) {
        wake_.WaitWithDeadline(&mu_, deadline);
      }
      if (stopping_) return;
      wanted_ = false;
    }
    if (EvictNow() <= budget_) {
      retry = absl::InfiniteDuration();
    } else {
      retry = retry == absl::InfiniteDuration() ? absl::Milliseconds(5)
                                                : std::min(2 * retry, absl::Seconds(1));
    }
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
      if (slot == nullptr || !slot->resident() || !seen.insert(slot.get()).second) {
        continue;
      }
      live.push_back(slot);
      kept.push_back(std::move(weak));
    }
    loaded_ = std::move(kept);
  }
  std::vector<std::pair<std::shared_ptr<StoreSlot>, uint64_t>> by_use;
  const uint64_t overhead = overhead_ ? overhead_(/*release=*/false) : 0;
  uint64_t total = overhead;
  for (auto& slot : live) {
    const uint64_t bytes = slot->noted_bytes();
    total += bytes;
    by_use.emplace_back(std::move(slot), bytes);
  }
  size_t loaded = by_use.size();
  if (total > budget_ && overhead > 0) total = total - overhead + overhead_(/*release=*/true);
  if (total > budget_) {
    std::sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) {
      return a.first->last_use_nanos() < b.first->last_use_nanos();
    });
    // Each eviction takes a store one tier down (hot → warm → cold): a second pass takes the
    // stores the first left warm further down, oldest first, while still over the budget.
    for (int pass = 0; pass < 2 && total > budget_; ++pass) {
      for (auto& [slot, bytes] : by_use) {
        if (total <= budget_) break;
        if (bytes == 0 || slot->pinned() || !evict_(slot)) continue;
        const uint64_t now = slot->noted_bytes();
        total -= std::min(total, bytes - std::min(bytes, now));
        bytes = now;
        if (now == 0) --loaded;
      }
    }
  }
  if (observe_) observe_(total, loaded);
  return total;
}

}  // namespace adaptd
