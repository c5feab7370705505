#include "server/core/store_slot.h"

#include <utility>

#include "absl/time/clock.h"

namespace adaptd {

StoreSlot::StoreSlot(std::shared_ptr<Store> store) : store_(std::move(store)) {
  last_use_ = absl::GetCurrentTimeNanos();
}

StoreSlot::StoreSlot(adapt::v1::StoreInfo info, Loader loader)
    : info_(std::move(info)), loader_(std::move(loader)) {}

absl::StatusOr<std::shared_ptr<Store>> StoreSlot::Get() {
  last_use_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  for (;;) {
    if (store_ != nullptr) return store_;
    if (!loading_) break;
    // Another call is loading it: wait for its outcome, then look again.
    const auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !loading_; };
    mu_.Await(absl::Condition(&done));
  }
  if (!loader_) return absl::InternalError("the store is not loaded and has no loader");
  loading_ = true;
  mu_.Unlock();
  absl::StatusOr<std::shared_ptr<Store>> loaded = loader_();
  mu_.Lock();
  loading_ = false;
  if (!loaded.ok()) return loaded.status();
  store_ = *loaded;
  return store_;
}

std::shared_ptr<Store> StoreSlot::loaded() const {
  absl::MutexLock lock(&mu_);
  return store_;
}

adapt::v1::StoreSpec StoreSlot::spec() const {
  std::shared_ptr<Store> store = loaded();
  if (store != nullptr) return store->spec();
  absl::MutexLock lock(&mu_);
  return info_.spec();
}

adapt::v1::StoreInfo StoreSlot::Describe() const {
  adapt::v1::StoreInfo info;
  if (std::shared_ptr<Store> store = loaded(); store != nullptr) {
    store->Describe(&info);
    info.set_tier(adapt::v1::TIER_HOT);
    return info;
  }
  {
    absl::MutexLock lock(&mu_);
    info = info_;
  }
  info.set_tier(adapt::v1::TIER_COLD);
  info.set_memory_bytes(0);
  return info;
}

uint64_t StoreSlot::loaded_bytes() const {
  if (std::shared_ptr<Store> store = loaded(); store != nullptr) {
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    return info.memory_bytes();
  }
  absl::MutexLock lock(&mu_);
  return info_.memory_bytes();
}

}  // namespace adaptd
