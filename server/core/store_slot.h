// StoreSlot: one store's place in the registry. It always knows the store's spec and its last
// description; it holds the Store itself only while the store is loaded. A slot made from a
// catalog entry starts cold and loads on the first Get (docs/RESIDENCY.md): concurrent first
// calls load once, the others waiting for it; a failed load answers every waiter with its
// error and leaves the slot cold, so a later call tries again.
//
// Thread-safety: every method may be called concurrently. The loader runs without the slot's
// lock held.
#ifndef ADAPTD_SERVER_CORE_STORE_SLOT_H_
#define ADAPTD_SERVER_CORE_STORE_SLOT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/store.h"

namespace adaptd {

class StoreSlot {
 public:
  using Loader = std::function<absl::StatusOr<std::shared_ptr<Store>>()>;

  // A loaded store.
  explicit StoreSlot(std::shared_ptr<Store> store);
  // A cold store: `info` as last described (its memory_bytes what the store holds when
  // loaded), and the loader that reads it back.
  StoreSlot(adapt::v1::StoreInfo info, Loader loader);

  // The store, loaded first when cold.
  absl::StatusOr<std::shared_ptr<Store>> Get() ABSL_LOCKS_EXCLUDED(mu_);
  // The loaded store, or null when cold; never loads.
  std::shared_ptr<Store> loaded() const ABSL_LOCKS_EXCLUDED(mu_);
  // Never loads.
  adapt::v1::StoreSpec spec() const ABSL_LOCKS_EXCLUDED(mu_);
  // The loaded store's description (tier hot), or the last one (tier cold, memory_bytes 0:
  // a cold store holds nothing but its slot). Never loads.
  adapt::v1::StoreInfo Describe() const ABSL_LOCKS_EXCLUDED(mu_);
  // What the store holds when loaded: its memory_bytes now, or when it was last described.
  uint64_t loaded_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // The monotonic time of the last Get, for least-recently-used order.
  int64_t last_use_nanos() const { return last_use_.load(std::memory_order_relaxed); }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<Store> store_ ABSL_GUARDED_BY(mu_);
  adapt::v1::StoreInfo info_ ABSL_GUARDED_BY(mu_);  // when cold
  const Loader loader_;
  bool loading_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> last_use_{0};
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_STORE_SLOT_H_
