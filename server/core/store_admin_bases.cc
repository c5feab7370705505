// StoreAdmin's side of base stores (docs/BASE_STORES.md): resolving a new store's base, read
// here or from the member of a cluster that holds it (docs/CLUSTER.md, "Base stores"), and the
// copy of the base a refresh_base compile takes. Which stores use a base is the directory's.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/core/store_admin.h"
#include "server/stores/store_kind.h"

namespace adaptd {

absl::StatusOr<ExportedBase> StoreAdmin::ResolveBase(const std::string& tenant,
                                                     const std::string& name,
                                                     adapt::v1::StoreSpec* spec) {
  ASSIGN_OR_RETURN(auto base_name, ParseBaseName(tenant, spec->base()));
  const auto& [base_tenant, base_store] = base_name;
  spec->set_base(absl::StrCat(base_tenant, "/", base_store));
  if (base_tenant == tenant && base_store == name) {
    return absl::InvalidArgumentError("spec.base: a store cannot be its own base");
  }
  const StoreKind* kind = StoreKinds::Global().Find(spec->kind());
  if (kind != nullptr && !kind->no_base.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.base: ", kind->name, " stores cannot start from a base: ", kind->no_base));
  }
  absl::StatusOr<ExportedBase> found = ReadBase(base_tenant, base_store, /*for_create=*/true);
  if (absl::IsNotFound(found.status())) {
    return absl::NotFoundError(absl::StrCat("spec.base: no store ", spec->base()));
  }
  if (!found.ok()) return found.status();
  const adapt::v1::StoreSpec& base_spec = found->spec;
  const StoreKind* base_kind = StoreKinds::Global().Find(base_spec.kind());
  if (base_kind != nullptr && !base_kind->no_base.empty()) {
    std::vector<std::string> bases;
    for (const StoreKind* k : StoreKinds::Global().All()) {
      if (k->no_base.empty()) bases.push_back(k->name);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("spec.base: ", spec->base(), " is a store of kind ", base_kind->name,
                     "; a base is a ", absl::StrJoin(bases, " or "), " store"));
  }
  if (base_spec.encoder() != spec->encoder()) {
    return absl::InvalidArgumentError(absl::StrCat("spec.base: ", spec->base(), " reads encoder '",
                                                   base_spec.encoder(), "', this store '",
                                                   spec->encoder(), "'"));
  }
  const adapt::v1::OutputSpec& out = spec->output();
  const adapt::v1::OutputSpec& base_out = base_spec.output();
  if (out.kind() != base_out.kind() || out.dim() != base_out.dim()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.base: ", spec->base(), " has output ",
                     adapt::v1::OutputSpec::Kind_Name(base_out.kind()), " of width ",
                     base_out.dim(), "; this store's must be the same"));
  }
  if (!out.label_encoder().empty() || !base_out.label_encoder().empty()) {
    return absl::InvalidArgumentError(
        "spec.base: label-embedding stores (output.label_encoder) neither take nor serve as a "
        "base");
  }
  if (!found->readout_status.ok()) {
    return absl::Status(found->readout_status.code(),
                        absl::StrCat(found->readout_status.message(), " (", spec->base(), ")"));
  }
  const BaseReadout* readout = &found->readout;
  if (spec->dim() != 0 && spec->dim() != readout->dim) {
    return absl::InvalidArgumentError(absl::StrCat("spec.dim: ", spec->dim(),
                                                   " differs from the "
                                                   "base's dimension ",
                                                   readout->dim));
  }
  spec->set_dim(static_cast<uint32_t>(readout->dim));
  if (kind != nullptr && kind->adopt_base) kind->adopt_base(*readout, spec);
  return found;
}

absl::StatusOr<ExportedBase> StoreAdmin::ReadBase(const std::string& tenant,
                                                  const std::string& store, bool for_create) {
  if (remote_bases_ != nullptr) {
    ASSIGN_OR_RETURN(std::optional<ExportedBase> remote,
                     remote_bases_->Read(tenant, store, for_create));
    if (remote.has_value()) return *std::move(remote);
  }
  // Here, a create's check and its add both hold the directory's base lock: no lease needed.
  return ReadBaseHere(tenant, store, /*for_create=*/false);
}

absl::StatusOr<ExportedBase> StoreAdmin::ReadBaseHere(const std::string& tenant,
                                                      const std::string& store,
                                                      bool for_create) const {
  ASSIGN_OR_RETURN(std::shared_ptr<Store> found, directory_->Find(tenant, store));
  ExportedBase out;
  out.spec = found->spec();
  absl::StatusOr<BaseReadout> readout = found->ExportBase();
  if (readout.ok()) {
    out.readout = *std::move(readout);
  } else {
    out.readout_status = readout.status();
  }
  if (for_create) directory_->LeaseBase(absl::StrCat(tenant, "/", store));
  return out;
}

absl::StatusOr<std::shared_ptr<const BaseReadout>> StoreAdmin::RefreshedBase(
    const adapt::v1::CompileRequest& request, const adapt::v1::StoreSpec& spec) {
  if (spec.base().empty()) {
    return absl::FailedPreconditionError(absl::StrCat("refresh_base: store ", request.tenant(), "/",
                                                      request.store(), " has no base"));
  }
  absl::StatusOr<std::pair<std::string, std::string>> base_name =
      ParseBaseName(request.tenant(), spec.base());
  absl::StatusOr<ExportedBase> base =
      base_name.ok() ? ReadBase(base_name->first, base_name->second, /*for_create=*/false)
                     : base_name.status();
  if (!base.ok()) {
    // A member that cannot be asked is worth a retry; a base that is gone is not.
    return absl::Status(absl::IsUnavailable(base.status()) ? absl::StatusCode::kUnavailable
                                                           : absl::StatusCode::kFailedPrecondition,
                        absl::StrCat("refresh_base: the base ", spec.base(),
                                     " cannot be read: ", base.status().message()));
  }
  if (!base->readout_status.ok()) {
    return absl::Status(base->readout_status.code(),
                        absl::StrCat("refresh_base: ", base->readout_status.message()));
  }
  return std::make_shared<const BaseReadout>(std::move(base->readout));
}

}  // namespace adaptd
