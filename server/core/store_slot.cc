#include "server/core/store_slot.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace adaptd {
namespace {

// A description stored in the catalog, parsed; one that does not parse is described by that.
void ParseStoredInfo(const std::string& packed, adapt::v1::StoreKind kind,
                     adapt::v1::StoreInfo* info) {
  if (info->ParseFromString(packed)) return;
  info->Clear();
  info->mutable_spec()->set_kind(kind);
  info->set_failure("the description stored in the catalog does not parse");
}

uint64_t MemoryOf(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.memory_bytes();
}

}  // namespace

StoreSlot::StoreSlot(std::string tenant, std::string name, std::shared_ptr<Store> store,
                     Loader loader, WarmLoader warm_loader)
    : tenant_(std::move(tenant)),
      name_(std::move(name)),
      kind_(store->spec().kind()),
      store_(std::move(store)),
      loader_(std::move(loader)),
      warm_loader_(std::move(warm_loader)) {
  NoteSpec(store_->spec());
  NoteBytes(MemoryOf(*store_));
  last_use_ = absl::GetCurrentTimeNanos();
}

StoreSlot::StoreSlot(std::string tenant, std::string name, adapt::v1::StoreInfo info, Loader loader,
                     WarmLoader warm_loader)
    : tenant_(std::move(tenant)),
      name_(std::move(name)),
      kind_(info.spec().kind()),
      info_(std::make_shared<const adapt::v1::StoreInfo>(std::move(info))),
      loader_(std::move(loader)),
      warm_loader_(std::move(warm_loader)) {
  NoteSpec(info_->spec());
}

StoreSlot::StoreSlot(std::string tenant, std::string name, adapt::v1::StoreKind kind,
                     std::string stored_info, Loader loader, WarmLoader warm_loader)
    : tenant_(std::move(tenant)),
      name_(std::move(name)),
      kind_(kind),
      packed_info_(std::move(stored_info)),
      loader_(std::move(loader)),
      warm_loader_(std::move(warm_loader)) {}

std::shared_ptr<const adapt::v1::StoreInfo> StoreSlot::ColdInfoLocked() const {
  if (info_ != nullptr || store_ != nullptr) return info_;
  auto parsed = std::make_shared<adapt::v1::StoreInfo>();
  ParseStoredInfo(packed_info_, kind_, parsed.get());
  return parsed;
}

StoreSlot::~StoreSlot() {
  absl::MutexLock lock(&tally_mu_);
  if (tally_ != nullptr) {
    tally_->fetch_sub(static_cast<int64_t>(bytes_.load(std::memory_order_relaxed)),
                      std::memory_order_relaxed);
  }
}

void StoreSlot::NoteBytes(uint64_t bytes, uint64_t beside) {
  absl::MutexLock lock(&tally_mu_);
  const uint64_t now = bytes + beside + remembered_bytes_.load(std::memory_order_relaxed);
  const uint64_t before = bytes_.exchange(now, std::memory_order_relaxed);
  store_bytes_.store(bytes, std::memory_order_relaxed);
  if (tally_ != nullptr) {
    tally_->fetch_add(static_cast<int64_t>(now) - static_cast<int64_t>(before),
                      std::memory_order_relaxed);
  }
}

void StoreSlot::AddRememberedBytes(int64_t delta) {
  absl::MutexLock lock(&tally_mu_);
  remembered_bytes_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  bytes_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  if (tally_ != nullptr) tally_->fetch_add(delta, std::memory_order_relaxed);
}

void StoreSlot::CountIn(const std::shared_ptr<ByteTally>& tally) {
  absl::MutexLock lock(&tally_mu_);
  if (tally_ != nullptr || tally == nullptr) return;
  tally_ = tally;
  tally_->fetch_add(static_cast<int64_t>(bytes_.load(std::memory_order_relaxed)),
                    std::memory_order_relaxed);
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
  return LoadLocked(/*warm=*/false, loaded_now);
}

absl::StatusOr<std::shared_ptr<Store>> StoreSlot::GetForRead(bool* loaded_now) {
  if (loaded_now != nullptr) *loaded_now = false;
  last_use_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  // A warm store serves reads while a write loads the whole store.
  const auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !evicting_ && (!loading_ || warm_ != nullptr);
  };
  mu_.Await(absl::Condition(&settled));
  if (store_ != nullptr) return store_;
  if (warm_ != nullptr) return std::shared_ptr<Store>(warm_);
  return LoadLocked(/*warm=*/warm_loader_ != nullptr, loaded_now);
}

absl::StatusOr<std::shared_ptr<Store>> StoreSlot::LoadLocked(bool warm, bool* loaded_now) {
  if (!loader_) return absl::InternalError("the store is not loaded and has no loader");
  const adapt::v1::Tier from = TierLocked();
  loading_ = true;
  if (warm) {
    std::shared_ptr<const adapt::v1::StoreInfo> stored = ColdInfoLocked();
    if (stored != nullptr && !stored->failure().empty()) stored = nullptr;  // the state answers
    mu_.Unlock();
    absl::StatusOr<std::shared_ptr<WarmStore>> read = warm_loader_(stored);
    mu_.Lock();
    if (!read.ok()) {
      loading_ = false;
      return read.status();
    }
    if (*read != nullptr) {  // otherwise the store has no warm form: load it whole
      loading_ = false;
      warm_ = *std::move(read);
      info_ = warm_->info();  // the description it was read with, held once
      NoteSpec(info_->spec());
      std::string().swap(packed_info_);
      NoteBytes(warm_->bytes());
      if (hook_) hook_(from, adapt::v1::TIER_WARM, warm_->bytes());
      if (loaded_now != nullptr) *loaded_now = true;
      return std::shared_ptr<Store>(warm_);
    }
  }
  mu_.Unlock();
  absl::StatusOr<std::shared_ptr<Store>> loaded = loader_();
  mu_.Lock();
  loading_ = false;
  if (!loaded.ok()) return loaded.status();
  store_ = *loaded;
  NoteSpec(store_->spec());
  const uint64_t warm_bytes = warm_ != nullptr ? warm_->bytes() : 0;
  warm_.reset();
  info_.reset();
  std::string().swap(packed_info_);
  NoteBytes(MemoryOf(*store_));
  if (hook_) hook_(from, adapt::v1::TIER_HOT, warm_bytes);
  if (loaded_now != nullptr) *loaded_now = true;
  return store_;
}

std::shared_ptr<Store> StoreSlot::loaded() const {
  absl::MutexLock lock(&mu_);
  return store_;
}

bool StoreSlot::resident() const {
  absl::MutexLock lock(&mu_);
  return store_ != nullptr || warm_ != nullptr;
}

adapt::v1::Tier StoreSlot::tier() const {
  absl::MutexLock lock(&mu_);
  return TierLocked();
}

adapt::v1::StoreSpec StoreSlot::spec() const {
  std::shared_ptr<Store> store;
  std::shared_ptr<const adapt::v1::StoreInfo> info;
  {
    absl::MutexLock lock(&mu_);
    store = store_;
    info = ColdInfoLocked();
  }
  return store != nullptr ? store->spec() : info->spec();  // a hot store's spec takes its lock
}

adapt::v1::StoreInfo StoreSlot::Describe() const {
  adapt::v1::StoreInfo info;
  std::shared_ptr<Store> store;
  adapt::v1::Tier tier;
  {
    absl::MutexLock lock(&mu_);
    tier = TierLocked();
    if (store_ != nullptr) {
      store = store_;
    } else if (warm_ != nullptr) {
      store = warm_;
    } else if (info_ != nullptr) {
      info = *info_;
    } else {
      ParseStoredInfo(packed_info_, kind_, &info);
    }
  }
  if (store != nullptr) {
    store->Describe(&info);  // outside the lock: a hot store's Describe takes its own
  } else {
    info.set_memory_bytes(0);
  }
  info.set_tier(tier);
  info.mutable_spec()->set_pinned(pinned());
  return info;
}

uint64_t StoreSlot::loaded_bytes() const {
  std::shared_ptr<Store> store;
  {
    absl::MutexLock lock(&mu_);
    if (store_ == nullptr) return ColdInfoLocked()->memory_bytes();
    store = store_;
  }
  return MemoryOf(*store);
}

std::shared_ptr<Store> StoreSlot::BeginEvict(long holders, adapt::v1::Tier* tier) {
  absl::MutexLock lock(&mu_);
  if (loading_ || evicting_ || pinned()) return nullptr;
  std::shared_ptr<Store> store;
  if (store_ != nullptr) {
    if (store_.use_count() > 1 + holders) return nullptr;
    store = store_;
  } else if (warm_ != nullptr) {
    if (warm_.use_count() > 1) return nullptr;
    store = warm_;
  } else {
    return nullptr;
  }
  if (tier != nullptr) *tier = TierLocked();
  evicting_ = true;
  return store;
}

void StoreSlot::FinishEvict(bool evicted, adapt::v1::StoreInfo info,
                            std::shared_ptr<WarmStore> warm) {
  absl::MutexLock lock(&mu_);
  evicting_ = false;
  if (!evicted) return;
  const adapt::v1::Tier from = TierLocked();
  uint64_t warm_bytes = warm_ != nullptr ? warm_->bytes() : 0;  // the warm store leaving
  if (store_ != nullptr) {
    if (warm != nullptr) {
      info_ = warm->info();  // made from the same description: held once
    } else {
      info.clear_tenant();
      info.clear_store();
      info_ = std::make_shared<const adapt::v1::StoreInfo>(std::move(info));
    }
    store_.reset();
    warm_ = std::move(warm);
  } else {
    // Its description when hot, with the labels it kept in its read-out.
    info_ = warm_->SharedColdInfo();
    warm_.reset();
  }
  if (warm_ != nullptr) warm_bytes = warm_->bytes();  // the warm store arriving
  NoteBytes(warm_ != nullptr ? warm_->bytes() : 0);
  if (hook_) hook_(from, TierLocked(), warm_bytes);
}

void StoreSlot::SetTierHook(TierHook hook) {
  absl::MutexLock lock(&mu_);
  hook_ = std::move(hook);
  if (hook_) hook_(adapt::v1::TIER_UNSPECIFIED, TierLocked(), warm_ ? warm_->bytes() : 0);
}

void StoreSlot::Retire() {
  absl::MutexLock lock(&mu_);
  if (hook_) hook_(TierLocked(), adapt::v1::TIER_UNSPECIFIED, warm_ ? warm_->bytes() : 0);
  hook_ = nullptr;
}

std::shared_ptr<RememberedPredictions> StoreSlot::Remembered(const RememberedMaker& make) {
  absl::MutexLock lock(&remembered_mu_);
  if (remembered_ == nullptr) remembered_ = make();
  return remembered_;
}

std::shared_ptr<RememberedPredictions> StoreSlot::RememberedIfAny() const {
  absl::MutexLock lock(&remembered_mu_);
  return remembered_;
}

uint64_t StoreSlot::ShedRemembered(uint64_t wanted) {
  std::shared_ptr<RememberedPredictions> remembered = RememberedIfAny();
  return remembered != nullptr ? remembered->Shed(wanted) : 0;
}

absl::Status GoneDuringCall(const StoreSlot& slot, const std::string& tenant,
                            const std::string& store) {
  if (slot.released()) {
    return absl::UnavailableError(absl::StrCat(
        "store ", tenant, "/", store,
        " moved to another member during the call (its shard was released here; nothing of the "
        "call was applied): resend it"));
  }
  return absl::NotFoundError(
      absl::StrCat("store ", tenant, "/", store, " was deleted during the call"));
}

absl::Status MovedIfReleased(const StoreSlot& slot, const std::string& tenant,
                             const std::string& store, absl::Status status) {
  if (status.code() != absl::StatusCode::kNotFound || !slot.released()) return status;
  return GoneDuringCall(slot, tenant, store);
}

}  // namespace adaptd
