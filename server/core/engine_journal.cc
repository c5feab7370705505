// The engine's side of durability (server/durability/durability.h): recovery at start-up,
// example-id checks and logged commits of write sessions (the record is durable before the
// store applies the transaction), logged compiles, and Flush.
#include <cstdio>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/base/status_macros.h"
#include "server/core/engine.h"
#include "server/durability/local_durability.h"
#include "server/persistence/failed_store.h"
#include "server/stores/store_kind.h"

namespace adaptd {
Engine::DurabilityOpener Engine::LocalDurabilityOf(const adapt::v1::ServerConfig& config,
                                                   kernels::Backend* backend, Metrics* metrics,
                                                   Env* env) {
  if (config.data_dir().empty()) return nullptr;
  JournalOptions options;
  options.data_dir = config.data_dir();
  options.env = env;
  options.sync = !config.has_log_fsync() || config.log_fsync();
  if (config.snapshot_log_bytes() > 0) options.snapshot_log_bytes = config.snapshot_log_bytes();
  if (config.has_max_example_ids()) options.max_ids_per_store = config.max_example_ids();
  if (config.state_map_bytes() > 0) options.state_map_bytes = config.state_map_bytes();
  if (metrics != nullptr) {
    options.on_sync = [metrics](double seconds) { metrics->RecordLogFsync(seconds); };
    options.on_checkpoint = [metrics](uint64_t written, uint64_t failed) {
      metrics->RecordCheckpoint(written, failed);
    };
  }
  return
      [options, backend](
          std::vector<RecoveredStore>* recovered) -> absl::StatusOr<std::unique_ptr<Durability>> {
        ASSIGN_OR_RETURN(std::unique_ptr<LocalDurability> local,
                         LocalDurability::Open(options, backend, recovered));
        return std::unique_ptr<Durability>(std::move(local));
      };
}

absl::Status Engine::OpenDurability(const DurabilityOpener& open) {
  if (open == nullptr) return absl::OkStatus();
  std::vector<RecoveredStore> recovered;
  ASSIGN_OR_RETURN(durability_, open(&recovered));
  const absl::Time opened = absl::Now();
  for (auto& r : recovered) {
    // A cold store is read from the state database by the first call that needs it.
    auto slot =
        r.store != nullptr
            ? std::make_shared<StoreSlot>(r.tenant, r.name, r.store, LoaderOf(r.tenant, r.name),
                                          WarmLoaderOf(r.tenant, r.name, r.kind))
            : std::make_shared<StoreSlot>(r.tenant, r.name, r.kind, std::move(r.info),
                                          LoaderOf(r.tenant, r.name),
                                          WarmLoaderOf(r.tenant, r.name, r.kind));
    slot->set_pinned(r.pinned);
    if (!r.base.empty()) {
      absl::MutexLock lock(&base_mu_);
      AddDependantLocked(r.base, absl::StrCat(r.tenant, "/", r.name));
    }
    RETURN_IF_ERROR(registry_.Insert(r.tenant, r.name, slot));
    WatchTier(*slot);
    if (r.store != nullptr) {
      AfterLoad(r.tenant, r.name, r.store);
      if (residency_ != nullptr) residency_->Loaded(slot);
    }
  }
  recovered.clear();
  recovered.shrink_to_fit();
#ifdef __GLIBC__
  // Recovery's temporaries (every store's catalog record, read and copied) are freed now;
  // the pages they leave whole go back to the system (bench/RESULTS.md, "Heap per cold and
  // warm store").
  malloc_trim(0);
#endif
  recovery_report_ = absl::StrFormat("recovered %s; slots %.3f s", durability_->recovery_report(),
                                     absl::ToDoubleSeconds(absl::Now() - opened));
  return absl::OkStatus();
}

StoreSlot::Loader Engine::LoaderOf(const std::string& tenant, const std::string& name) {
  return [this, tenant, name]() -> absl::StatusOr<std::shared_ptr<Store>> {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(std::shared_ptr<Store> store, durability_->Load(tenant, name));
    if (metrics_ != nullptr) {
      metrics_->RecordLoad(KindName(store->spec().kind()),
                           absl::ToDoubleSeconds(absl::Now() - start));
    }
    AfterLoad(tenant, name, store);
    return store;
  };
}

StoreSlot::WarmLoader Engine::WarmLoaderOf(const std::string& tenant, const std::string& name,
                                           adapt::v1::StoreKind kind) {
  const StoreKind* k = StoreKinds::Global().Find(kind);
  if (k == nullptr || !k->warm) return nullptr;
  return [this, tenant, name](const std::shared_ptr<const adapt::v1::StoreInfo>& stored)
             -> absl::StatusOr<std::shared_ptr<WarmStore>> {
    const absl::Time start = absl::Now();
    // The read-out stored beside the state, read alone, with the slot's description of the
    // stored state (written with it).
    if (stored != nullptr) {
      ASSIGN_OR_RETURN(std::shared_ptr<const LinearReadout> readout,
                       durability_->LoadReadout(tenant, name));
      if (readout != nullptr) {
        if (metrics_ != nullptr) {
          metrics_->RecordLoad(KindName(stored->spec().kind()),
                               absl::ToDoubleSeconds(absl::Now() - start));
        }
        return std::make_shared<WarmStore>(stored, std::move(readout), backend_);
      }
    }
    // Otherwise the state is read whole and its read-out kept. A store without a read-out
    // (nothing published yet) is loaded whole instead: the durability keeps it, and the slot's
    // loader finds it there.
    ASSIGN_OR_RETURN(std::shared_ptr<Store> store,
                     durability_->Load(tenant, name, [](const Store& restored) {
                       return restored.Readout() != nullptr;
                     }));
    std::shared_ptr<const LinearReadout> readout = store->Readout();
    if (readout == nullptr || !StoreFailure(*store).ok()) return nullptr;
    if (metrics_ != nullptr) {
      metrics_->RecordLoad(KindName(store->spec().kind()),
                           absl::ToDoubleSeconds(absl::Now() - start));
    }
    // The slot's description of a cold store is the catalog's, written with the state just
    // read: shared as it is rather than made again.
    if (stored != nullptr) return std::make_shared<WarmStore>(stored, std::move(readout), backend_);
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    return std::make_shared<WarmStore>(std::move(info), std::move(readout), backend_);
  };
}

void Engine::AfterLoad(const std::string& tenant, const std::string& name,
                       const std::shared_ptr<Store>& store) {
  adapt::v1::StoreInfo info = Describe(tenant, name, *store);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  // Examples that no compile covered are pending, as they were before the store was stored;
  // a store that compiles by itself compiles them now (StoreKind::compile_after_load: faast's
  // idle timer did not survive). A store with automatic compiles off keeps them pending, so a
  // restart or a load changes nothing a reader can see.
  const StoreKind* kind = StoreKinds::Global().Find(info.spec().kind());
  if (info.failure().empty() && kind != nullptr && kind->compile_after_load &&
      kind->compile_after_load(info)) {
    compile_pool_.ScheduleAuto(store, absl::ZeroDuration(), /*urgent=*/false);
  }
}

absl::Status Engine::Flush() {
  if (durability_ == nullptr) return absl::OkStatus();
  return durability_->Checkpoint();
}

absl::StatusOr<CompilePool::Published> Engine::LogCompile(const Store& store,
                                                          const adapt::v1::CompileRequest& request,
                                                          const BaseReadout* base, bool automatic) {
  if (durability_ == nullptr) return nullptr;
  if (!automatic) {
    RETURN_IF_ERROR(
        durability_->AppendCompile(request.tenant(), request.store(), &store, request, base,
                                   durability_->CurrentFence(request.tenant(), request.store())));
    return nullptr;  // NoteCompileThen notes its size
  }
  std::string tenant, name;
  if (const absl::Status logged = durability_->AppendAutoCompile(&store, &tenant, &name);
      !logged.ok()) {
    std::fprintf(stderr, "adaptd: logging an automatic compile failed (not published): %s\n",
                 std::string(logged.message()).c_str());
    return logged;
  }
  if (name.empty()) return nullptr;
  return [this, &store, tenant, name] {
    adapt::v1::StoreInfo info;
    store.Describe(&info);
    NoteSize(tenant, name, store, info);  // a first compile publishes weights
  };
}

CompilePool::Done Engine::NoteCompileThen(const adapt::v1::CompileRequest& request,
                                          const Store* store, CompilePool::Done done) {
  if (durability_ == nullptr) return done;
  return [this, request, store,
          done = std::move(done)](absl::StatusOr<adapt::v1::CompileResponse> result) {
    if (result.ok()) {
      adapt::v1::StoreInfo info;
      store->Describe(&info);
      NoteSize(request.tenant(), request.store(), *store, info);
    }
    done(std::move(result));
  };
}

void Engine::NoteSize(const std::string& tenant, const std::string& name, const Store& store,
                      const adapt::v1::StoreInfo& info) const {
  absl::StatusOr<std::shared_ptr<StoreSlot>> slot = registry_.Find(tenant, name);
  if (slot.ok() && (*slot)->loaded().get() == &store) NoteSize(**slot, info);
}

void Engine::NoteSize(StoreSlot& slot, const adapt::v1::StoreInfo& info) const {
  const uint64_t ids =
      durability_ != nullptr ? durability_->RememberedBytes(slot.tenant(), slot.name()) : 0;
  slot.NoteBytes(info.memory_bytes(), ids);
  if (residency_ != nullptr) residency_->Grew();
}

}  // namespace adaptd
