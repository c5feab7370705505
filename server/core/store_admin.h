// StoreAdmin: the calls that create, describe, list, delete, pin, compile, export and import
// stores, over a StoreDirectory (where the stores are) and the compile pool it owns. It checks
// each request (names, the spec against the hosted encoders and the server's limits, a base
// against the new store, a compile's overrides against the store's kind) and leaves every
// store as it was on an error. Base stores (docs/BASE_STORES.md) are read here or, through
// RemoteBases, from the member of a cluster that holds them (store_admin_bases.cc); stores move
// in and out whole in store_admin_transfer.cc.
//
// Thread safety: every method may be called concurrently. Compile hands its work to the compile
// pool and answers through a callback.
#ifndef ADAPTD_SERVER_CORE_STORE_ADMIN_H_
#define ADAPTD_SERVER_CORE_STORE_ADMIN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/core/compile_pool.h"
#include "server/core/remote_bases.h"
#include "server/core/store_directory.h"
#include "server/encoders/encoder_set.h"
#include "server/metrics/metrics.h"
#include "server/stores/store.h"

namespace adaptd {

class StoreAdmin {
 public:
  // `directory`, `encoders`, `backend` and `metrics` (nullable) must outlive the admin.
  StoreAdmin(const adapt::v1::ServerConfig& config, StoreDirectory* directory,
             const EncoderSet* encoders, kernels::Backend* backend, Metrics* metrics);

  absl::StatusOr<adapt::v1::StoreInfo> CreateStore(const adapt::v1::CreateStoreRequest& request);
  absl::StatusOr<adapt::v1::StoreInfo> GetStore(const adapt::v1::GetStoreRequest& request) const;
  absl::StatusOr<adapt::v1::ListStoresResponse> ListStores(
      const adapt::v1::ListStoresRequest& request) const;
  absl::Status DeleteStore(const adapt::v1::DeleteStoreRequest& request);
  // Pins or unpins a store (docs/RESIDENCY.md), durably; loads it first.
  absl::StatusOr<adapt::v1::StoreInfo> PinStore(const adapt::v1::PinStoreRequest& request);

  // Runs on the compile pool; `done` is called there (or at once on a validation error).
  void Compile(const adapt::v1::CompileRequest& request, CompilePool::Done done);
  // An automatic compile of `store` after `delay` (StoreDirectory::AutoCompile).
  void ScheduleAuto(const std::shared_ptr<Store>& store, absl::Duration delay, bool urgent) {
    compile_pool_.ScheduleAuto(store, delay, urgent);
  }
  // Stops the compile pool (queued explicit compiles finish; pending auto compiles drop).
  void Shutdown() { compile_pool_.Stop(); }

  // The store's snapshot file (see snapshot_file.h).
  absl::StatusOr<std::string> Export(const adapt::v1::ExportStoreRequest& request) const;
  // Creates tenant/store from a snapshot file; the store must not exist. `applied_ids`
  // (oldest first) are remembered as applied, so resends of them are skipped. An imported
  // store starts unpinned.
  absl::StatusOr<adapt::v1::StoreInfo> Import(const std::string& tenant, const std::string& store,
                                              std::string_view file,
                                              const std::vector<std::string>& applied_ids);

  // Base stores across a cluster (docs/CLUSTER_ETCD.md, "Quotas and base stores"): where bases
  // another member holds come from (set before serving; null: every base is read here).
  void SetRemoteBases(RemoteBases* remote) { remote_bases_ = remote; }
  // Base tenant/store as held here, for another member (NotFound when not held here);
  // `for_create` starts its lease (StoreDirectory::kBaseLease).
  absl::StatusOr<ExportedBase> ReadBaseHere(const std::string& tenant, const std::string& store,
                                            bool for_create) const;

 private:
  // The spec a create asks for, completed (encoder, dim, output kind, fingerprints) and
  // checked against the hosted encoders and the server's limits; `base` gets the base it
  // names, read and checked (store_admin_bases.cc).
  absl::StatusOr<adapt::v1::StoreSpec> CompleteSpec(const adapt::v1::CreateStoreRequest& request,
                                                    std::optional<ExportedBase>* base);
  // A new store of `spec`, started from `base` and with its declared labels embedded.
  absl::StatusOr<std::shared_ptr<Store>> NewStore(const adapt::v1::StoreSpec& spec,
                                                  const std::optional<ExportedBase>& base) const;
  // The base a new store of `spec` (of `tenant`, named `name`) starts from, checked against
  // the spec, which gains the base's full name, dim and what its kind adopts of the base.
  absl::StatusOr<ExportedBase> ResolveBase(const std::string& tenant, const std::string& name,
                                           adapt::v1::StoreSpec* spec);
  // Base tenant/store, read here or from the member that holds it (remote_bases_).
  absl::StatusOr<ExportedBase> ReadBase(const std::string& tenant, const std::string& store,
                                        bool for_create);
  // refresh_base: the copy of the base `spec` names that the compile takes; the error is the
  // call's answer.
  absl::StatusOr<std::shared_ptr<const BaseReadout>> RefreshedBase(
      const adapt::v1::CompileRequest& request, const adapt::v1::StoreSpec& spec);
  // The compile pool's log step (CompilePool::Log): a solved compile's record, explicit or
  // automatic, appended durably before the compile is published, so replay reproduces it and a
  // crash never serves a version the log lacks; an automatic one's size is noted once published.
  absl::StatusOr<CompilePool::Published> LogCompile(const Store& store,
                                                    const adapt::v1::CompileRequest& request,
                                                    const BaseReadout* base, bool automatic);
  // `done`, after an explicit compile was logged and published (or failed): notes its size.
  CompilePool::Done NoteCompileThen(const adapt::v1::CompileRequest& request, const Store* store,
                                    CompilePool::Done done);

  const int64_t max_dim_;
  StoreDirectory* const directory_;
  const EncoderSet* const encoders_;
  kernels::Backend* const backend_;
  Metrics* const metrics_;
  RemoteBases* remote_bases_ = nullptr;
  CompilePool compile_pool_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_STORE_ADMIN_H_
