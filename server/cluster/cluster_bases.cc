#include "server/cluster/cluster_bases.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/cluster/member_calls.h"

namespace adaptd {
namespace {

using adapt::v1::ClusterBaseRequest;
using adapt::v1::ClusterBaseResponse;

// The most dependants a DEPENDANTS answer names.
constexpr size_t kNamed = 10;

}  // namespace

absl::StatusOr<std::optional<ExportedBase>> ClusterBases::Read(const std::string& tenant,
                                                               const std::string& store,
                                                               bool for_create) {
  ASSIGN_OR_RETURN(const cluster::Member* holder, locator_->HolderOf(tenant, store));
  if (holder == nullptr) return std::nullopt;  // read it here
  const cluster::Member& owner = *holder;
  ClusterBaseRequest request;
  request.set_op(ClusterBaseRequest::READ);
  request.set_tenant(tenant);
  request.set_store(store);
  request.set_for_create(for_create);
  ClusterBaseResponse response;
  const absl::Status status = calls_->ClusterBase(owner, request, &response, absl::Seconds(30));
  if (!status.ok()) {
    if (Unreachable(status)) {
      return absl::UnavailableError(absl::StrCat(
          "spec.base: the base ", tenant, "/", store, " lives on member ", owner.name,
          ", which did not answer (", CodeName(status.code()), ": ", status.message(), "); retry"));
    }
    return status;
  }
  ExportedBase base;
  base.remote = true;
  base.spec = std::move(*response.mutable_spec());
  if (response.readout_code() != 0) {
    base.readout_status = absl::Status(static_cast<absl::StatusCode>(response.readout_code()),
                                       response.readout_error());
    return base;
  }
  BaseReadout& r = base.readout;
  r.version = response.version();
  r.dim = response.dim();
  r.columns = response.columns();
  r.labels = response.labels();
  r.label_names.assign(response.label_names().begin(), response.label_names().end());
  r.s.assign(response.s().begin(), response.s().end());
  r.key_norm = response.key_norm();
  if (r.dim <= 0 || r.columns < 0 || r.s.size() != static_cast<size_t>(r.dim * r.columns) ||
      (r.labels && r.label_names.size() != static_cast<size_t>(r.columns))) {
    return absl::InternalError(absl::StrCat("spec.base: member ", owner.name,
                                            " sent a read-out of the base ", tenant, "/", store,
                                            " whose sizes disagree"));
  }
  return base;
}

absl::Status ClusterBases::CheckNoDependantsElsewhere(const std::string& name) {
  absl::StatusOr<std::pair<std::string, std::string>> parts = ParseBaseName("", name);
  if (!parts.ok()) return parts.status();
  for (const cluster::Member* member : locator_->Others()) {
    const cluster::Member& other = *member;
    ClusterBaseRequest request;
    request.set_op(ClusterBaseRequest::DEPENDANTS);
    request.set_tenant(parts->first);
    request.set_store(parts->second);
    ClusterBaseResponse response;
    const absl::Status status = calls_->ClusterBase(other, request, &response, absl::Seconds(2));
    if (!status.ok()) {
      // A member that is down does not hold up deletes everywhere: stores made from this one
      // there keep their copy of it (only their refresh_base will find it gone).
      std::fprintf(stderr,
                   "adaptd: deleting %s without asking member %s for stores made from it (%s: "
                   "%s)\n",
                   name.c_str(), other.name.c_str(), CodeName(status.code()).c_str(),
                   std::string(status.message()).c_str());
      continue;
    }
    if (response.dependants_count() > 0) {
      const size_t named = static_cast<size_t>(response.dependants_size());
      return absl::FailedPreconditionError(absl::StrCat(
          "store ", name, " is the base of ", response.dependants_count(), " store(s) on member ",
          other.name, " (", absl::StrJoin(response.dependants(), ", "),
          response.dependants_count() > named ? ", ..." : "", "): delete those first"));
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterBases::Answer(const ClusterBaseRequest& request,
                                  ClusterBaseResponse* response) {
  if (request.tenant().empty() || request.store().empty()) {
    return absl::InvalidArgumentError("tenant, store: required");
  }
  switch (request.op()) {
    case ClusterBaseRequest::READ: {
      absl::StatusOr<ExportedBase> base =
          engine_->ReadBaseHere(request.tenant(), request.store(), request.for_create());
      if (absl::IsNotFound(base.status())) {
        RETURN_IF_ERROR(locator_->Absent(request.tenant(), request.store()));
      }
      if (!base.ok()) return base.status();
      *response->mutable_spec() = base->spec;
      if (!base->readout_status.ok()) {
        response->set_readout_code(static_cast<int32_t>(base->readout_status.code()));
        response->set_readout_error(std::string(base->readout_status.message()));
        return absl::OkStatus();
      }
      const BaseReadout& r = base->readout;
      response->set_version(r.version);
      response->set_dim(static_cast<uint32_t>(r.dim));
      response->set_columns(static_cast<uint32_t>(r.columns));
      response->set_labels(r.labels);
      for (const std::string& label : r.label_names) response->add_label_names(label);
      response->mutable_s()->Add(r.s.begin(), r.s.end());
      response->set_key_norm(r.key_norm);
      return absl::OkStatus();
    }
    case ClusterBaseRequest::DEPENDANTS: {
      auto [names, count] =
          engine_->DependantsHere(absl::StrCat(request.tenant(), "/", request.store()), kNamed);
      for (std::string& name : names) response->add_dependants(std::move(name));
      response->set_dependants_count(count);
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("op: must be READ or DEPENDANTS, got ", request.op()));
  }
}

}  // namespace adaptd
