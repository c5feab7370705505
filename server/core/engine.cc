#include "server/core/engine.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/config/defaults.h"
#include "server/core/list_page.h"
#include "server/persistence/failed_store.h"
#include "server/stores/faast_buffer_pool.h"
#include "server/stores/faast_label_embedding.h"
#include "server/stores/store_factory.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

// A compile's parameter overrides are for the store's own kind: the field of `params` named
// like it (INVALID_ARGUMENT naming the field set for another kind).
absl::Status CheckCompileParams(const adapt::v1::CompileRequest& request,
                                const adapt::v1::StoreSpec& spec) {
  const google::protobuf::OneofDescriptor* params =
      adapt::v1::CompileRequest::descriptor()->FindOneofByName("params");
  const google::protobuf::FieldDescriptor* set =
      request.GetReflection()->GetOneofFieldDescriptor(request, params);
  const std::string kind = KindName(spec.kind());
  if (set == nullptr || set->name() == kind) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(set->name(), ": parameter overrides for ",
                                                 set->name(), " stores; ", request.tenant(), "/",
                                                 request.store(), " is a ", kind, " store"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const adapt::v1::ServerConfig& config,
                                                       kernels::Backend* backend, Metrics* metrics,
                                                       Env* env) {
  return CreateOver(config, backend, metrics, LocalDurabilityOf(config, backend, metrics, env));
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::CreateOver(const adapt::v1::ServerConfig& config,
                                                           kernels::Backend* backend,
                                                           Metrics* metrics,
                                                           DurabilityOpener open) {
  ASSIGN_OR_RETURN(auto encoders, EncoderSet::Create(config.encoders(), backend));
  std::unique_ptr<Engine> engine(new Engine(config, backend, metrics, std::move(encoders)));
  ASSIGN_OR_RETURN(engine->quotas_, TenantQuotas::Create(config));
  if (config.memory_budget_bytes() > 0 && open == nullptr) {
    return absl::InvalidArgumentError(
        "memory_budget_bytes: a memory budget needs data_dir (evicted stores are kept there)");
  }
  if (config.memory_budget_bytes() > 0) {
    Engine* e = engine.get();
    engine->residency_ = std::make_unique<Residency>(
        config.memory_budget_bytes(),
        [e](const std::shared_ptr<StoreSlot>& slot) { return e->Evict(slot); },
        [metrics](uint64_t resident) {
          if (metrics != nullptr) metrics->SetResidentBytes(static_cast<double>(resident));
        },
        [](bool release) {
          FaastBufferPool& pool = FaastBufferPool::Shared();
          if (release) pool.Clear();
          return static_cast<uint64_t>(pool.idle_bytes());
        },
        // A round frees 5% of the budget beyond what it must, so that a full server runs
        // one round per that many bytes loaded rather than one per load.
        config.memory_budget_bytes() / 20);
    if (metrics != nullptr) {
      metrics->SetMemoryBudget(static_cast<double>(config.memory_budget_bytes()));
    }
  }
  RETURN_IF_ERROR(engine->OpenDurability(open));
  return engine;
}

Engine::Engine(const adapt::v1::ServerConfig& config, kernels::Backend* backend, Metrics* metrics,
               std::unique_ptr<EncoderSet> encoders)
    : max_dim_(config.max_dim() > 0 ? config.max_dim() : defaults::kMaxDim),
      backend_(backend),
      metrics_(metrics),
      encoders_(std::move(encoders)),
      predictor_(this, backend, metrics, max_dim_),
      compile_pool_(
          static_cast<int>(config.compile_threads() > 0 ? config.compile_threads()
                                                        : defaults::kCompileThreads),
          [metrics](const Store& store, const absl::StatusOr<adapt::v1::CompileResponse>& r,
                    bool automatic) {
            if (metrics == nullptr) return;
            adapt::v1::StoreInfo info;
            store.Describe(&info);
            const StoreKind* kind = StoreKinds::Global().Find(info.spec().kind());
            const bool timed = r.ok() && kind != nullptr && kind->compile_seconds;
            metrics->RecordCompile(r.ok(), automatic, timed ? kind->compile_seconds(*r) : 0.0);
            if (r.ok()) metrics->RecordCompileGauges(info.spec().kind(), *r);
            metrics->RefreshStore(&store, info);
          },
          [this](const Store& store, const adapt::v1::CompileRequest& request,
                 const BaseReadout* base,
                 bool automatic) { return LogCompile(store, request, base, automatic); }) {}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  if (residency_ != nullptr) residency_->Stop();
  compile_pool_.Stop();
}

absl::StatusOr<std::shared_ptr<Store>> Engine::Find(const std::string& tenant,
                                                    const std::string& store) const {
  return Lookup(tenant, store, /*read=*/false);
}

absl::StatusOr<std::shared_ptr<Store>> Engine::FindForRead(const std::string& tenant,
                                                           const std::string& store) const {
  return Lookup(tenant, store, /*read=*/true);
}

absl::StatusOr<std::shared_ptr<Store>> Engine::Lookup(const std::string& tenant,
                                                      const std::string& store, bool read) const {
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
  return found;
}

absl::StatusOr<const Encoder*> Engine::EncoderOf(const Store& store) const {
  return encoders_->ForStore(store.spec());
}

absl::Status Engine::CheckQuota(const std::string& tenant, const Store* adding) const {
  const auto stores = registry_.List(tenant);
  if (adding != nullptr) RETURN_IF_ERROR(quotas_->CheckStores(tenant, stores.size()));
  if (!quotas_->limits_memory()) return absl::OkStatus();
  // What each store holds when loaded, so a quota does not depend on what is resident.
  uint64_t used = 0;
  for (const auto& entry : stores) used += entry.second->loaded_bytes();
  uint64_t added = 0;
  if (adding != nullptr) {
    adapt::v1::StoreInfo info;
    adding->Describe(&info);
    added = info.memory_bytes();
  }
  return quotas_->CheckMemory(tenant, used, added);
}

std::vector<std::string> Engine::TenantStoreNames(const std::string& tenant) const {
  std::vector<std::string> names;
  for (const auto& entry : registry_.List(tenant)) names.push_back(entry.first);
  return names;
}

std::map<std::string, uint64_t> Engine::MemoryByTenant() const {
  std::map<std::string, uint64_t> used;
  std::string last;
  for (const auto& [tenant, store] : registry_.Names()) {
    if (tenant == last) continue;
    last = tenant;
    uint64_t sum = 0;
    for (const auto& entry : registry_.List(tenant)) sum += entry.second->loaded_bytes();
    used[tenant] = sum;
  }
  return used;
}

adapt::v1::StoreInfo Engine::Describe(const std::string& tenant, const std::string& name,
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

adapt::v1::StoreInfo Engine::Describe(const std::string& tenant, const std::string& name,
                                      const StoreSlot& slot) const {
  adapt::v1::StoreInfo info = slot.Describe();
  info.set_tenant(tenant);
  info.set_store(name);
  if (durability_ != nullptr) {
    info.set_checkpoint_error(durability_->CheckpointError(tenant, name));
    // A hot store's example ids, remembered beside it, are part of what it holds.
    if (info.tier() == adapt::v1::TIER_HOT) {
      info.set_memory_bytes(info.memory_bytes() + durability_->RememberedBytes(tenant, name));
    }
  }
  return info;
}

absl::StatusOr<adapt::v1::StoreInfo> Engine::CreateStore(
    const adapt::v1::CreateStoreRequest& request) {
  RETURN_IF_ERROR(ValidateStoreNames(request.tenant(), request.store()));
  adapt::v1::StoreSpec spec = request.spec();
  if (spec.encoder().empty()) spec.set_encoder("identity");
  const Encoder* encoder = encoders_->Find(spec.encoder());
  if (encoder == nullptr) {
    std::vector<std::string> names;
    const adapt::v1::ListEncodersResponse hosted = encoders_->List();
    for (const auto& info : hosted.encoders()) names.push_back(info.name());
    return absl::InvalidArgumentError(
        absl::StrCat("spec.encoder: unknown encoder '", spec.encoder(),
                     "' (this server hosts: ", absl::StrJoin(names, ", "), ")"));
  }
  const uint32_t encoder_dim = encoder->info().dim();
  if (encoder_dim > 0) {
    if (spec.dim() != 0 && spec.dim() != encoder_dim) {
      return absl::InvalidArgumentError(absl::StrCat("spec.dim: ", spec.dim(), " differs from ",
                                                     "encoder '", spec.encoder(),
                                                     "' output dimension ", encoder_dim));
    }
    spec.set_dim(encoder_dim);
  }
  if (spec.dim() > max_dim_) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.dim: ", spec.dim(), " exceeds the server's maximum ", max_dim_));
  }
  if (spec.output().kind() == adapt::v1::OutputSpec::KIND_UNSPECIFIED) {
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  }
  std::optional<ExportedBase> base;
  if (!spec.base().empty()) {
    ASSIGN_OR_RETURN(base, ResolveBase(request.tenant(), request.store(), &spec));
  }
  RETURN_IF_ERROR(encoders_->BindToSpec(&spec));  // fingerprints, label encoder
  if (base.has_value()) {
    const std::string& base_fingerprint = base->spec.encoder_fingerprint();
    if (!spec.encoder_fingerprint().empty() && !base_fingerprint.empty() &&
        spec.encoder_fingerprint() != base_fingerprint) {
      return absl::InvalidArgumentError(
          "spec.base: the base was created with another version of the encoder (its "
          "encoder_fingerprint differs), so its keys mean something else");
    }
  }
  // Pinning is the engine's (the durability records it with the creation), not the store's.
  adapt::v1::StoreSpec store_spec = spec;
  store_spec.clear_pinned();
  ASSIGN_OR_RETURN(std::unique_ptr<Store> created, adaptd::CreateStore(store_spec, backend_));
  std::shared_ptr<Store> store = std::move(created);
  // Declared labels are embedded now, and a base copied: the new store starts with a state of
  // its own, stored like an import's before the creation is acknowledged.
  if (base.has_value()) RETURN_IF_ERROR(store->StartFromBase(base->readout));
  const bool declared = spec.output().labels_size() > 0;
  const bool seeded = declared || base.has_value();
  if (declared) {
    const Encoder* label_encoder = encoders_->Find(spec.output().label_encoder());
    if (label_encoder == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("spec.output.label_encoder: unknown encoder '",
                                                     spec.output().label_encoder(), "'"));
    }
    RETURN_IF_ERROR(SeedDeclaredLabels(*label_encoder, store.get()));
  }
  // A name taken already is that, not a store more: at the quota too, as Import says it (and
  // as a cluster's count, which lets an existing name through to its create, expects).
  if (registry_.Find(request.tenant(), request.store()).ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("store ", request.tenant(), "/", request.store(), " already exists"));
  }
  RETURN_IF_ERROR(CheckQuota(request.tenant(), store.get()));
  RETURN_IF_ERROR(CheckBudget(*store));
  absl::StatusOr<std::shared_ptr<StoreSlot>> slot = absl::InternalError("not added");
  if (base.has_value()) {
    // The base is recorded as in use before the store is visible; its deletion waits for this.
    absl::MutexLock base_lock(&base_mu_);
    ASSIGN_OR_RETURN(auto base_name, ParseBaseName(request.tenant(), spec.base()));
    // (A base on another member is kept for this create by its lease there.)
    if (!base->remote && !registry_.Find(base_name.first, base_name.second).ok()) {
      return absl::NotFoundError(
          absl::StrCat("spec.base: store ", spec.base(), " was deleted during the call"));
    }
    slot = AddCreated(request.tenant(), request.store(), store, spec, seeded);
    if (slot.ok()) {
      AddDependantLocked(spec.base(), absl::StrCat(request.tenant(), "/", request.store()));
    }
  } else {
    slot = AddCreated(request.tenant(), request.store(), store, spec, seeded);
  }
  if (!slot.ok()) return slot.status();
  adapt::v1::StoreInfo info = Describe(request.tenant(), request.store(), **slot);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  return info;
}

absl::StatusOr<std::shared_ptr<StoreSlot>> Engine::AddCreated(const std::string& tenant,
                                                              const std::string& name,
                                                              const std::shared_ptr<Store>& store,
                                                              const adapt::v1::StoreSpec& spec,
                                                              bool seeded) {
  if (!spec.pinned()) return AddDurably(tenant, name, store, spec, /*imported=*/seeded);
  absl::MutexLock pin_lock(&pin_mu_);  // the pinned total holds until this store is in it
  adapt::v1::StoreInfo sized;
  store->Describe(&sized);
  RETURN_IF_ERROR(CheckPinBudget(sized.memory_bytes()));
  return AddDurably(tenant, name, store, spec, /*imported=*/seeded);
}

absl::StatusOr<std::shared_ptr<StoreSlot>> Engine::AddDurably(
    const std::string& tenant, const std::string& name, const std::shared_ptr<Store>& store,
    const adapt::v1::StoreSpec& spec, bool imported, const std::vector<std::string>& applied_ids) {
  auto slot = durability_ != nullptr
                  ? std::make_shared<StoreSlot>(tenant, name, store, LoaderOf(tenant, name),
                                                WarmLoaderOf(tenant, name, spec.kind()))
                  : std::make_shared<StoreSlot>(tenant, name, store);
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

absl::StatusOr<adapt::v1::StoreInfo> Engine::GetStore(
    const adapt::v1::GetStoreRequest& request) const {
  RETURN_IF_ERROR(ValidateStoreNames(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(auto slot, registry_.Find(request.tenant(), request.store()));
  return Describe(request.tenant(), request.store(), *slot);
}

absl::StatusOr<adapt::v1::ListStoresResponse> Engine::ListStores(
    const adapt::v1::ListStoresRequest& request) const {
  RETURN_IF_ERROR(ValidateName("tenant", request.tenant()));
  ASSIGN_OR_RETURN(const PageQuery page, ParseListPage(request));
  const Registry::Page found = registry_.ListPage(request.tenant(), page.after, page.limit);
  adapt::v1::ListStoresResponse response;
  for (const auto& [name, slot] : found.stores) {
    *response.add_stores() = Describe(request.tenant(), name, *slot);  // never loads
  }
  // `more` implies a full page (limit >= 1), so the page has a last store to resume after.
  if (found.more) {
    response.set_next_page_token(ListPageToken(request.tenant(), found.stores.back().first));
  }
  return response;
}

absl::Status Engine::DeleteStore(const adapt::v1::DeleteStoreRequest& request) {
  RETURN_IF_ERROR(ValidateStoreNames(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(FenceHold hold, EnterFence(request.tenant(), request.store()));
  const std::string key = absl::StrCat(request.tenant(), "/", request.store());
  // Stores created from it on other members (asked without base_mu_, which their own
  // deletes may hold while they ask this one); a create there that read it since holds
  // its lease, checked below.
  if (remote_bases_ != nullptr && registry_.Find(request.tenant(), request.store()).ok()) {
    RETURN_IF_ERROR(remote_bases_->CheckNoDependantsElsewhere(key));
  }
  absl::MutexLock base_lock(&base_mu_);
  if (auto lease = base_leases_.find(key); lease != base_leases_.end()) {
    const absl::Duration left = lease->second - absl::Now();
    if (left > absl::ZeroDuration()) {
      return absl::FailedPreconditionError(
          absl::StrCat("store ", key,
                       " was read as the base of a store being created on another member; "
                       "its delete waits for that create (retry in ",
                       absl::FormatDuration(absl::Ceil(left, absl::Seconds(1))), ")"));
    }
    base_leases_.erase(lease);
  }
  return RemoveStore(request.tenant(), request.store(), /*keep_dependants=*/false);
}

absl::Status Engine::RemoveStore(const std::string& tenant, const std::string& store,
                                 bool keep_dependants) {
  const std::string key = absl::StrCat(tenant, "/", store);
  if (auto users = dependants_.find(key); users != dependants_.end() && !keep_dependants) {
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

std::unique_ptr<WriteSession> Engine::StartWrite(TxnKind kind) {
  return std::make_unique<WriteSession>(
      WriteContext{this, durability_.get(), encoders_.get(), quotas_.get(), metrics_, max_dim_},
      kind);
}

absl::StatusOr<WriteTargets::Target> Engine::FindForWrite(const std::string& tenant,
                                                          const std::string& store) {
  Target target;
  ASSIGN_OR_RETURN(target.store, Find(tenant, store));
  ASSIGN_OR_RETURN(target.slot, registry_.Find(tenant, store));
  return target;
}

bool Engine::StillHolds(const std::string& tenant, const std::string& store,
                        const StoreSlot& slot) const {
  absl::StatusOr<std::shared_ptr<StoreSlot>> current = registry_.Find(tenant, store);
  return current.ok() && current->get() == &slot;
}

absl::Status Engine::CheckRoomToWrite(const std::string& tenant, const StoreSlot& slot) const {
  RETURN_IF_ERROR(CheckQuota(tenant, nullptr));
  // The store's own size: its remembered ids count in the budget's total, not in this
  // refusal (they are bounded by max_example_ids and go with an eviction).
  return CheckBudget(slot.store_bytes());
}

void Engine::AfterCommit(StoreSlot& slot, const std::shared_ptr<Store>& store,
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
    compile_pool_.ScheduleAuto(store, absl::ZeroDuration(), /*urgent=*/true);
  } else if (result.compile_after > absl::ZeroDuration()) {
    compile_pool_.ScheduleAuto(store, result.compile_after, /*urgent=*/false);
  }
}

void Engine::Compile(const adapt::v1::CompileRequest& request, CompilePool::Done done) {
  auto store = Find(request.tenant(), request.store());
  if (!store.ok()) {
    done(store.status());
    return;
  }
  if (absl::Status params = CheckCompileParams(request, (*store)->spec()); !params.ok()) {
    done(params);
    return;
  }
  // In the store's fence until the compile is logged and answered: a hand-off waits for it.
  absl::StatusOr<FenceHold> entered = EnterFence(request.tenant(), request.store());
  if (!entered.ok()) {
    done(entered.status());
    return;
  }
  done = [hold = std::make_shared<FenceHold>(*std::move(entered)),
          done = std::move(done)](absl::StatusOr<adapt::v1::CompileResponse> result) mutable {
    done(std::move(result));
    hold->Release();
  };
  if (auto encoder = EncoderOf(**store); !encoder.ok()) {
    done(encoder.status());
    return;
  }
  const Store* target = store->get();
  if (!request.refresh_base()) {
    compile_pool_.Submit(*std::move(store), request,
                         NoteCompileThen(request, target, std::move(done)));
    return;
  }
  // refresh_base: the base's current read-out, copied before the compile.
  const adapt::v1::StoreSpec spec = target->spec();
  if (spec.base().empty()) {
    done(absl::FailedPreconditionError(absl::StrCat("refresh_base: store ", request.tenant(), "/",
                                                    request.store(), " has no base")));
    return;
  }
  absl::StatusOr<std::pair<std::string, std::string>> base_name =
      ParseBaseName(request.tenant(), spec.base());
  absl::StatusOr<ExportedBase> base =
      base_name.ok() ? ReadBase(base_name->first, base_name->second, /*for_create=*/false)
                     : base_name.status();
  if (!base.ok()) {
    // A member that cannot be asked is worth a retry; a base that is gone is not.
    done(absl::Status(absl::IsUnavailable(base.status()) ? absl::StatusCode::kUnavailable
                                                         : absl::StatusCode::kFailedPrecondition,
                      absl::StrCat("refresh_base: the base ", spec.base(),
                                   " cannot be read: ", base.status().message())));
    return;
  }
  if (!base->readout_status.ok()) {
    done(absl::Status(base->readout_status.code(),
                      absl::StrCat("refresh_base: ", base->readout_status.message())));
    return;
  }
  auto copy = std::make_shared<const BaseReadout>(std::move(base->readout));
  compile_pool_.Submit(*std::move(store), request,
                       NoteCompileThen(request, target, std::move(done)), copy);
}

}  // namespace adaptd
