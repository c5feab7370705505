// Engine: builds its parts and wires them: the directory's automatic compiles go to the
// admin's compile pool; the write session and the predictor reach the stores through the
// directory.
#include "server/core/engine.h"

#include "server/base/status_macros.h"
#include "server/config/defaults.h"
#include "server/durability/etcd_durability.h"
#include "server/durability/local_durability.h"

namespace adaptd {
namespace {

// What the durable log in etcd reports, to `metrics` (nullable).
EtcdDurability::Options::Hooks DurableLogHooks(Metrics* metrics) {
  EtcdDurability::Options::Hooks hooks;
  if (metrics == nullptr) return hooks;
  hooks.on_commit = [metrics](double seconds, size_t records) {
    metrics->RecordDurableLogCommit(seconds, records);
  };
  hooks.on_object = [metrics](const std::string& what, uint64_t bytes, bool ok) {
    metrics->RecordDurableLogObject(what, bytes, ok);
  };
  hooks.on_restore = [metrics](double seconds) { metrics->RecordDurableLogRestore(seconds); };
  hooks.on_fence_failure = [metrics] { metrics->RecordDurableLogFenceFailure(); };
  hooks.on_error = [metrics](const std::string& service) {
    metrics->RecordDurableLogError(service);
  };
  return hooks;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const adapt::v1::ServerConfig& config,
                                                       kernels::Backend* backend, Metrics* metrics,
                                                       Env* env) {
  if (config.has_durable_log()) {
    return CreateOver(config, backend, metrics, DurableLogOf(config, backend, metrics));
  }
  return CreateOver(config, backend, metrics, LocalDurabilityOf(config, backend, metrics, env));
}

Engine::DurabilityOpener Engine::DurableLogOf(const adapt::v1::ServerConfig& config,
                                              kernels::Backend* backend, Metrics* metrics,
                                              std::shared_ptr<const ShardFences> shards) {
  return
      [config, backend, metrics, shards = std::move(shards)](
          std::vector<RecoveredStore>* recovered) -> absl::StatusOr<std::unique_ptr<Durability>> {
        ASSIGN_OR_RETURN(std::unique_ptr<EtcdDurability> remote,
                         EtcdDurability::OpenConfigured(config, backend, recovered,
                                                        DurableLogHooks(metrics), shards));
        const EtcdDurability* log = remote.get();
        std::unique_ptr<Durability> durability(std::move(remote));
        // Keyed by the Durability the directory holds: ~Engine clears it by that address.
        if (metrics != nullptr) {
          metrics->SetSnapshotLagSource(durability.get(),
                                        [log] { return log->OldestChangeSeconds(); });
        }
        return durability;
      };
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::CreateOver(const adapt::v1::ServerConfig& config,
                                                           kernels::Backend* backend,
                                                           Metrics* metrics,
                                                           DurabilityOpener open) {
  EncoderSetOptions encoder_options = EncoderSetOptionsFromConfig(config);
  if (metrics != nullptr) {
    encoder_options.on_truncated_texts = [metrics](const std::string& encoder, uint64_t texts) {
      metrics->RecordTruncatedTexts(encoder, texts);
    };
  }
  ASSIGN_OR_RETURN(std::unique_ptr<EncoderSet> encoders,
                   EncoderSet::Create(config.encoders(), backend, encoder_options));
  ASSIGN_OR_RETURN(std::unique_ptr<TenantQuotas> quotas, TenantQuotas::Create(config));
  std::unique_ptr<Engine> engine(
      new Engine(config, metrics, std::move(encoders), std::move(quotas)));
  Engine* e = engine.get();
  ASSIGN_OR_RETURN(
      engine->directory_,
      StoreDirectory::Create(config, /*durable=*/open != nullptr, backend, metrics,
                             engine->encoders_.get(), engine->quotas_.get(),
                             [e](const std::shared_ptr<Store>& store, absl::Duration delay,
                                 bool urgent) { e->admin_->ScheduleAuto(store, delay, urgent); }));
  engine->admin_ = std::make_unique<StoreAdmin>(config, engine->directory_.get(),
                                                engine->encoders_.get(), backend, metrics);
  engine->predictor_ = std::make_unique<const Predictor>(engine->directory_.get(), backend, metrics,
                                                         engine->max_dim_);
  RETURN_IF_ERROR(engine->directory_->Open(open));
  return engine;
}

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

Engine::Engine(const adapt::v1::ServerConfig& config, Metrics* metrics,
               std::unique_ptr<EncoderSet> encoders, std::unique_ptr<TenantQuotas> quotas)
    : max_dim_(config.max_dim() > 0 ? config.max_dim() : defaults::kMaxDim),
      metrics_(metrics),
      encoders_(std::move(encoders)),
      quotas_(std::move(quotas)) {}

Engine::~Engine() {
  // The snapshot-lag source set by the durable log's opener reads the durability the
  // directory is about to destroy.
  if (metrics_ != nullptr && directory_ != nullptr) {
    metrics_->ClearSnapshotLagSource(directory_->durability());
  }
  Shutdown();
}

void Engine::Shutdown() {
  if (directory_ != nullptr) directory_->Stop();
  if (admin_ != nullptr) admin_->Shutdown();
}

absl::Status Engine::Flush() {
  Durability* durability = directory_->durability();
  return durability == nullptr ? absl::OkStatus() : durability->Checkpoint();
}

std::unique_ptr<WriteSession> Engine::StartWrite(TxnKind kind) {
  return std::make_unique<WriteSession>(
      WriteContext{directory_.get(), directory_->durability(), encoders_.get(), quotas_.get(),
                   metrics_, max_dim_},
      kind);
}

}  // namespace adaptd
