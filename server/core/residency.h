// Residency: keeps the memory that loaded stores hold within the memory budget
// (--memory-budget-bytes, docs/RESIDENCY.md) by evicting the least recently used stores. The
// engine reports each store that takes memory (a create, an import, a load); from then on the
// slot keeps a running total up to date with each change of its size (StoreSlot::CountIn),
// so a load or a commit costs a few atomic operations whatever the number of stores. Only
// when the total passes the budget does the background thread run a round: it sorts the
// loaded stores by last use and evicts, oldest first, until the total is `headroom` bytes
// under the budget, so that the next rounds are as many loads away. The stores' remembered
// predictions (StoreSlot::remembered_bytes, docs/FEEDBACK.md) count in the total and go
// first: a round over the budget drops them, oldest stores' first, before it evicts a store.
// Eviction itself (the store written if it changed, then dropped) is the engine's callback, which
// refuses a store in use or pinned; while the total stays over the budget the thread looks again
// after a growing pause (5 ms to 1 s).
//
// Thread-safety: every method may be called concurrently. The callbacks run on the residency
// thread (or on the caller's, for EvictNow) without the residency's lock.
#ifndef ADAPTD_SERVER_CORE_RESIDENCY_H_
#define ADAPTD_SERVER_CORE_RESIDENCY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/core/store_slot.h"

namespace adaptd {

class Residency {
 public:
  // Evicts one store: true when its memory was freed.
  using Evict = std::function<bool(const std::shared_ptr<StoreSlot>&)>;
  // The bytes loaded stores (and the overhead) hold: after each load, growth and round.
  using Observe = std::function<void(uint64_t resident_bytes)>;

  // Memory held for the stores that no store counts (the shared transaction buffers),
  // added to each round's total; with `release`, what can be freed is freed first (a round
  // over the budget does that before it evicts a store).
  using Overhead = std::function<uint64_t(bool release)>;

  // A round frees `headroom_bytes` more than the budget needs (0: just enough).
  Residency(uint64_t budget_bytes, Evict evict, Observe observe, Overhead overhead = nullptr,
            uint64_t headroom_bytes = 0);
  ~Residency();
  Residency(const Residency&) = delete;
  Residency& operator=(const Residency&) = delete;

  // `slot` holds a loaded store now (created, imported or loaded).
  void Loaded(const std::shared_ptr<StoreSlot>& slot) ABSL_LOCKS_EXCLUDED(mu_);
  // Something may have grown (a commit): check the budget again.
  void Grew() ABSL_LOCKS_EXCLUDED(mu_);
  // One round on the caller's thread: when over the budget, evicts until the total is the
  // headroom under it (or nothing more can go). Returns the resident bytes after it.
  uint64_t EvictNow() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the thread (also the destructor).
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  uint64_t budget_bytes() const { return budget_; }
  // What the loaded stores and the overhead hold now (the running total).
  uint64_t ResidentBytes() const;
  // What the pinned loaded stores hold, in all (a walk over the loaded stores). A round in
  // progress holds the list, so this waits for it to end.
  uint64_t PinnedBytes() const ABSL_LOCKS_EXCLUDED(mu_, round_mu_);

 private:
  void Loop();
  // Reports the total and wakes the thread when it is over the budget.
  void Check() ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t Total(bool release) const;

  const uint64_t budget_;
  const uint64_t headroom_;
  const Evict evict_;
  const Observe observe_;
  const Overhead overhead_;
  mutable absl::Mutex round_mu_;  // one round at a time
  mutable absl::Mutex mu_ ABSL_ACQUIRED_AFTER(round_mu_);
  const std::shared_ptr<StoreSlot::ByteTally> tally_;
  // Every slot reported loaded (a slot may appear more than once, or be cold or gone now:
  // each round keeps the loaded ones, once each).
  std::vector<std::weak_ptr<StoreSlot>> loaded_ ABSL_GUARDED_BY(mu_);
  // loaded_'s size after the last round; a list twice as long asks for a round to tidy it.
  size_t tidied_size_ ABSL_GUARDED_BY(mu_) = 0;
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar wake_;
  std::thread thread_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_RESIDENCY_H_
