#include "server/cluster/cluster_quotas.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/cluster/member_calls.h"

namespace adaptd {
namespace {

using adapt::v1::ClusterQuotaRequest;
using adapt::v1::ClusterQuotaResponse;

// How long one call to another member may take: what is left of `deadline`, at most `most`.
absl::Duration Within(absl::Time deadline, absl::Duration most) {
  return std::max(absl::Milliseconds(1), std::min(most, deadline - absl::Now()));
}

}  // namespace

ClusterQuotas::ClusterQuotas(HandOff* handoff, Engine* engine, const UsageExchange* usage)
    : handoff_(handoff), engine_(engine), usage_(usage) {}

absl::Status ClusterQuotas::Create(const std::string& tenant, const std::string& store,
                                   absl::Time deadline,
                                   const std::function<absl::Status()>& create) {
  if (engine_->quotas().LimitsOf(tenant).max_stores == 0) return create();
  ClusterQuotaRequest request;
  request.set_op(ClusterQuotaRequest::RESERVE);
  request.set_tenant(tenant);
  request.set_store(store);
  request.set_fingerprint(FingerprintHex(handoff_->membership()->fingerprint()));
  if (absl::Status reserved = AskHome(request, deadline); !reserved.ok()) return reserved;
  const absl::Status created = create();
  // The slot is freed off this call's path: the answer does not wait for the home. (Once
  // Stop began nothing runs; the slot then lapses.)
  request.set_op(ClusterQuotaRequest::RELEASE);
  handoff_->RunAdmin([this, request] { (void)AskHome(request, absl::Now() + absl::Seconds(5)); });
  return created;
}

absl::Status ClusterQuotas::AskHome(ClusterQuotaRequest request, absl::Time deadline) {
  const std::shared_ptr<const cluster::Membership> members = handoff_->membership();
  const cluster::Member& home = members->HomeOf(request.tenant());
  if (&home == &members->self()) {
    if (request.op() == ClusterQuotaRequest::RELEASE) {
      ReleaseHere(request.tenant(), request.store());
      return absl::OkStatus();
    }
    ClusterQuotaResponse response;
    return ReserveHere(request.tenant(), request.store(), request.fingerprint(), deadline,
                       &response);
  }
  ClusterQuotaResponse response;
  const absl::Status status = handoff_->calls()->ClusterQuota(home, request, &response,
                                                              Within(deadline, absl::Seconds(10)));
  if (status.ok()) return absl::OkStatus();
  if (!Unreachable(status)) return status;  // the home's own answer
  return absl::UnavailableError(absl::StrCat("quota max_stores: tenant '", request.tenant(),
                                             "' has its store count kept by member ", home.name,
                                             ", which did not answer (", CodeName(status.code()),
                                             ": ", status.message(), "); retry"));
}

absl::Mutex* ClusterQuotas::TenantLock(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<absl::Mutex>& m = tenant_locks_[tenant];
  if (m == nullptr) m = std::make_unique<absl::Mutex>();
  return m.get();
}

absl::Status ClusterQuotas::ReserveHere(const std::string& tenant, const std::string& store,
                                        const std::string& fingerprint, absl::Time deadline,
                                        ClusterQuotaResponse* response) {
  const std::shared_ptr<const cluster::Membership> members = handoff_->membership();
  const cluster::Member& home = members->HomeOf(tenant);
  if (&home != &members->self() ||
      (!fingerprint.empty() && fingerprint != FingerprintHex(members->fingerprint()))) {
    return absl::UnavailableError(absl::StrCat(
        "quota max_stores: member ", members->self().name, " routes by another member list than ",
        "the one asking (tenant '", tenant, "' has its home at ", home.name,
        " under it); the members' lists differ while they change: retry"));
  }
  const uint64_t limit = engine_->quotas().LimitsOf(tenant).max_stores;
  response->set_max_stores(limit);
  if (limit == 0) return absl::OkStatus();

  // One count of this tenant at a time, so each sees the slots the ones before granted.
  absl::MutexLock counting(TenantLock(tenant));
  std::set<std::string> names;
  for (std::string& name : engine_->TenantStoreNames(tenant)) names.insert(std::move(name));
  for (const cluster::Member& other : members->members()) {
    if (&other == &members->self()) continue;
    ClusterQuotaRequest ask;
    ask.set_op(ClusterQuotaRequest::STORE_NAMES);
    ask.set_tenant(tenant);
    ClusterQuotaResponse answer;
    const absl::Status status =
        handoff_->calls()->ClusterQuota(other, ask, &answer, Within(deadline, absl::Seconds(5)));
    if (!status.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "quota max_stores: tenant '", tenant, "' has stores counted on every member, and ",
          other.name, " did not answer (", CodeName(status.code()), ": ", status.message(),
          "); retry"));
    }
    for (const std::string& name : answer.stores()) names.insert(name);
  }

  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  std::map<std::string, Slot>& slots = slots_[tenant];
  for (auto it = slots.begin(); it != slots.end();) {
    if (it->second.expires <= now) {
      it = slots.erase(it);
    } else {
      names.insert(it->first);  // a create still running (a name held already counts once)
      ++it;
    }
  }
  const bool counted = names.count(store) > 0;  // exists or being created: its create decides
  if (!counted && names.size() >= limit) {
    if (slots.empty()) slots_.erase(tenant);
    return absl::ResourceExhaustedError(
        absl::StrCat("quota max_stores: tenant '", tenant, "' may hold at most ", limit,
                     " stores and holds ", names.size(), " across the cluster"));
  }
  Slot& slot = slots[store];
  ++slot.creates;
  slot.expires = now + kSlotLifetime;
  response->set_stores_counted(names.size() + (counted ? 0 : 1));
  return absl::OkStatus();
}

void ClusterQuotas::ReleaseHere(const std::string& tenant, const std::string& store) {
  // Not while a count of the tenant runs: it may have asked the store's member before the
  // store existed there, and must then still find its slot.
  absl::MutexLock counting(TenantLock(tenant));
  absl::MutexLock lock(&mu_);
  auto t = slots_.find(tenant);
  if (t == slots_.end()) return;
  auto s = t->second.find(store);
  if (s == t->second.end()) return;
  if (--s->second.creates <= 0) t->second.erase(s);
  if (t->second.empty()) slots_.erase(t);
}

absl::Status ClusterQuotas::Answer(const ClusterQuotaRequest& request, absl::Time deadline,
                                   ClusterQuotaResponse* response) {
  const bool named = !request.tenant().empty() && !request.store().empty();
  switch (request.op()) {
    case ClusterQuotaRequest::USAGE:
      *response = usage_->Usage();
      return absl::OkStatus();
    case ClusterQuotaRequest::STORE_NAMES:
      if (request.tenant().empty()) return absl::InvalidArgumentError("tenant: required");
      for (std::string& name : engine_->TenantStoreNames(request.tenant())) {
        response->add_stores(std::move(name));
      }
      return absl::OkStatus();
    case ClusterQuotaRequest::RESERVE:
      if (!named) return absl::InvalidArgumentError("tenant, store: required");
      return ReserveHere(request.tenant(), request.store(), request.fingerprint(), deadline,
                         response);
    case ClusterQuotaRequest::RELEASE:
      if (!named) return absl::InvalidArgumentError("tenant, store: required");
      ReleaseHere(request.tenant(), request.store());
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("op: must be USAGE, STORE_NAMES, RESERVE or RELEASE, got ", request.op()));
  }
}

}  // namespace adaptd
