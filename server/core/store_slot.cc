#include "server/core/store_slot.h"

#include <utility>

#include "absl/time/clock.h"

namespace adaptd {
namespace {

uint64_t MemoryOf(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.memory_bytes();
}

}  // namespace

StoreSlot::StoreSlot(std::string tenant, std::string name, std::shared_ptr<Store> store,
                     Loader loader)
    : tenant_(std::move(tenant)),
      name_(std::move(name)),
      store_(std::move(store)),
      loader_(std::move(loader)) {
  bytes_ = MemoryOf(*store_);
  last_use_ = absl::GetCurrentTimeNanos();
}

StoreSlot::StoreSlot(std::string tenant, std::string name, adapt::v1::StoreInfo info, Loader loader)
    : tenant_(std::move(tenant)),
      name_(std::move(name)),
      info_(std::move(info)),
      loader_(std::move(loader)) {
  bytes_ = info_.memory_bytes();
}

absl::StatusOr<std::shared_ptr<Store>> StoreSlot::Get(bool* loaded_now) {
  if (loaded_now != nullptr) *loaded_now = false;
  last_use_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  // Wait out a load or an eviction in progress, then look again.
  const auto settled = [this]()
                           ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !loading_ && !evicting_; };
  mu_.Await(absl::Condition(&settled));
  if (store_ != nullptr) return store_;
  if (!loader_) return absl::InternalError("the store is not loaded and has no loader");
  loading_ = true;
  mu_.Unlock();
  absl::StatusOr<std::shared_ptr<Store>> loaded = loader_();
  mu_.Lock();
  loading_ = false;
  if (!loaded.ok()) return loaded.status();
  store_ = *loaded;
  bytes_ = MemoryOf(*store_);
  if (hook_) hook_(adapt::v1::TIER_COLD, adapt::v1::TIER_HOT);
  if (loaded_now != nullptr) *loaded_now = true;
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
    info.mutable_spec()->set_pinned(pinned());
    return info;
  }
  {
    absl::MutexLock lock(&mu_);
    info = info_;
  }
  info.set_tier(adapt::v1::TIER_COLD);
  info.set_memory_bytes(0);
  info.mutable_spec()->set_pinned(pinned());
  return info;
}

uint64_t StoreSlot::loaded_bytes() const {
  if (std::shared_ptr<Store> store = loaded(); store != nullptr) return MemoryOf(*store);
  absl::MutexLock lock(&mu_);
  return info_.memory_bytes();
}

std::shared_ptr<Store> StoreSlot::BeginEvict(long holders) {
  absl::MutexLock lock(&mu_);
  if (store_ == nullptr || loading_ || evicting_ || pinned() || store_.use_count() > 1 + holders) {
    return nullptr;
  }
  evicting_ = true;
  return store_;
}

void StoreSlot::FinishEvict(bool evicted, adapt::v1::StoreInfo info) {
  absl::MutexLock lock(&mu_);
  evicting_ = false;
  if (!evicted) return;
  info.clear_tenant();
  info.clear_store();
  bytes_ = info.memory_bytes();
  info_ = std::move(info);
  store_.reset();
  if (hook_) hook_(adapt::v1::TIER_HOT, adapt::v1::TIER_COLD);
}

void StoreSlot::SetTierHook(TierHook hook) {
  absl::MutexLock lock(&mu_);
  hook_ = std::move(hook);
  if (hook_) hook_(adapt::v1::TIER_UNSPECIFIED, Tier());
}

void StoreSlot::Retire() {
  absl::MutexLock lock(&mu_);
  if (hook_) hook_(Tier(), adapt::v1::TIER_UNSPECIFIED);
  hook_ = nullptr;
}

}  // namespace adaptd
