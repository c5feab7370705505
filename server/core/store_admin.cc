// StoreAdmin: creating, describing, listing, deleting, pinning and compiling stores.
#include "server/core/store_admin.h"

#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/config/defaults.h"
#include "server/core/list_page.h"
#include "server/core/remembered_predictions.h"
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

// The compile figures of a finished compile, explicit or automatic (CompilePool::Observer).
void ObserveCompile(Metrics* metrics, const Store& store,
                    const absl::StatusOr<adapt::v1::CompileResponse>& r, bool automatic) {
  if (metrics == nullptr) return;
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  const StoreKind* kind = StoreKinds::Global().Find(info.spec().kind());
  const bool timed = r.ok() && kind != nullptr && kind->compile_seconds;
  metrics->RecordCompile(r.ok(), automatic, timed ? kind->compile_seconds(*r) : 0.0);
  if (r.ok()) metrics->RecordCompileGauges(info.spec().kind(), *r);
  metrics->RefreshStore(&store, info);
}

}  // namespace

StoreAdmin::StoreAdmin(const adapt::v1::ServerConfig& config, StoreDirectory* directory,
                       const EncoderSet* encoders, kernels::Backend* backend, Metrics* metrics)
    : max_dim_(config.max_dim() > 0 ? config.max_dim() : defaults::kMaxDim),
      directory_(directory),
      encoders_(encoders),
      backend_(backend),
      metrics_(metrics),
      compile_pool_(
          static_cast<int>(config.compile_threads() > 0 ? config.compile_threads()
                                                        : defaults::kCompileThreads),
          [metrics](const Store& store, const absl::StatusOr<adapt::v1::CompileResponse>& r,
                    bool automatic) { ObserveCompile(metrics, store, r, automatic); },
          [this](const Store& store, const adapt::v1::CompileRequest& request,
                 const BaseReadout* base,
                 bool automatic) { return LogCompile(store, request, base, automatic); }) {}

absl::StatusOr<adapt::v1::StoreSpec> StoreAdmin::CompleteSpec(
    const adapt::v1::CreateStoreRequest& request, std::optional<ExportedBase>* base) {
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
  RETURN_IF_ERROR(CheckFeedbackWindow(spec));
  if (!spec.base().empty()) {
    ASSIGN_OR_RETURN(*base, ResolveBase(request.tenant(), request.store(), &spec));
  }
  RETURN_IF_ERROR(encoders_->BindToSpec(&spec));  // fingerprints, label encoder
  if (base->has_value()) {
    const std::string& base_fingerprint = (*base)->spec.encoder_fingerprint();
    if (!spec.encoder_fingerprint().empty() && !base_fingerprint.empty() &&
        spec.encoder_fingerprint() != base_fingerprint) {
      return absl::InvalidArgumentError(
          "spec.base: the base was created with another version of the encoder (its "
          "encoder_fingerprint differs), so its keys mean something else");
    }
  }
  return spec;
}

absl::StatusOr<std::shared_ptr<Store>> StoreAdmin::NewStore(
    const adapt::v1::StoreSpec& spec, const std::optional<ExportedBase>& base) const {
  // Pinning is the directory's (the durability records it with the creation), not the store's.
  adapt::v1::StoreSpec store_spec = spec;
  store_spec.clear_pinned();
  ASSIGN_OR_RETURN(std::unique_ptr<Store> created, adaptd::CreateStore(store_spec, backend_));
  std::shared_ptr<Store> store = std::move(created);
  // Declared labels are embedded now, and a base copied: the new store starts with a state of
  // its own, stored like an import's before the creation is acknowledged.
  if (base.has_value()) RETURN_IF_ERROR(store->StartFromBase(base->readout));
  if (spec.output().labels_size() > 0) {
    const Encoder* label_encoder = encoders_->Find(spec.output().label_encoder());
    if (label_encoder == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("spec.output.label_encoder: unknown encoder '",
                                                     spec.output().label_encoder(), "'"));
    }
    RETURN_IF_ERROR(SeedDeclaredLabels(*label_encoder, store.get()));
  }
  return store;
}

absl::StatusOr<adapt::v1::StoreInfo> StoreAdmin::CreateStore(
    const adapt::v1::CreateStoreRequest& request) {
  const std::string& tenant = request.tenant();
  const std::string& name = request.store();
  RETURN_IF_ERROR(ValidateStoreNames(tenant, name));
  std::optional<ExportedBase> base;
  ASSIGN_OR_RETURN(const adapt::v1::StoreSpec spec, CompleteSpec(request, &base));
  ASSIGN_OR_RETURN(std::shared_ptr<Store> store, NewStore(spec, base));
  // A name taken already is that, not a store more: at the quota too, as Import says it (and
  // as a cluster's count, which lets an existing name through to its create, expects).
  if (directory_->Holds(tenant, name)) {
    return absl::AlreadyExistsError(absl::StrCat("store ", tenant, "/", name, " already exists"));
  }
  RETURN_IF_ERROR(directory_->CheckQuota(tenant, store.get()));
  RETURN_IF_ERROR(directory_->CheckBudget(*store));
  const bool seeded = spec.output().labels_size() > 0 || base.has_value();
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   directory_->AddCreated(tenant, name, store, spec, seeded,
                                          /*base_remote=*/base.has_value() && base->remote));
  adapt::v1::StoreInfo info = directory_->Describe(tenant, name, *slot);
  if (metrics_ != nullptr) metrics_->ObserveStore(store, info);
  return info;
}

absl::StatusOr<adapt::v1::StoreInfo> StoreAdmin::GetStore(
    const adapt::v1::GetStoreRequest& request) const {
  RETURN_IF_ERROR(ValidateStoreNames(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(auto slot, directory_->Slot(request.tenant(), request.store()));
  return directory_->Describe(request.tenant(), request.store(), *slot);
}

absl::StatusOr<adapt::v1::ListStoresResponse> StoreAdmin::ListStores(
    const adapt::v1::ListStoresRequest& request) const {
  RETURN_IF_ERROR(ValidateName("tenant", request.tenant()));
  ASSIGN_OR_RETURN(const PageQuery page, ParseListPage(request));
  const Registry::Page found = directory_->ListPage(request.tenant(), page.after, page.limit);
  adapt::v1::ListStoresResponse response;
  for (const auto& [name, slot] : found.stores) {
    *response.add_stores() = directory_->Describe(request.tenant(), name, *slot);  // never loads
  }
  // `more` implies a full page (limit >= 1), so the page has a last store to resume after.
  if (found.more) {
    response.set_next_page_token(ListPageToken(request.tenant(), found.stores.back().first));
  }
  return response;
}

absl::Status StoreAdmin::DeleteStore(const adapt::v1::DeleteStoreRequest& request) {
  RETURN_IF_ERROR(ValidateStoreNames(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(FenceHold hold, directory_->EnterFence(request.tenant(), request.store()));
  // Stores created from it on other members (asked before the directory's base lock, which
  // their own deletes may hold while they ask this one); a create there that read it since
  // holds its lease, which Remove checks.
  if (remote_bases_ != nullptr && directory_->Holds(request.tenant(), request.store())) {
    RETURN_IF_ERROR(remote_bases_->CheckNoDependantsElsewhere(
        absl::StrCat(request.tenant(), "/", request.store())));
  }
  return directory_->Remove(request.tenant(), request.store());
}

absl::StatusOr<adapt::v1::StoreInfo> StoreAdmin::PinStore(
    const adapt::v1::PinStoreRequest& request) {
  // A pinned store is a loaded one: find (and load) it first.
  ASSIGN_OR_RETURN(std::shared_ptr<Store> store,
                   directory_->Find(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(FenceHold hold, directory_->EnterFence(request.tenant(), request.store()));
  ASSIGN_OR_RETURN(std::shared_ptr<StoreSlot> slot,
                   directory_->Slot(request.tenant(), request.store()));
  if (slot->loaded() != store) return GoneDuringCall(*slot, request.tenant(), request.store());
  RETURN_IF_ERROR(directory_->SetPinned(*slot, *store, request.pinned()));
  return directory_->Describe(request.tenant(), request.store(), *slot);
}

void StoreAdmin::Compile(const adapt::v1::CompileRequest& request, CompilePool::Done done) {
  auto store = directory_->Find(request.tenant(), request.store());
  if (!store.ok()) {
    done(store.status());
    return;
  }
  if (absl::Status params = CheckCompileParams(request, (*store)->spec()); !params.ok()) {
    done(params);
    return;
  }
  // In the store's fence until the compile is logged and answered: a hand-off waits for it.
  absl::StatusOr<FenceHold> entered = directory_->EnterFence(request.tenant(), request.store());
  if (!entered.ok()) {
    done(entered.status());
    return;
  }
  done = [hold = std::make_shared<FenceHold>(*std::move(entered)),
          done = std::move(done)](absl::StatusOr<adapt::v1::CompileResponse> result) mutable {
    done(std::move(result));
    hold->Release();
  };
  if (auto encoder = directory_->EncoderOf(**store); !encoder.ok()) {
    done(encoder.status());
    return;
  }
  const Store* target = store->get();
  std::shared_ptr<const BaseReadout> base;
  if (request.refresh_base()) {
    absl::StatusOr<std::shared_ptr<const BaseReadout>> refreshed =
        RefreshedBase(request, target->spec());
    if (!refreshed.ok()) {
      done(refreshed.status());
      return;
    }
    base = *std::move(refreshed);
  }
  compile_pool_.Submit(*std::move(store), request,
                       NoteCompileThen(request, target, std::move(done)), std::move(base));
}

absl::StatusOr<CompilePool::Published> StoreAdmin::LogCompile(
    const Store& store, const adapt::v1::CompileRequest& request, const BaseReadout* base,
    bool automatic) {
  Durability* durability = directory_->durability();
  if (durability == nullptr) return nullptr;
  if (!automatic) {
    RETURN_IF_ERROR(
        durability->AppendCompile(request.tenant(), request.store(), &store, request, base,
                                  durability->CurrentFence(request.tenant(), request.store())));
    return nullptr;  // NoteCompileThen notes its size
  }
  std::string tenant, name;
  if (const absl::Status logged = durability->AppendAutoCompile(&store, &tenant, &name);
      !logged.ok()) {
    std::fprintf(stderr, "adaptd: logging an automatic compile failed (not published): %s\n",
                 std::string(logged.message()).c_str());
    return logged;
  }
  if (name.empty()) return nullptr;
  return [this, &store, tenant, name] {
    adapt::v1::StoreInfo info;
    store.Describe(&info);
    directory_->NoteSize(tenant, name, store, info);  // a first compile publishes weights
  };
}

CompilePool::Done StoreAdmin::NoteCompileThen(const adapt::v1::CompileRequest& request,
                                              const Store* store, CompilePool::Done done) {
  if (directory_->durability() == nullptr) return done;
  return [this, request, store,
          done = std::move(done)](absl::StatusOr<adapt::v1::CompileResponse> result) {
    if (result.ok()) {
      adapt::v1::StoreInfo info;
      store->Describe(&info);
      directory_->NoteSize(request.tenant(), request.store(), *store, info);
    }
    done(std::move(result));
  };
}

}  // namespace adaptd
