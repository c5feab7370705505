#include "server/core/residency.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace adaptd {

Residency::Residency(uint64_t budget_bytes, Evict evict, Observe observe, Overhead overhead,
                     uint64_t headroom_bytes)
    : budget_(budget_bytes),
      headroom_(std::min(headroom_bytes, budget_bytes)),
      evict_(std::move(evict)),
      observe_(std::move(observe)),
      overhead_(std::move(overhead)),
      tally_(std::make_shared<StoreSlot::ByteTally>(0)) {
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

uint64_t Residency::Total(bool release) const {
  if (release && overhead_) overhead_(/*release=*/true);
  const int64_t stores = tally_->load(std::memory_order_relaxed);
  return static_cast<uint64_t>(std::max<int64_t>(stores, 0)) +
         (overhead_ ? overhead_(/*release=*/false) : 0);
}

uint64_t Residency::ResidentBytes() const { return Total(/*release=*/false); }

void Residency::Check() {
  const uint64_t total = Total(/*release=*/false);
  if (observe_) observe_(total);
  absl::MutexLock lock(&mu_);
  if (total > budget_ || loaded_.size() > 2 * tidied_size_ + 1024) {
    wanted_ = true;
    wake_.Signal();
  }
}

void Residency::Loaded(const std::shared_ptr<StoreSlot>& slot) {
  slot->CountIn(tally_);
  {
    absl::MutexLock lock(&mu_);
    loaded_.push_back(slot);
  }
  Check();
}

void Residency::Grew() { Check(); }

uint64_t Residency::PinnedBytes() const {
  // A round takes the list whole while it runs: without its lock the pinned stores it holds
  // would not be counted.
  absl::MutexLock round(&round_mu_);
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

namespace {
constexpr int kShedPasses = 8;  // passes over the remembered predictions in one round
}  // namespace

uint64_t Residency::EvictNow() {
  absl::MutexLock round(&round_mu_);
  // The list is taken whole, so loads go on adding to an empty one meanwhile.
  std::vector<std::weak_ptr<StoreSlot>> listed;
  {
    absl::MutexLock lock(&mu_);
    listed.swap(loaded_);
  }
  // Forget slots that were deleted or are no longer loaded; keep each once.
  std::vector<std::shared_ptr<StoreSlot>> live;
  std::vector<std::weak_ptr<StoreSlot>> kept;
  {
    absl::flat_hash_set<const StoreSlot*> seen;
    seen.reserve(listed.size());
    for (auto& weak : listed) {
      std::shared_ptr<StoreSlot> slot = weak.lock();
      // A cold store's slot may still hold remembered predictions (kept across tiers).
      const bool holds = slot != nullptr && (slot->resident() || slot->remembered_bytes() > 0);
      if (!holds || !seen.insert(slot.get()).second) continue;
      live.push_back(std::move(slot));
      kept.push_back(std::move(weak));
    }
  }
  listed.clear();
  listed.shrink_to_fit();
  {
    absl::MutexLock lock(&mu_);
    kept.insert(kept.end(), std::make_move_iterator(loaded_.begin()),
                std::make_move_iterator(loaded_.end()));
    loaded_.swap(kept);
    tidied_size_ = loaded_.size();
  }
  kept.clear();
  kept.shrink_to_fit();

  uint64_t total = Total(/*release=*/false);
  if (total > budget_) total = Total(/*release=*/true);  // idle buffers go before any store
  if (total > budget_) {
    const uint64_t target = budget_ - headroom_;
    // Last uses read once: they change while the round runs, and a sort needs fixed keys.
    std::vector<std::pair<int64_t, std::shared_ptr<StoreSlot>>> by_use;
    by_use.reserve(live.size());
    for (auto& slot : live) {
      const int64_t used = slot->last_use_nanos();
      by_use.emplace_back(used, std::move(slot));
    }
    live.clear();
    std::sort(by_use.begin(), by_use.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    // Remembered predictions go before any store (docs/FEEDBACK.md, "Memory bounds"): cheap to
    // lose (feedback sends the input with Adapt instead), oldest stores' first. Predictions
    // served while a pass runs push more, so each shed takes a slack of 1/64 of the budget
    // beyond the target, and passes go on while one freed something and the total is still
    // over (up to kShedPasses), so a store leaves memory for them only if serving outruns
    // every pass.
    const uint64_t slack = budget_ / 64;
    for (int pass = 0, freed = 1; pass < kShedPasses && freed > 0 && total > target; ++pass) {
      freed = 0;
      for (const auto& [used, slot] : by_use) {
        if (total <= target) break;
        if (slot->remembered_bytes() == 0) continue;
        if (slot->ShedRemembered(total - target + slack) > 0) freed = 1;
        total = Total(/*release=*/false);
      }
    }
    // Each eviction takes a store one tier down (hot → warm → cold): a second pass takes the
    // stores the first left warm further down, oldest first, while still over the target.
    for (int pass = 0; pass < 2 && total > target; ++pass) {
      for (const auto& [used, slot] : by_use) {
        if (total <= target) break;
        if (slot->noted_bytes() <= slot->remembered_bytes() || slot->pinned()) continue;
        if (evict_(slot)) total = Total(/*release=*/false);
      }
    }
  }
  if (observe_) observe_(total);
  return total;
}

}  // namespace adaptd
