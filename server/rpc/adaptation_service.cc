#include "server/rpc/adaptation_service.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/auth/grpc_auth.h"
#include "server/core/list_page.h"
#include "server/core/names.h"
#include "server/rpc/predict_batch.h"
#include "server/rpc/status.h"
#include "server/rpc/stream_reactors.h"

namespace adaptd {
namespace {

using adapt::v1::CompileRequest;
using adapt::v1::CompileResponse;
using adapt::v1::CreateStoreRequest;
using adapt::v1::DeleteStoreRequest;
using adapt::v1::DeleteStoreResponse;
using adapt::v1::GetStoreRequest;
using adapt::v1::ListEncodersRequest;
using adapt::v1::ListEncodersResponse;
using adapt::v1::ListStoresRequest;
using adapt::v1::ListStoresResponse;
using adapt::v1::PingRequest;
using adapt::v1::PingResponse;
using adapt::v1::PredictRequest;
using adapt::v1::PredictResponse;
using adapt::v1::StoreInfo;

// The tenant a request names; requests that name none are checked for authentication only.
template <typename Request>
std::string TenantOf(const Request& request) {
  if constexpr (requires { request.tenant(); }) {
    return request.tenant();
  } else {
    return "";
  }
}

// A unary call refused before it ran (bad request, draining, authentication, authorization).
template <typename Call>
grpc::ServerUnaryReactor* Refuse(const ServiceContext& ctx, Call* call, const char* method,
                                 const grpc::Status& status) {
  ctx.Record(method, status, absl::Now());
  call->Reply(status);
  return call;
}

// A streaming call refused before it ran: finishes at once and deletes itself.
template <typename Reactor>
Reactor* RefuseStream(const ServiceContext& ctx, const char* method, const grpc::Status& status) {
  ctx.Record(method, status, absl::Now());
  return new RefusedReactor<Reactor>(status);
}

}  // namespace

template <typename Call>
grpc::Status AdaptationService::Open(grpc::CallbackServerContext* context, const Raw* request,
                                     Call* call) {
  if (grpc::Status parsed = ParseMessage(*request, &call->request); !parsed.ok()) return parsed;
  return ctx_.Admit(*context, TenantOf(call->request), &call->admitted);
}

template <typename Call>
bool AdaptationService::Forwarded(grpc::CallbackServerContext* context, const char* method,
                                  Access access, const Raw* request, Call* call) {
  const cluster::Member* owner = nullptr;
  if (grpc::Status routed =
          ctx_.Route(*context, call->request.tenant(), call->request.store(), access, &owner);
      !routed.ok()) {
    Refuse(ctx_, call, method, routed);
    return true;
  }
  if (owner == nullptr) return false;  // ours
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  ctx_.forwarder->Unary(*owner, method, context, *request, call->reply_buffer(),
                        [ctx, call, method, start](const grpc::Status& status) {
                          ctx.Record(method, status, start);
                          call->Finish(status);
                        });
  return true;
}

template <typename Call, typename Fn>
grpc::ServerUnaryReactor* AdaptationService::Unary(grpc::CallbackServerContext* context,
                                                   const char* method, Call* call, Fn fn) {
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  Task task = CallTask(context, TenantOf(call->request));
  task.run = [ctx, call, method, start, fn](const absl::Status& wanted) {
    const grpc::Status status = wanted.ok() ? ToGrpc(fn()) : ToGrpc(wanted);
    ctx.Record(method, status, start);
    call->Reply(status);
  };
  if (const absl::Status queued = ctx.scheduler->Submit(std::move(task)); !queued.ok()) {
    ctx.Record(method, ToGrpc(queued), start);
    call->Reply(ToGrpc(queued));
  }
  return call;
}

grpc::Status AdaptationService::CheckBase(const grpc::ServerContextBase& context,
                                          const CreateStoreRequest& request) const {
  const std::string& base = request.spec().base();
  if (base.empty()) return grpc::Status::OK;
  absl::StatusOr<std::pair<std::string, std::string>> name = ParseBaseName(request.tenant(), base);
  if (!name.ok()) return ToGrpc(name.status());
  // Reading a base is reading its tenant: the caller's token must reach it.
  if (name->first != request.tenant()) {
    if (grpc::Status denied = ctx_.Authorize(context, name->first); !denied.ok()) {
      return grpc::Status(denied.error_code(), absl::StrCat("spec.base: ", denied.error_message()));
    }
  }
  // In a cluster the base may live on another member: the engine reads it from there.
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* AdaptationService::CreateStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call = new UnaryCall<CreateStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "CreateStore", s);
  if (auto s = CheckBase(*context, call->request); !s.ok()) {
    return Refuse(ctx_, call, "CreateStore", s);
  }
  if (Forwarded(context, "CreateStore", Access::kCreate, request, call)) return call;
  const absl::Time deadline = CallDeadline(*context);
  return Unary(context, "CreateStore", call, [this, call, deadline]() -> absl::Status {
    const CreateStoreRequest& r = call->request;
    return ctx_.CreateCounted(r.tenant(), r.store(), deadline, [this, call] {
      auto info = ctx_.engine->CreateStore(call->request);
      if (!info.ok()) return info.status();
      call->response = *std::move(info);
      return absl::OkStatus();
    });
  });
}

grpc::ServerUnaryReactor* AdaptationService::GetStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<GetStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "GetStore", s);
  if (Forwarded(context, "GetStore", Access::kRead, request, call)) return call;
  return Unary(context, "GetStore", call, [this, call]() -> absl::Status {
    auto info = ctx_.engine->GetStore(call->request);
    if (!info.ok()) return info.status();
    call->response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::ListStores(grpc::CallbackServerContext* context,
                                                        const Raw* request, Raw* response) {
  auto* call = new UnaryCall<ListStoresRequest, ListStoresResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "ListStores", s);
  if (ctx_.handoff != nullptr && !Forwarder::IsForwarded(*context)) {
    return ClusterListStores(context, request, call);
  }
  return Unary(context, "ListStores", call, [this, call]() -> absl::Status {
    auto list = ctx_.engine->ListStores(call->request);
    if (!list.ok()) return list.status();
    call->response = *std::move(list);
    return absl::OkStatus();
  });
}

namespace {

// A cluster listing being gathered: this member's page and every other member's.
struct ListFanIn {
  absl::Mutex mu;
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  std::vector<ListStoresResponse> pages ABSL_GUARDED_BY(mu);
  grpc::Status local ABSL_GUARDED_BY(mu);                  // this member's error, which wins
  grpc::Status remote ABSL_GUARDED_BY(mu);                 // the first other member's error
  std::vector<std::unique_ptr<grpc::ByteBuffer>> replies;  // one per other member
};

// Merges the members' pages of one listing: stores in name order, at most `limit`, and a
// token resuming after the last one when any member has more.
grpc::Status MergePages(const ListStoresRequest& request, std::vector<ListStoresResponse>* pages,
                        ListStoresResponse* out) {
  absl::StatusOr<PageQuery> page = ParseListPage(request);
  if (!page.ok()) return ToGrpc(page.status());
  std::vector<StoreInfo> stores;
  bool more = false;
  for (ListStoresResponse& p : *pages) {
    more = more || !p.next_page_token().empty();
    for (StoreInfo& info : *p.mutable_stores()) stores.push_back(std::move(info));
  }
  std::sort(stores.begin(), stores.end(),
            [](const StoreInfo& a, const StoreInfo& b) { return a.store() < b.store(); });
  // A store whose hand-off ended but for its old copy's deletion is on two members for a
  // moment: listed once.
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
  return grpc::Status::OK;
}

}  // namespace

grpc::ServerUnaryReactor* AdaptationService::ClusterListStores(
    grpc::CallbackServerContext* context, const Raw* request,
    UnaryCall<ListStoresRequest, ListStoresResponse>* call) {
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  const std::vector<cluster::Member>& members = ctx_.forwarder->membership().members();
  auto fan = std::make_shared<ListFanIn>();
  {
    absl::MutexLock lock(&fan->mu);
    fan->pending = members.size();
  }
  // The last part in finishes the call.
  auto arrived = [ctx, call, start, fan] {
    std::vector<ListStoresResponse> pages;
    grpc::Status status;
    {
      absl::MutexLock lock(&fan->mu);
      if (--fan->pending > 0) return;
      pages = std::move(fan->pages);
      status = !fan->local.ok() ? fan->local : fan->remote;
    }
    if (status.ok()) status = MergePages(call->request, &pages, &call->response);
    ctx.Record("ListStores", status, start);
    call->Reply(status);
  };
  for (const cluster::Member& member : members) {
    if (member.name == ctx_.forwarder->membership().self().name) continue;
    fan->replies.push_back(std::make_unique<grpc::ByteBuffer>());
    grpc::ByteBuffer* reply = fan->replies.back().get();
    ctx_.forwarder->Unary(member, "ListStores", context, *request, reply,
                          [fan, reply, arrived, name = member.name](const grpc::Status& status) {
                            ListStoresResponse page;
                            grpc::Status got = status.ok() ? ParseMessage(*reply, &page) : status;
                            {
                              absl::MutexLock lock(&fan->mu);
                              if (got.ok()) {
                                fan->pages.push_back(std::move(page));
                              } else if (fan->remote.ok()) {
                                fan->remote = grpc::Status(got.error_code(),
                                                           absl::StrCat("ListStores: member ", name,
                                                                        ": ", got.error_message()));
                              }
                            }
                            arrived();
                          });
  }
  Task task = CallTask(context, call->request.tenant());
  task.run = [ctx, call, fan, arrived](const absl::Status& wanted) {
    absl::StatusOr<ListStoresResponse> list =
        wanted.ok() ? ctx.engine->ListStores(call->request) : wanted;
    {
      absl::MutexLock lock(&fan->mu);
      if (list.ok()) {
        fan->pages.push_back(*std::move(list));
      } else {
        fan->local = ToGrpc(list.status());
      }
    }
    arrived();
  };
  if (const absl::Status queued = ctx.scheduler->Submit(std::move(task)); !queued.ok()) {
    {
      absl::MutexLock lock(&fan->mu);
      fan->local = ToGrpc(queued);
    }
    arrived();
  }
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::DeleteStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call = new UnaryCall<DeleteStoreRequest, DeleteStoreResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "DeleteStore", s);
  if (Forwarded(context, "DeleteStore", Access::kDelete, request, call)) return call;
  return Unary(context, "DeleteStore", call,
               [this, call]() -> absl::Status { return ctx_.engine->DeleteStore(call->request); });
}

grpc::ServerUnaryReactor* AdaptationService::PinStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::PinStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "PinStore", s);
  if (Forwarded(context, "PinStore", Access::kWrite, request, call)) return call;
  return Unary(context, "PinStore", call, [this, call]() -> absl::Status {
    auto info = ctx_.engine->PinStore(call->request);
    if (!info.ok()) return info.status();
    call->response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::Predict(grpc::CallbackServerContext* context,
                                                     const Raw* request, Raw* response) {
  auto* call = new UnaryCall<PredictRequest, PredictResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "Predict", s);
  if (Forwarded(context, "Predict", Access::kRead, request, call)) return call;
  // Batchable: the scheduler hands it to RunPredictBatch with other predicts.
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  auto finish = [ctx, call, start](const grpc::Status& status) {
    ctx.Record("Predict", status, start);
    call->Reply(status);
  };
  Task task = CallTask(context, call->request.tenant());
  task.run = [finish](const absl::Status& dropped) { finish(ToGrpc(dropped)); };
  task.batch_item = std::make_unique<PredictItem>(
      &call->request, [finish, call](absl::StatusOr<PredictResponse> result) {
        if (result.ok()) call->response = *std::move(result);
        finish(ToGrpc(result.status()));
      });
  if (const absl::Status queued = ctx.scheduler->Submit(std::move(task)); !queued.ok()) {
    finish(ToGrpc(queued));
  }
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::Ping(grpc::CallbackServerContext* context,
                                                  const Raw* request, Raw* response) {
  // No work to queue: answered on the gRPC thread, the transport's baseline.
  auto* call = new UnaryCall<PingRequest, PingResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "Ping", s);
  ctx_.Record("Ping", grpc::Status::OK, absl::Now());
  call->Reply(grpc::Status::OK);
  return call;
}

grpc::Status AdaptationService::OpenAdmin(const grpc::ServerContextBase& context) const {
  if (ctx_.auth != nullptr && ctx_.auth->enabled()) {
    absl::StatusOr<const Principal*> principal =
        ctx_.auth->Authenticate(AuthorizationHeader(context));
    if (!principal.ok()) return ToGrpc(principal.status());
    if (!(*principal)->admin) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "cluster calls need an admin token (docs/SECURITY.md)");
    }
  }
  if (ctx_.handoff == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "this server is not a member of a cluster (it has no cluster config: "
                        "docs/CLUSTER.md)");
  }
  return grpc::Status::OK;
}

namespace {

// How long an admin call gives each other member to answer: its own deadline's remainder, at
// most 5 s.
absl::Duration MemberTimeout(const grpc::CallbackServerContext& context) {
  const absl::Duration left = absl::FromChrono(context.deadline()) - absl::Now();
  return std::max(absl::Milliseconds(100), std::min(absl::Seconds(5), left));
}

}  // namespace

grpc::ServerUnaryReactor* AdaptationService::ClusterStatus(grpc::CallbackServerContext* context,
                                                           const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::ClusterStatusRequest, adapt::v1::ClusterStatusResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "ClusterStatus", s);
  if (auto s = OpenAdmin(*context); !s.ok()) return Refuse(ctx_, call, "ClusterStatus", s);
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  if (call->request.local()) {
    *call->response.add_members() = ctx.handoff->LocalStatus(kMovingListed);
    ctx.Record("ClusterStatus", grpc::Status::OK, start);
    call->Reply(grpc::Status::OK);
    return call;
  }
  const absl::Duration timeout = MemberTimeout(*context);
  if (!ctx.handoff->RunAdmin([ctx, call, start, timeout] {
        call->response = ctx.handoff->Gather(timeout);
        ctx.Record("ClusterStatus", grpc::Status::OK, start);
        call->Reply(grpc::Status::OK);
      })) {
    return Refuse(ctx_, call, "ClusterStatus", ShuttingDown());
  }
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::DrainMember(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::DrainMemberRequest, adapt::v1::DrainMemberResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "DrainMember", s);
  if (auto s = OpenAdmin(*context); !s.ok()) return Refuse(ctx_, call, "DrainMember", s);
  if (call->request.member().empty()) {
    return Refuse(ctx_, call, "DrainMember",
                  grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "member: required"));
  }
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  if (call->request.local()) {
    const grpc::Status status =
        ToGrpc(ctx.handoff->SetDraining(call->request.member(), call->request.undo()));
    if (status.ok()) {
      *call->response.mutable_status()->add_members() = ctx.handoff->LocalStatus(1000);
    }
    ctx.Record("DrainMember", status, start);
    call->Reply(status);
    return call;
  }
  const absl::Duration timeout = MemberTimeout(*context);
  if (!ctx.handoff->RunAdmin([ctx, call, context, start, timeout] {
        const adapt::v1::DrainMemberRequest& r = call->request;
        grpc::Status status = ToGrpc(ctx.handoff->DrainEverywhere(r.member(), r.undo(), timeout));
        const absl::Time deadline = absl::FromChrono(context->deadline());
        while (status.ok()) {
          *call->response.mutable_status() = ctx.handoff->Gather(absl::Seconds(2));
          if (!r.wait()) break;
          const adapt::v1::ClusterStatusResponse& st = call->response.status();
          uint64_t left = 0;
          for (const adapt::v1::MemberStatus& m : st.members()) {
            if (m.name() == r.member()) left = m.stores();
          }
          if (st.settled() && (r.undo() || left == 0)) break;
          if (context->IsCancelled()) {
            status = grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled");
          } else if (ctx.handoff->stopping()) {
            status = ShuttingDown();
          } else if (absl::Now() + absl::Milliseconds(200) > deadline) {
            status = grpc::Status(
                grpc::StatusCode::DEADLINE_EXCEEDED,
                absl::StrCat("the drain of ", r.member(), " is recorded, but ",
                             st.moves_in_flight(), " move(s) are still in flight",
                             st.settled() ? "" : " or a member has not confirmed the list",
                             "; ask again or see ClusterStatus"));
          } else {
            absl::SleepFor(absl::Milliseconds(200));
          }
        }
        ctx.Record("DrainMember", status, start);
        call->Reply(status);
      })) {
    return Refuse(ctx_, call, "DrainMember", ShuttingDown());
  }
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::ClusterQuota(grpc::CallbackServerContext* context,
                                                          const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::ClusterQuotaRequest, adapt::v1::ClusterQuotaResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "ClusterQuota", s);
  if (auto s = OpenAdmin(*context); !s.ok()) return Refuse(ctx_, call, "ClusterQuota", s);
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  const absl::Time deadline = std::min(CallDeadline(*context), start + absl::Seconds(30));
  auto answer = [ctx, call, start, deadline] {
    const grpc::Status status =
        ToGrpc(ctx.quotas->Answer(call->request, deadline, &call->response));
    ctx.Record("ClusterQuota", status, start);
    call->Reply(status);
  };
  // A reservation asks every other member, and a release waits for a reservation of its
  // tenant in progress: on a thread of their own. The rest answers at once.
  const adapt::v1::ClusterQuotaRequest::Op op = call->request.op();
  if (op != adapt::v1::ClusterQuotaRequest::RESERVE &&
      op != adapt::v1::ClusterQuotaRequest::RELEASE) {
    answer();
  } else if (!ctx.handoff->RunAdmin(answer)) {
    return Refuse(ctx_, call, "ClusterQuota", ShuttingDown());
  }
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::ClusterBase(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::ClusterBaseRequest, adapt::v1::ClusterBaseResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "ClusterBase", s);
  if (auto s = OpenAdmin(*context); !s.ok()) return Refuse(ctx_, call, "ClusterBase", s);
  // Answered on this thread: a registry lookup (a READ of a cold store loads it), never a
  // call to another member.
  const absl::Time start = absl::Now();
  const grpc::Status status = ToGrpc(ctx_.bases->Answer(call->request, &call->response));
  ctx_.Record("ClusterBase", status, start);
  call->Reply(status);
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::ListEncoders(grpc::CallbackServerContext* context,
                                                          const Raw* request, Raw* response) {
  auto* call = new UnaryCall<ListEncodersRequest, ListEncodersResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) {
    return Refuse(ctx_, call, "ListEncoders", s);
  }
  return Unary(context, "ListEncoders", call, [this, call]() -> absl::Status {
    call->response = ctx_.engine->ListEncoders();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::Compile(grpc::CallbackServerContext* context,
                                                     const Raw* request, Raw* response) {
  auto* call = new UnaryCall<CompileRequest, CompileResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "Compile", s);
  if (Forwarded(context, "Compile", Access::kWrite, request, call)) return call;
  // The compile pool, not the scheduler, runs the work; the call finishes from there.
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  ctx.engine->Compile(call->request, [ctx, call, start](absl::StatusOr<CompileResponse> result) {
    grpc::Status status = ToGrpc(result.status());
    if (result.ok()) call->response = *std::move(result);
    ctx.Record("Compile", status, start);
    call->Reply(status);
  });
  return call;
}

grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::Adapt(
    grpc::CallbackServerContext* context, Raw* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  AdmittedCall admitted;
  if (auto s = ctx_.Admit(*context, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(ctx_, "Adapt", s);
  }
  return new WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>(
      ctx_, context, std::move(admitted), response, TxnKind::kAdapt, "Adapt");
}

grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::Forget(
    grpc::CallbackServerContext* context, Raw* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  AdmittedCall admitted;
  if (auto s = ctx_.Admit(*context, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(ctx_, "Forget", s);
  }
  return new WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>(
      ctx_, context, std::move(admitted), response, TxnKind::kForget, "Forget");
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* AdaptationService::PredictStream(
    grpc::CallbackServerContext* context) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  AdmittedCall admitted;
  if (auto s = ctx_.Admit(*context, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerBidiReactor<Raw, Raw>>(ctx_, "PredictStream", s);
  }
  return new PredictStreamReactor(ctx_, context, std::move(admitted));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* AdaptationService::ExportStore(
    grpc::CallbackServerContext* context, const Raw* request) {
  adapt::v1::ExportStoreRequest parsed;
  AdmittedCall admitted;
  grpc::Status s = ParseMessage(*request, &parsed);
  if (s.ok()) s = ctx_.Admit(*context, parsed.tenant(), &admitted);
  if (!s.ok()) return RefuseStream<grpc::ServerWriteReactor<Raw>>(ctx_, "ExportStore", s);
  const cluster::Member* owner = nullptr;
  if (s = ctx_.Route(*context, parsed.tenant(), parsed.store(), Access::kRead, &owner); !s.ok()) {
    return RefuseStream<grpc::ServerWriteReactor<Raw>>(ctx_, "ExportStore", s);
  }
  if (owner != nullptr) {
    return new ExportReactor(ctx_, context, std::move(admitted), *owner, *request);
  }
  return new ExportReactor(ctx_, context, std::move(admitted), std::move(parsed));
}

grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::ImportStore(
    grpc::CallbackServerContext* context, Raw* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  AdmittedCall admitted;
  if (auto s = ctx_.Admit(*context, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(ctx_, "ImportStore", s);
  }
  return new ImportReactor(ctx_, context, std::move(admitted), response);
}

}  // namespace adaptd
