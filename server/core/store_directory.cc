// StoreDirectory: lookups, descriptions, quotas, adding and removing stores with their durable
// records, base dependants and write fences. The tiers (loading, eviction, budgets, pins) are
// store_directory_tiers.cc.
#include "server/core/store_directory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/persistence/failed_store.h"
#include "server/stores/faast_buffer_pool.h"
#include "server/stores/store_kind.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<StoreDirectory>> StoreDirectory::Create(
    const adapt::v1::ServerConfig& config, bool durable, kernels::Backend* backend,
    Metrics* metrics, const EncoderSet* encoders, const TenantQuotas* quotas,
    AutoCompile auto_compile) {
  const uint64_t budget = config.memory_budget_bytes();
  if (budget > 0 && !durable) {
    return absl::InvalidArgumentError(
        "memory_budget_bytes: a memory budget needs data_dir (evicted stores are kept there)");
  }
  std::unique_ptr<StoreDirectory> directory(
      new StoreDirectory(backend, metrics, encoders, quotas, std::move(auto_compile)));
  if (budget == 0) return directory;
  StoreDirectory* d = directory.get();
  directory->residency_ = std::make_unique<Residency>(
      budget, [d](const std::shared_ptr<StoreSlot>& slot) { return d->Evict(slot); },
      [metrics](uint64_t resident) {
        if (metrics != nullptr) metrics->SetResidentBytes(static_cast<double>(resident));
      },
      [](bool release) {
        FaastBufferPool& pool = FaastBufferPool::Shared();
        if (release) pool.Clear();
        return static_cast<uint64_t>(pool.idle_bytes());
      },
      // A round frees 5% of the budget beyond what it must, so that a full server runs one
      // round per that many bytes loaded rather than one per load.
      budget / 20);
  if (metrics != nullptr) metrics->SetMemoryBudget(static_cast<double>(budget));
  return directory;
}

StoreDirectory::StoreDirectory(kernels::Backend* backend, Metrics* metrics,
                               const EncoderSet* encoders, const TenantQuotas* quotas,
                               AutoCompile auto_compile)
    : backend_(backend),
      metrics_(metrics),
      encoders_(encoders),
      quotas_(quotas),
      auto_compile_(std::move(auto_compile)) {}

StoreDirectory::~StoreDirectory() { Stop(); }

void StoreDirectory::Stop() {
  if (residency_ != nullptr) residency_->Stop();
}

absl::StatusOr<std::shared_ptr<Store>> StoreDirectory::Find(const std::string& tenant,
                                                            const std::string& store) const {
  return Lookup(tenant, store, /*read=*/false);
}

absl::StatusOr<std::shared_ptr<Store>> StoreDirectory::FindForRead(
    const std::string& tenant, const std::string& store,
    std::shared_ptr<RememberedPredictions>* remembered) const {
  if (durability_ != nullptr) RETURN_IF_ERROR(durability_->ReadsAllowed(tenant, store));
  return Lookup(tenant, store, /*read=*/true, remembered);
}

absl::StatusOr<std::shared_ptr<Store>> StoreDirectory::Lookup(
    const std::string& tenant, const std::string& store, bool read,
    std::shared_ptr<RememberedPredictions>* remembered) const {
  RETURN_IF_ERROR(ValidateStoreNames(tenant, store));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot, registry_.Find(tenant, store));
  bool loaded = false;
  ASSIGN_OR_RETURN(std::shared_ptr<Store> found,
                   read ? slot->GetForRead(&loaded) : slot->Get(&loaded));  // loads a cold store
  if (loaded && residency_ != nullptr) {
    if (slot->loaded() == found) {  // loaded whole: with the ids the load brought back
      adapt::v1::StoreInfo info;
      found->Describe(&info);
      NoteSize(*slot, info);
    }
    residency_->Loaded(slot);
  }
  RETURN_IF_ERROR(StoreFailure(*found));  // a store that failed to recover serves nothing
  if (remembered != nullptr) {
    *remembered = slot->feedback_window() == 0 ? nullptr : RememberedIn(tenant, store, slot);
  }
  return found;
}

std::vector<StoreDirectory::StoreUse> StoreDirectory::LastUses(
    const std::function<bool(const std::string&, const std::string&)>& keep) const {
  std::vector<StoreUse> uses;
  for (auto& [tenant, store] : registry_.Names(keep)) {
    absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Find(tenant, store);
    if (!slot.ok()) continue;  // removed meanwhile
    const int64_t used = (*slot)->last_use_nanos();
    uses.push_back(StoreUse{std::move(tenant), std::move(store), used});
  }
  return uses;
}

absl::StatusOr<const Encoder*> StoreDirectory::EncoderOf(const Store& store) const {
  return encoders_->ForStore(store.spec());
}

std::shared_ptr<RememberedPredictions> StoreDirectory::RememberedOf(const std::string& tenant,
                                                                    const std::string& store,
                                                                    const Store& /*found*/) const {
  absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Find(tenant, store);
  if (!slot.ok()) return nullptr;  // deleted meanwhile: nothing to remember
  if ((*slot)->feedback_window() == 0) return nullptr;
  return RememberedIn(tenant, store, *slot);
}

std::shared_ptr<RememberedPredictions> StoreDirectory::RememberedIn(
    const std::string& tenant, const std::string& store,
    const std::shared_ptr<StoreSlot>& slot) const {
  return slot->Remembered([&] {
    const uint64_t incarnation =
        durability_ != nullptr ? durability_->Incarnation(tenant, store) : 0;
    // The ring lives as long as the slot or a call that holds it: it counts its bytes in the
    // slot while the slot lives.
    std::weak_ptr<StoreSlot> counted = slot;
    RememberedPredictions::DropsHook on_drops;
    if (metrics_ != nullptr) {
      on_drops = [this, tenant](const RememberedDrops& drops) {
        metrics_->RecordRememberedDrops(tenant, static_cast<double>(drops.window),
                                        static_cast<double>(drops.age),
                                        static_cast<double>(drops.pressure));
      };
    }
    return std::make_shared<RememberedPredictions>(
        incarnation, slot->spec().feedback(), start_nonce_,
        [this, counted, tenant](int64_t delta) {
          if (std::shared_ptr<StoreSlot> live = counted.lock()) live->AddRememberedBytes(delta);
          if (metrics_ != nullptr) metrics_->AddRememberedBytes(tenant, static_cast<double>(delta));
          if (delta > 0) RememberedGrew();
        },
        std::move(on_drops));
  });
}

void StoreDirectory::RememberedGrew() const {
  if (residency_ != nullptr && residency_->ResidentBytes() > residency_->budget_bytes()) {
    residency_->Grew();
  }
}

std::vector<std::string> StoreDirectory::TenantStoreNames(const std::string& tenant) const {
  std::vector<std::string> names;
  for (const auto& entry : registry_.List(tenant)) names.push_back(entry.first);
  return names;
}

std::map<std::string, uint64_t> StoreDirectory::MemoryByTenant() const {
  std::map<std::string, uint64_t> used;
  std::string last;
  for (const auto& [tenant, store] : registry_.Names()) {
    if (tenant == last) continue;
    last = tenant;
    uint64_t sum = 0;
    for (const auto& entry : registry_.List(tenant)) {
      sum += entry.second->loaded_bytes() + entry.second->remembered_bytes();
    }
    used[tenant] = sum;
  }
  return used;
}

adapt::v1::StoreInfo StoreDirectory::Describe(const std::string& tenant, const std::string& name,
                                              const Store& store) const {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  info.set_tenant(tenant);
  info.set_store(name);
  if (durability_ != nullptr) {
    info.set_checkpoint_error(durability_->CheckpointError(tenant, name));
    info.set_memory_bytes(info.memory_bytes() + durability_->RememberedBytes(tenant, name));
  }
  info.set_tier(adapt::v1::TIER_HOT);
  return info;
}

adapt::v1::StoreInfo StoreDirectory::Describe(const std::string& tenant, const std::string& name,
                                              const StoreSlot& slot) const {
  bool unreplayed = false;
  if (durability_ != nullptr && slot.tier() == adapt::v1::TIER_COLD &&
      durability_->StoredStateBehind(tenant, name)) {
    // Its stored description misses the records of its log: loaded first (a failed store is
    // then described by its failure).
    (void)Lookup(tenant, name, /*read=*/false);
    unreplayed = slot.tier() == adapt::v1::TIER_COLD;
  }
  adapt::v1::StoreInfo info = slot.Describe();
  if (unreplayed) {
    info.set_failure(
        "not described: the records of its log past its stored state could not be read yet");
  }
  info.set_tenant(tenant);
  info.set_store(name);
  // The remembered predictions stay in memory in every tier (docs/FEEDBACK.md).
  if (std::shared_ptr<RememberedPredictions> remembered = slot.RememberedIfAny()) {
    const ServedFigures served = remembered->served();
    info.set_served_evaluated(served.evaluated);
    info.set_served_correct(served.correct);
    info.set_remembered_bytes(remembered->bytes());
    info.set_memory_bytes(info.memory_bytes() + info.remembered_bytes());
  }
  if (durability_ != nullptr) {
    info.set_checkpoint_error(durability_->CheckpointError(tenant, name));
    // A hot store's example ids, remembered beside it, are part of what it holds.
    if (info.tier() == adapt::v1::TIER_HOT) {
      info.set_memory_bytes(info.memory_bytes() + durability_->RememberedBytes(tenant, name));
    }
  }
  return info;
}

absl::Status StoreDirectory::CheckQuota(const std::string& tenant, const Store* adding) const {
  const auto stores = registry_.List(tenant);
  // A durability that counts the tenant's stores on every server refuses an extra one itself;
  // the stores held here are only part of them.
  const bool counted_elsewhere = durability_ != nullptr && durability_->CountsStores();
  if (adding != nullptr && !counted_elsewhere) {
    RETURN_IF_ERROR(quotas_->CheckStores(tenant, stores.size()));
  }
  if (!quotas_->limits_memory()) return absl::OkStatus();
  // What each store holds when loaded, so a quota does not depend on what is resident, and
  // what its remembered predictions hold.
  uint64_t stored = 0, remembered = 0;
  for (const auto& entry : stores) {
    stored += entry.second->loaded_bytes();
    remembered += entry.second->remembered_bytes();
  }
  uint64_t added = 0;
  if (adding != nullptr) {
    adapt::v1::StoreInfo info;
    adding->Describe(&info);
    added = info.memory_bytes();
  }
  absl::Status checked = quotas_->CheckMemory(tenant, stored + remembered, added);
  if (checked.ok() || remembered == 0) return checked;
  // Over the quota with remembered predictions: they go first (the tenant's own, oldest first
  // in each store), as much as the quota needs, before the change is refused.
  const uint64_t limit = quotas_->LimitsOf(tenant).max_memory_bytes;
  uint64_t wanted = stored + remembered + added > limit && limit > 0
                        ? stored + remembered + added - limit
                        : remembered;
  for (const auto& entry : stores) {
    if (wanted == 0) break;
    const uint64_t freed = entry.second->ShedRemembered(wanted);
    wanted -= std::min(wanted, freed);
  }
  remembered = 0;
  for (const auto& entry : stores) remembered += entry.second->remembered_bytes();
  return quotas_->CheckMemory(tenant, stored + remembered, added);
}

absl::StatusOr<WriteTargets::Target> StoreDirectory::FindForWrite(const std::string& tenant,
                                                                  const std::string& store) {
  Target target;
  ASSIGN_OR_RETURN(target.store, Find(tenant, store));
  ASSIGN_OR_RETURN(target.slot, registry_.Find(tenant, store));
  return target;
}

bool StoreDirectory::StillHolds(const std::string& tenant, const std::string& store,
                                const StoreSlot& slot) const {
  absl::StatusOr<std::shared_ptr<StoreSlot>> current = registry_.Find(tenant, store);
  return current.ok() && current->get() == &slot;
}

absl::Status StoreDirectory::CheckRoomToWrite(const std::string& tenant,
                                              const StoreSlot& slot) const {
  RETURN_IF_ERROR(CheckQuota(tenant, nullptr));
  // The store's own size: its remembered ids count in the budget's total, not in this
  // refusal (they are bounded by max_example_ids and go with an eviction).
  return CheckBudget(slot.store_bytes());
}

void StoreDirectory::AfterCommit(StoreSlot& slot, const std::shared_ptr<Store>& store,
                                 const CommitResult& result, TxnKind kind) {
  if (metrics_ != nullptr && kind == TxnKind::kAdapt) {
    metrics_->AddExamples(KindName(store->spec().kind()), static_cast<double>(result.examples));
  }
  // One description serves the metrics and the slot's size (what the budget counts).
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  if (metrics_ != nullptr) metrics_->RefreshStore(store.get(), info);
  NoteSize(slot, info);
  if (result.compile_now) {
    auto_compile_(store, absl::ZeroDuration(), /*urgent=*/true);
  } else if (result.compile_after > absl::ZeroDuration()) {
    auto_compile_(store, result.compile_after, /*urgent=*/false);
  }
}

absl::StatusOr<std::shared_ptr<StoreSlot>> StoreDirectory::AddCreated(
    const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
    const adapt::v1::StoreSpec& spec, bool seeded, bool base_remote) {
  if (spec.base().empty()) return AddMaybePinned(tenant, name, store, spec, seeded);
  // The base is recorded as in use before the store is visible; its deletion waits for this.
  absl::MutexLock base_lock(&base_mu_);
  ASSIGN_OR_RETURN(auto base_name, ParseBaseName(tenant, spec.base()));
  // (A base on another member is kept for this create by its lease there.)
  if (!base_remote && !registry_.Find(base_name.first, base_name.second).ok()) {
    return absl::NotFoundError(
        absl::StrCat("spec.base: store ", spec.base(), " was deleted during the call"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   AddMaybePinned(tenant, name, store, spec, seeded));
  AddDependantLocked(spec.base(), absl::StrCat(tenant, "/", name));
  return slot;
}

absl::StatusOr<std::shared_ptr<StoreSlot>> StoreDirectory::AddMaybePinned(
    const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
    const adapt::v1::StoreSpec& spec, bool seeded) {
  if (!spec.pinned()) return AddDurably(tenant, name, store, spec, /*imported=*/seeded);
  absl::MutexLock pin_lock(&pin_mu_);  // the pinned total holds until this store is in it
  adapt::v1::StoreInfo sized;
  store->Describe(&sized);
  RETURN_IF_ERROR(CheckPinBudget(sized.memory_bytes()));
  return AddDurably(tenant, name, store, spec, /*imported=*/seeded);
}

absl::StatusOr<std::shared_ptr<StoreSlot>> StoreDirectory::AddImported(
    const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
    const std::vector<std::string>& applied_ids) {
  absl::MutexLock base_lock(&base_mu_);
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   AddDurably(tenant, name, store, store->spec(), /*imported=*/true, applied_ids));
  // An imported store keeps the copy of its base in its state; its base, if this server has
  // it, is in use from now on.
  // By value: spec() returns a copy, so a reference into it would dangle.
  if (const std::string b = store->spec().base(); !b.empty()) {
    AddDependantLocked(b, absl::StrCat(tenant, "/", name));
  }
  return slot;
}

absl::StatusOr<std::shared_ptr<StoreSlot>> StoreDirectory::AddDurably(
    const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
    const adapt::v1::StoreSpec& spec, bool imported, const std::vector<std::string>& applied_ids) {
  std::shared_ptr<StoreSlot> slot = NewSlot(tenant, name, store, spec.kind());
  slot->set_pinned(spec.pinned());
  if (durability_ == nullptr) {
    RETURN_IF_ERROR(registry_.Insert(tenant, name, slot));
    WatchTier(*slot);
    return slot;
  }
  const Fence fence = durability_->CurrentFence(tenant, name);
  Position position;
  RETURN_IF_ERROR(registry_.Reserve(tenant, name, slot, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(position,
                     durability_->AppendCreate(tenant, name, store, spec, imported, fence));
    return absl::OkStatus();
  }));
  if (absl::Status durable = durability_->WaitDurable(position); !durable.ok()) {
    registry_.Abandon(tenant, name);
    return durable;
  }
  if (imported) {
    // The import's record holds only its spec: its state is stored before the import is
    // acknowledged (a restart that finds no state drops the import).
    if (absl::Status stored = durability_->StoreImported(tenant, name, store.get(), applied_ids);
        !stored.ok()) {
      absl::StatusOr<Position> deleted = durability_->AppendDelete(tenant, name, fence);
      if (deleted.ok()) (void)durability_->WaitDurable(*deleted);  // still reserved
      registry_.Abandon(tenant, name);
      return stored;
    }
  }
  registry_.Publish(tenant, name);
  WatchTier(*slot);
  if (residency_ != nullptr) residency_->Loaded(slot);
  return slot;
}

absl::Status StoreDirectory::Remove(const std::string& tenant, const std::string& store) {
  absl::MutexLock base_lock(&base_mu_);
  RETURN_IF_ERROR(CheckBaseLease(absl::StrCat(tenant, "/", store)));
  return RemoveLocked(tenant, store);
}

absl::Status StoreDirectory::CheckBaseLease(const std::string& key) {
  auto lease = base_leases_.find(key);
  if (lease == base_leases_.end()) return absl::OkStatus();
  const absl::Duration left = lease->second - absl::Now();
  if (left > absl::ZeroDuration()) {
    return absl::FailedPreconditionError(
        absl::StrCat("store ", key,
                     " was read as the base of a store being created on another member; "
                     "its delete waits for that create (retry in ",
                     absl::FormatDuration(absl::Ceil(left, absl::Seconds(1))), ")"));
  }
  base_leases_.erase(lease);
  return absl::OkStatus();
}

absl::Status StoreDirectory::RemoveLocked(const std::string& tenant, const std::string& store) {
  const std::string key = absl::StrCat(tenant, "/", store);
  if (auto users = dependants_.find(key); users != dependants_.end()) {
    std::vector<std::string> some;
    for (const std::string& user : users->second) {
      if (some.size() == 10) break;
      some.push_back(user);
    }
    return absl::FailedPreconditionError(
        absl::StrCat("store ", key, " is the base of ", users->second.size(), " store(s) (",
                     absl::StrJoin(some, ", "), users->second.size() > some.size() ? ", ..." : "",
                     "): delete those first"));
  }
  Position position;
  ASSIGN_OR_RETURN(auto removed, registry_.Remove(tenant, store, [&]() -> absl::Status {
    if (durability_ == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(position, durability_->AppendDelete(tenant, store,
                                                         durability_->CurrentFence(tenant, store)));
    return absl::OkStatus();
  }));
  RemoveDependantLocked(key);
  if (durability_ != nullptr) RETURN_IF_ERROR(durability_->WaitDurable(position));
  removed->Retire();
  if (metrics_ != nullptr) {
    if (auto loaded = removed->loaded(); loaded != nullptr) metrics_->ForgetStore(loaded.get());
  }
  return absl::OkStatus();
}

void StoreDirectory::LeaseBase(const std::string& base) {
  absl::MutexLock lock(&base_mu_);
  base_leases_[base] = absl::Now() + kBaseLease;
}

std::pair<std::vector<std::string>, size_t> StoreDirectory::DependantsHere(const std::string& base,
                                                                           size_t max) const {
  absl::MutexLock lock(&base_mu_);
  std::pair<std::vector<std::string>, size_t> out{{}, 0};
  const auto users = dependants_.find(base);
  if (users == dependants_.end()) return out;
  out.second = users->second.size();
  for (const std::string& user : users->second) {
    if (out.first.size() == max) break;
    out.first.push_back(user);
  }
  return out;
}

void StoreDirectory::AddDependantLocked(const std::string& base, const std::string& dependant) {
  dependants_[base].insert(dependant);
  base_of_[dependant] = base;
}

void StoreDirectory::RemoveDependantLocked(const std::string& dependant) {
  auto it = base_of_.find(dependant);
  if (it == base_of_.end()) return;
  auto users = dependants_.find(it->second);
  if (users != dependants_.end()) {
    users->second.erase(dependant);
    if (users->second.empty()) dependants_.erase(users);
  }
  base_of_.erase(it);
}

absl::StatusOr<FenceHold> StoreDirectory::EnterFence(const std::string& tenant,
                                                     const std::string& store) {
  std::string key = absl::StrCat(tenant, "/", store);
  RETURN_IF_ERROR(fences_.Enter(key));
  return FenceHold(&fences_, std::move(key));
}

void StoreDirectory::CloseFence(const std::string& tenant, const std::string& store) {
  fences_.Close(absl::StrCat(tenant, "/", store));
}

void StoreDirectory::OpenFence(const std::string& tenant, const std::string& store) {
  fences_.Open(absl::StrCat(tenant, "/", store));
}

}  // namespace adaptd
