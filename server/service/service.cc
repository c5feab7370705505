#include "server/service/service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/names.h"
#include "server/base/status_macros.h"
#include "server/base/status_name.h"
#include "server/cluster/etcd_cluster.h"
#include "server/core/list_page.h"
#include "server/service/predict_batch.h"

namespace adaptd {
namespace {

absl::Status ShuttingDown() { return absl::UnavailableError("the server is shutting down"); }

// The answer to ClusterQuota: the members exchange usage (USAGE); store counts are exact
// through etcd, so no member asks another for them.
absl::Status AnswerUsage(const EtcdCluster& cluster, const adapt::v1::ClusterQuotaRequest& request,
                         adapt::v1::ClusterQuotaResponse* response) {
  if (request.op() != adapt::v1::ClusterQuotaRequest::USAGE) {
    return absl::UnimplementedError(absl::StrCat(
        "ClusterQuota ", adapt::v1::ClusterQuotaRequest::Op_Name(request.op()),
        ": store counts are exact through etcd in a cluster (docs/CLUSTER_ETCD.md, \"Quotas and "
        "base stores\"), and no member asks another for them: only USAGE is answered"));
  }
  if (cluster.usage() == nullptr) {
    return absl::UnavailableError("this member is starting: it has no usage yet; retry");
  }
  *response = cluster.usage()->Usage();
  return absl::OkStatus();
}

// How long an admin call gives each other member to answer: its own deadline's remainder, at
// most 5 s.
absl::Duration MemberTimeout(const CallInfo& call) {
  const absl::Duration left = call.deadline - absl::Now();
  return std::max(absl::Milliseconds(100), std::min(absl::Seconds(5), left));
}

void Fill(const adapt::v1::AdaptResponse& result, adapt::v1::AdaptResponse* response) {
  *response = result;
}

void Fill(const adapt::v1::AdaptResponse& result, adapt::v1::ForgetResponse* response) {
  response->set_forgotten(result.accepted());
  response->set_version(result.version());
}

absl::Status Stage(WriteSession& session, const adapt::v1::AdaptRequest& request) {
  return session.Add(request.tenant(), request.store(), request.examples(), request.sequence(),
                     request.passes(), request.restart_sequence(), request.sequence_ids());
}

absl::Status Stage(WriteSession& session, const adapt::v1::ForgetRequest& request) {
  return session.Add(request.tenant(), request.store(), request.examples());
}

// Moves an engine's answer into the call's response.
template <typename T>
absl::Status Into(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return result.status();
  *response = *std::move(result);
  return absl::OkStatus();
}

}  // namespace

absl::Status CallStillWanted(const CallInfo& call) {
  if (call.deadline < absl::Now()) {
    return absl::DeadlineExceededError("the deadline passed before the request ran");
  }
  if (call.cancelled && call.cancelled()) return absl::CancelledError("the call was cancelled");
  return absl::OkStatus();
}

namespace {

// A write's task in its store's lane: `commit` runs only if the task ran and the call is still
// wanted; `done` hears its status, or why it did not run.
std::function<void(const absl::Status&)> LaneCommit(CallInfo call,
                                                    std::function<absl::Status()> commit,
                                                    Service::Done done) {
  return [call = std::move(call), commit = std::move(commit),
          done = std::move(done)](const absl::Status& wanted) {
    if (!wanted.ok()) {
      done(wanted);
      return;
    }
    if (absl::Status still = CallStillWanted(call); !still.ok()) {
      done(still);
      return;
    }
    done(commit());
  };
}

}  // namespace

// --- Admission ------------------------------------------------------------------------------

absl::Status Service::Admit(const CallInfo& call, absl::string_view tenant,
                            AdmittedCall* admitted) const {
  AdmittedCall entered;
  if (o_.gate != nullptr) {
    if (!o_.gate->Enter()) return ShuttingDown();
    entered = AdmittedCall(o_.gate);
  }
  RETURN_IF_ERROR(Authorize(call, tenant));  // releases the place
  *admitted = std::move(entered);
  return absl::OkStatus();
}

absl::Status Service::Authorize(const CallInfo& call, absl::string_view tenant) const {
  if (o_.auth == nullptr || !o_.auth->enabled()) return absl::OkStatus();
  absl::StatusOr<const Principal*> principal = o_.auth->Authenticate(call.authorization);
  if (!principal.ok()) return principal.status();
  if (tenant.empty()) return absl::OkStatus();
  return TokenAuthorizer::Check(**principal, tenant);
}

absl::Status Service::AdmitAdmin(const CallInfo& call) const {
  if (o_.auth != nullptr && o_.auth->enabled()) {
    absl::StatusOr<const Principal*> principal = o_.auth->Authenticate(call.authorization);
    if (!principal.ok()) return principal.status();
    if (!(*principal)->admin) {
      return absl::PermissionDeniedError("cluster calls need an admin token (docs/SECURITY.md)");
    }
  }
  if (o_.etcd_cluster == nullptr) {
    return absl::FailedPreconditionError(
        "this server is not a member of a cluster (it has no cluster config: docs/CLUSTER.md)");
  }
  return absl::OkStatus();
}

absl::Status Service::CheckBase(const CallInfo& call,
                                const adapt::v1::CreateStoreRequest& request) const {
  const std::string& base = request.spec().base();
  if (base.empty()) return absl::OkStatus();
  absl::StatusOr<std::pair<std::string, std::string>> name = ParseBaseName(request.tenant(), base);
  if (!name.ok()) return name.status();
  // Reading a base is reading its tenant: the caller's token must reach it.
  if (name->first != request.tenant()) {
    if (absl::Status denied = Authorize(call, name->first); !denied.ok()) {
      return absl::Status(denied.code(), absl::StrCat("spec.base: ", denied.message()));
    }
  }
  // In a cluster the base may live on another member: the engine reads it from there.
  return absl::OkStatus();
}

// --- Routing --------------------------------------------------------------------------------

absl::StatusOr<const cluster::Member*> Service::Route(const CallInfo& call,
                                                      const std::string& tenant,
                                                      const std::string& store,
                                                      Access /*access*/) const {
  if (o_.etcd_cluster == nullptr) return nullptr;
  return o_.etcd_cluster->Route(call.origin, tenant, store);
}

std::string Service::HolderHint(const std::string& tenant, const std::string& store,
                                const cluster::Member& holder) const {
  if (o_.etcd_cluster == nullptr) return "";
  return o_.etcd_cluster->HolderHint(tenant, store, holder);
}

std::optional<std::vector<const cluster::Member*>> Service::ListPeers(const CallInfo& call) const {
  if (call.origin.forwarded) return std::nullopt;
  if (o_.etcd_cluster == nullptr) return std::nullopt;
  return o_.etcd_cluster->Peers();
}

absl::Status Service::MergeListPages(const adapt::v1::ListStoresRequest& request,
                                     std::vector<adapt::v1::ListStoresResponse>* pages,
                                     adapt::v1::ListStoresResponse* out) {
  using adapt::v1::StoreInfo;
  absl::StatusOr<PageQuery> page = ParseListPage(request);
  if (!page.ok()) return page.status();
  std::vector<StoreInfo> stores;
  bool more = false;
  for (adapt::v1::ListStoresResponse& p : *pages) {
    more = more || !p.next_page_token().empty();
    for (StoreInfo& info : *p.mutable_stores()) stores.push_back(std::move(info));
  }
  std::sort(stores.begin(), stores.end(),
            [](const StoreInfo& a, const StoreInfo& b) { return a.store() < b.store(); });
  // A store whose shard changed holder while the pages were read may be on two pages: listed
  // once.
  stores.erase(
      std::unique(stores.begin(), stores.end(),
                  [](const StoreInfo& a, const StoreInfo& b) { return a.store() == b.store(); }),
      stores.end());
  if (stores.size() > page->limit) {
    stores.resize(page->limit);
    more = true;
  }
  if (more && !stores.empty()) {
    out->set_next_page_token(ListPageToken(request.tenant(), stores.back().store()));
  }
  for (StoreInfo& info : stores) *out->add_stores() = std::move(info);
  return absl::OkStatus();
}

// --- Scheduling -----------------------------------------------------------------------------

Task Service::CallTask(const CallInfo& call, const std::string& tenant) {
  Task task;
  task.tenant = tenant;
  task.deadline = call.deadline;
  task.cancelled = call.cancelled;
  return task;
}

void Service::Queue(const CallInfo& call, const std::string& tenant,
                    std::function<absl::Status()> fn, Done done) const {
  Task task = CallTask(call, tenant);
  task.run = [fn = std::move(fn), done](const absl::Status& wanted) {
    done(wanted.ok() ? fn() : wanted);
  };
  if (absl::Status queued = o_.scheduler->Submit(std::move(task)); !queued.ok()) done(queued);
}

void Service::Record(const char* method, const absl::Status& status, absl::Time start,
                     Transport transport) const {
  if (o_.metrics == nullptr) return;
  o_.metrics->RecordRequest(method, CodeName(status.code()),
                            transport == Transport::kHttp ? "http" : "grpc",
                            absl::ToDoubleSeconds(absl::Now() - start));
}

// --- Unary calls ----------------------------------------------------------------------------

void Service::CreateStore(const CallInfo& call, const adapt::v1::CreateStoreRequest& request,
                          adapt::v1::StoreInfo* response, Done done) {
  Queue(
      call, request.tenant(),
      [this, &request, response] { return Into(o_.engine->CreateStore(request), response); },
      std::move(done));
}

void Service::GetStore(const CallInfo& call, const adapt::v1::GetStoreRequest& request,
                       adapt::v1::StoreInfo* response, Done done) {
  Queue(
      call, request.tenant(),
      [this, &request, response] { return Into(o_.engine->GetStore(request), response); },
      std::move(done));
}

void Service::ListStores(const CallInfo& call, const adapt::v1::ListStoresRequest& request,
                         adapt::v1::ListStoresResponse* response, Done done) {
  Queue(
      call, request.tenant(),
      [this, &request, response] { return Into(o_.engine->ListStores(request), response); },
      std::move(done));
}

void Service::DeleteStore(const CallInfo& call, const adapt::v1::DeleteStoreRequest& request,
                          adapt::v1::DeleteStoreResponse* /*response*/, Done done) {
  Queue(
      call, request.tenant(), [this, &request] { return o_.engine->DeleteStore(request); },
      std::move(done));
}

void Service::PinStore(const CallInfo& call, const adapt::v1::PinStoreRequest& request,
                       adapt::v1::StoreInfo* response, Done done) {
  Queue(
      call, request.tenant(),
      [this, &request, response] { return Into(o_.engine->PinStore(request), response); },
      std::move(done));
}

void Service::ListEncoders(const CallInfo& call, const adapt::v1::ListEncodersRequest& /*request*/,
                           adapt::v1::ListEncodersResponse* response, Done done) {
  Queue(
      call, "",
      [this, response] {
        *response = o_.engine->ListEncoders();
        return absl::OkStatus();
      },
      std::move(done));
}

void Service::Predict(const CallInfo& call, const adapt::v1::PredictRequest& request,
                      adapt::v1::PredictResponse* response, Done done) {
  Task task = CallTask(call, request.tenant());
  task.run = [done](const absl::Status& dropped) { done(dropped); };
  task.batch_item = std::make_unique<PredictItem>(
      &request, [response, done](absl::StatusOr<adapt::v1::PredictResponse> result) {
        if (result.ok()) *response = *std::move(result);
        done(result.status());
      });
  if (absl::Status queued = o_.scheduler->Submit(std::move(task)); !queued.ok()) done(queued);
}

void Service::Feedback(const CallInfo& call, const adapt::v1::FeedbackRequest& request,
                       adapt::v1::FeedbackResponse* response, Done done) {
  // In the store's lane: feedback and commits to one store apply in arrival order.
  Task task = CallTask(call, request.tenant());
  task.lane = absl::StrCat(request.tenant(), "/", request.store());
  task.run = LaneCommit(
      call, [this, &request, response] { return Into(o_.engine->Feedback(request), response); },
      done);
  if (absl::Status queued = o_.scheduler->Submit(std::move(task)); !queued.ok()) done(queued);
}

void Service::Compile(const CallInfo& /*call*/, const adapt::v1::CompileRequest& request,
                      adapt::v1::CompileResponse* response, Done done) {
  // The compile pool, not the scheduler, runs the work; the call finishes from there.
  o_.engine->Compile(request, [response, done](absl::StatusOr<adapt::v1::CompileResponse> result) {
    if (result.ok()) *response = *std::move(result);
    done(result.status());
  });
}

void Service::Export(const CallInfo& call, const adapt::v1::ExportStoreRequest& request,
                     std::string* file, Done done) {
  Queue(
      call, request.tenant(),
      [this, request, file] { return Into(o_.engine->Export(request), file); }, std::move(done));
}

std::unique_ptr<Service::Import> Service::StartImport(const CallInfo& call) const {
  return std::unique_ptr<Import>(new Import(this, call));
}

absl::Status Service::Import::Add(const adapt::v1::StoreChunk& chunk) {
  if (!named()) {
    tenant_ = chunk.tenant();
    store_ = chunk.store();
    applied_ids_.assign(chunk.applied_ids().begin(), chunk.applied_ids().end());
  } else if ((!chunk.tenant().empty() && chunk.tenant() != tenant_) ||
             (!chunk.store().empty() && chunk.store() != store_)) {
    return absl::InvalidArgumentError("store: later chunks must name the same store as the first");
  }
  const size_t limit = service_->o_.max_import_bytes;
  if (file_.size() + chunk.data().size() > limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat("data: the snapshot exceeds the import limit of ", limit, " bytes"));
  }
  file_.append(chunk.data());
  return absl::OkStatus();
}

void Service::Import::Commit(adapt::v1::StoreInfo* response, Done done) {
  const Service* service = service_;
  Task task = CallTask(call_, tenant_);
  task.lane = absl::StrCat(tenant_, "/", store_);
  task.run = [this, service, response, done](const absl::Status& wanted) {
    if (!wanted.ok()) {
      done(wanted);
      return;
    }
    done(Into(service->o_.engine->Import(tenant_, store_, file_, applied_ids_), response));
  };
  if (absl::Status queued = service->o_.scheduler->Submit(std::move(task)); !queued.ok()) {
    done(queued);
  }
}

// --- Adapt and Forget -----------------------------------------------------------------------

template <typename Request, typename Response>
Service::Write<Request, Response>::Write(const Service* service, CallInfo call, TxnKind kind)
    : service_(service), call_(std::move(call)), session_(service->o_.engine->StartWrite(kind)) {}

template <typename Request, typename Response>
void Service::Write<Request, Response>::Stage(const Request& request, Done done) {
  if (tenant_.empty() && !request.tenant().empty() && !request.store().empty()) {
    // The first message that names a store picks the stream's queue and the store's lane.
    tenant_ = request.tenant();
    lane_ = absl::StrCat(request.tenant(), "/", request.store());
  }
  Task task = CallTask(call_, tenant_);
  task.run = [this, &request, done](const absl::Status& wanted) {
    done(wanted.ok() ? adaptd::Stage(*session_, request) : wanted);
  };
  if (absl::Status queued = service_->o_.scheduler->Submit(std::move(task)); !queued.ok()) {
    done(queued);
  }
}

template <typename Request, typename Response>
void Service::Write<Request, Response>::Commit(Response* response, Done done) {
  // Commits run in the store's lane: commits to one store apply in arrival order.
  Task task = CallTask(call_, tenant_);
  task.lane = lane_;
  task.run = LaneCommit(
      call_,
      [this, response] {
        absl::StatusOr<adapt::v1::AdaptResponse> result = session_->Finish();
        if (result.ok()) Fill(*result, response);
        return result.status();
      },
      done);
  if (absl::Status queued = service_->o_.scheduler->Submit(std::move(task)); !queued.ok()) {
    done(queued);
  }
}

template class Service::Write<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>;
template class Service::Write<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>;

std::unique_ptr<Service::AdaptWrite> Service::StartAdapt(const CallInfo& call) const {
  return std::unique_ptr<AdaptWrite>(new AdaptWrite(this, call, TxnKind::kAdapt));
}

std::unique_ptr<Service::ForgetWrite> Service::StartForget(const CallInfo& call) const {
  return std::unique_ptr<ForgetWrite>(new ForgetWrite(this, call, TxnKind::kForget));
}

void Service::ClusterRoutes(const CallInfo& /*call*/,
                            const adapt::v1::ClusterRoutesRequest& /*request*/,
                            adapt::v1::ClusterRoutesResponse* response, Done done) {
  if (o_.etcd_cluster == nullptr) {
    done(absl::UnimplementedError(
        "ClusterRoutes: this server is not a member of a cluster on etcd (a single server: call "
        "it for every store; docs/CLUSTER_ETCD.md)"));
    return;
  }
  absl::StatusOr<adapt::v1::ClusterRoutesResponse> routes = o_.etcd_cluster->Routes();
  if (!routes.ok()) {
    done(routes.status());
    return;
  }
  *response = *std::move(routes);
  done(absl::OkStatus());
}

// --- The cluster's calls --------------------------------------------------------------------

void Service::ClusterStatus(const CallInfo& call, const adapt::v1::ClusterStatusRequest& request,
                            adapt::v1::ClusterStatusResponse* response, Done done) {
  EtcdCluster* cluster = o_.etcd_cluster;
  if (request.local()) {
    *response->add_members() = cluster->LocalStatus();
    done(absl::OkStatus());
    return;
  }
  const absl::Time deadline = absl::Now() + MemberTimeout(call);
  std::optional<std::string> authorization;
  if (call.authorization.has_value()) authorization = std::string(*call.authorization);
  if (!cluster->RunAdmin([cluster, response, deadline, authorization, done] {
        *response = cluster->Gather(deadline, authorization);
        done(absl::OkStatus());
      })) {
    done(ShuttingDown());
  }
}

// A drain: the member's record set DRAINING (READY with undo); with `wait`, answered once it
// holds no shard (every one released to the other members).
void Service::DrainMember(const CallInfo& call, const adapt::v1::DrainMemberRequest& request,
                          adapt::v1::DrainMemberResponse* response, Done done) {
  if (request.member().empty()) {
    done(absl::InvalidArgumentError("member: required"));
    return;
  }
  EtcdCluster* cluster = o_.etcd_cluster;
  if (absl::Status set = cluster->Drain(request.member(), request.undo()); !set.ok()) {
    done(set);
    return;
  }
  std::optional<std::string> authorization;
  if (call.authorization.has_value()) authorization = std::string(*call.authorization);
  if (!cluster->RunAdmin([cluster, &request, response, call, authorization, done] {
        absl::Status status;
        while (true) {
          const int held = cluster->ShardsHeldBy(request.member());
          if (!request.wait() || request.undo() || held == 0) break;
          if (call.cancelled && call.cancelled()) {
            status = absl::CancelledError("the call was cancelled");
          } else if (cluster->stopping()) {
            status = ShuttingDown();
          } else if (absl::Now() + absl::Milliseconds(200) > call.deadline) {
            status = absl::DeadlineExceededError(
                absl::StrCat("the drain of ", request.member(), " is recorded, but it still holds ",
                             held, " shard(s); ask again or see ClusterStatus"));
          } else {
            absl::SleepFor(absl::Milliseconds(200));
            continue;
          }
          break;
        }
        if (status.ok()) {
          *response->mutable_status() =
              cluster->Gather(absl::Now() + absl::Seconds(2), authorization);
        }
        done(status);
      })) {
    done(ShuttingDown());
  }
}

void Service::ClusterQuota(const CallInfo& /*call*/, const adapt::v1::ClusterQuotaRequest& request,
                           adapt::v1::ClusterQuotaResponse* response, Done done) {
  done(AnswerUsage(*o_.etcd_cluster, request, response));
}

void Service::ClusterBase(const CallInfo& /*call*/, const adapt::v1::ClusterBaseRequest& request,
                          adapt::v1::ClusterBaseResponse* response, Done done) {
  // Answered on the caller's thread: a registry lookup (a READ of a cold store loads it),
  // never a call to another member.
  ClusterBases* bases = o_.etcd_cluster->bases();
  if (bases == nullptr) {
    done(absl::UnavailableError("this member is starting: it holds no store yet; retry"));
    return;
  }
  done(bases->Answer(request, response));
}

}  // namespace adaptd
