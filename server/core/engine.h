// Engine: the core of adaptd below the service layer, a facade over its parts: the
// StoreDirectory (where the stores are, with their durability, tiers and fences), StoreAdmin
// (the calls that create, describe, delete, pin, compile, export and import stores),
// WriteSession (one Adapt or Forget, first message to durable commit) and Predictor (Predict
// and PredictBatch). It validates API messages through them (errors are absl::Status with
// codes chosen by their gRPC meaning and messages naming the field) and never includes a gRPC
// header; the edge maps its statuses one to one.
//
// Thread safety: every method may be called concurrently. Calls block only for their own
// compute; Compile hands its work to the compile pool and answers through a callback.
#ifndef ADAPTD_SERVER_CORE_ENGINE_H_
#define ADAPTD_SERVER_CORE_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/core/compile_pool.h"
#include "server/core/predictor.h"
#include "server/core/remote_bases.h"
#include "server/core/store_admin.h"
#include "server/core/store_directory.h"
#include "server/core/write_session.h"
#include "server/durability/etcd_fence.h"
#include "server/encoders/encoder_set.h"
#include "server/metrics/metrics.h"
#include "server/persistence/env.h"
#include "server/quota/tenant_quotas.h"
#include "server/stores/store.h"

namespace adaptd {

class Engine {
 public:
  // `backend`, `metrics` (nullable) and `env` (the files and clock of the durable state
  // under config.data_dir; null: Env::Default()) must outlive the engine.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const adapt::v1::ServerConfig& config,
                                                        kernels::Backend* backend, Metrics* metrics,
                                                        Env* env = nullptr);
  // Opens a Durability, filling `recovered` with the stores it holds (start-up).
  using DurabilityOpener = StoreDirectory::DurabilityOpener;
  // As Create, over the durability `open` gives (null: nothing is durable) instead of the
  // local data directory of config.data_dir.
  static absl::StatusOr<std::unique_ptr<Engine>> CreateOver(const adapt::v1::ServerConfig& config,
                                                            kernels::Backend* backend,
                                                            Metrics* metrics,
                                                            DurabilityOpener open);
  // The opener of config.data_dir's local durability (the write-ahead log and state
  // database), reporting to `metrics` (nullable); null without a data directory.
  static DurabilityOpener LocalDurabilityOf(const adapt::v1::ServerConfig& config,
                                            kernels::Backend* backend, Metrics* metrics, Env* env);
  // The opener of config.durable_log's durability (etcd and object storage), reporting to
  // `metrics` (nullable); with `shards`, as a member of a cluster on etcd, opening its stores
  // shard by shard (docs/CLUSTER_ETCD.md).
  static DurabilityOpener DurableLogOf(const adapt::v1::ServerConfig& config,
                                       kernels::Backend* backend, Metrics* metrics,
                                       std::shared_ptr<const ShardFences> shards = nullptr);
  ~Engine();

  // Stores: StoreAdmin (store_admin.h).
  absl::StatusOr<adapt::v1::StoreInfo> CreateStore(const adapt::v1::CreateStoreRequest& request) {
    return admin_->CreateStore(request);
  }
  absl::StatusOr<adapt::v1::StoreInfo> GetStore(const adapt::v1::GetStoreRequest& request) const {
    return admin_->GetStore(request);
  }
  absl::StatusOr<adapt::v1::ListStoresResponse> ListStores(
      const adapt::v1::ListStoresRequest& request) const {
    return admin_->ListStores(request);
  }
  absl::Status DeleteStore(const adapt::v1::DeleteStoreRequest& request) {
    return admin_->DeleteStore(request);
  }
  absl::StatusOr<adapt::v1::StoreInfo> PinStore(const adapt::v1::PinStoreRequest& request) {
    return admin_->PinStore(request);
  }
  void Compile(const adapt::v1::CompileRequest& request, CompilePool::Done done) {
    admin_->Compile(request, std::move(done));
  }
  absl::StatusOr<std::string> Export(const adapt::v1::ExportStoreRequest& request) const {
    return admin_->Export(request);
  }
  absl::StatusOr<adapt::v1::StoreInfo> Import(const std::string& tenant, const std::string& store,
                                              std::string_view file,
                                              const std::vector<std::string>& applied_ids = {}) {
    return admin_->Import(tenant, store, file, applied_ids);
  }

  // Adapt and Forget: a WriteSession (write_session.h) over the directory.
  std::unique_ptr<WriteSession> StartWrite(TxnKind kind);
  // Feedback on served predictions (docs/FEEDBACK.md): one write session of kind Adapt.
  absl::StatusOr<adapt::v1::FeedbackResponse> Feedback(const adapt::v1::FeedbackRequest& request) {
    return StartWrite(TxnKind::kAdapt)->Feedback(request);
  }

  // Predict and PredictBatch: the Predictor (predictor.h) over the directory.
  absl::StatusOr<adapt::v1::PredictResponse> Predict(
      const adapt::v1::PredictRequest& request) const {
    return predictor_->Predict(request);
  }
  std::vector<absl::StatusOr<adapt::v1::PredictResponse>> PredictBatch(
      const std::vector<const adapt::v1::PredictRequest*>& requests) const {
    return predictor_->PredictBatch(requests);
  }

  // Base stores across a cluster (docs/CLUSTER.md, "Base stores"): StoreAdmin's.
  void SetRemoteBases(RemoteBases* remote) { admin_->SetRemoteBases(remote); }
  absl::StatusOr<ExportedBase> ReadBaseHere(const std::string& tenant, const std::string& store,
                                            bool for_create) {
    return admin_->ReadBaseHere(tenant, store, for_create);
  }
  std::pair<std::vector<std::string>, size_t> DependantsHere(const std::string& base,
                                                             size_t max) const {
    return directory_->DependantsHere(base, max);
  }

  // Cluster quotas (docs/CLUSTER.md, "Quotas"): the tenants' limits and buckets, the names
  // of a tenant's stores held here, and what each tenant's stores here hold when loaded.
  TenantQuotas& quotas() const { return *quotas_; }
  std::vector<std::string> TenantStoreNames(const std::string& tenant) const {
    return directory_->TenantStoreNames(tenant);
  }
  std::map<std::string, uint64_t> MemoryByTenant() const { return directory_->MemoryByTenant(); }

  // A member of a cluster on etcd (docs/CLUSTER_ETCD.md): the shards it comes to hold and
  // gives up, StoreDirectory's AdoptShard and ReleaseShard.
  absl::Status AdoptShard(int shard) { return directory_->AdoptShard(shard); }
  absl::StatusOr<size_t> ReleaseShard(
      int shard, const std::function<bool(const std::string&, const std::string&)>& in_shard) {
    return directory_->ReleaseShard(shard, in_shard);
  }
  // Its restores and hot lists (docs/CLUSTER_ETCD.md, "Failover"): tenant/store loaded whole
  // as a write's first lookup loads it (nothing to do when it is loaded; a call meanwhile
  // waits for the load and does not load again), answering its last use just after (this
  // lookup's own); and when each store `keep` names was last looked up
  // (StoreDirectory::LastUses).
  absl::StatusOr<int64_t> LoadStore(const std::string& tenant, const std::string& store) {
    if (absl::Status found = directory_->Find(tenant, store).status(); !found.ok()) return found;
    absl::StatusOr<std::shared_ptr<StoreSlot>> slot = directory_->Slot(tenant, store);
    if (!slot.ok()) return slot.status();
    return (*slot)->last_use_nanos();
  }
  std::vector<StoreDirectory::StoreUse> LastUses(
      const std::function<bool(const std::string&, const std::string&)>& keep) const {
    return directory_->LastUses(keep);
  }

  // Whether a store is held here, and which (StoreDirectory's).
  bool Holds(const std::string& tenant, const std::string& store) const {
    return directory_->Holds(tenant, store);
  }

  adapt::v1::ListEncodersResponse ListEncoders() const { return encoders_->List(); }

  // Stops eviction and the compile pool (queued explicit compiles finish; pending auto
  // compiles drop).
  void Shutdown();

  // Makes every acknowledged change part of a store snapshot and drops the log they cover
  // (graceful shutdown). A no-op when nothing is durable.
  absl::Status Flush();
  // What start-up recovery did, and how long each step took ("recovered N stores in ...";
  // empty when nothing is durable).
  const std::string& recovery_report() const { return directory_->recovery_report(); }

 private:
  Engine(const adapt::v1::ServerConfig& config, Metrics* metrics,
         std::unique_ptr<EncoderSet> encoders, std::unique_ptr<TenantQuotas> quotas);

  const int64_t max_dim_;
  Metrics* const metrics_;
  const std::unique_ptr<EncoderSet> encoders_;
  const std::unique_ptr<TenantQuotas> quotas_;
  // Destroyed in reverse: the predictor and the admin (its compile threads note sizes in the
  // directory) before the directory.
  std::unique_ptr<StoreDirectory> directory_;
  std::unique_ptr<StoreAdmin> admin_;
  std::unique_ptr<const Predictor> predictor_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_ENGINE_H_
