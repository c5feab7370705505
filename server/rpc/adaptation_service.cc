#include "server/rpc/adaptation_service.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/rpc/stream_reactors.h"

namespace adaptd {
namespace {

using adapt::v1::ListStoresRequest;
using adapt::v1::ListStoresResponse;

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
grpc::ServerUnaryReactor* Refuse(const FrontEnd& fe, Call* call, const char* method,
                                 const grpc::Status& status) {
  fe.Record(method, status, absl::Now());
  call->Reply(status);
  return call;
}

// A streaming call refused before it ran: finishes at once and deletes itself.
template <typename Reactor>
Reactor* RefuseStream(const FrontEnd& fe, const char* method, const grpc::Status& status) {
  fe.Record(method, status, absl::Now());
  return new RefusedReactor<Reactor>(status);
}

}  // namespace

template <typename Call>
grpc::Status AdaptationService::Open(grpc::CallbackServerContext* context, const Raw* request,
                                     Call* call, CallInfo* info) {
  if (grpc::Status parsed = ParseMessage(*request, &call->request); !parsed.ok()) return parsed;
  *info = GrpcCallInfo(context);
  return ToGrpc(fe_.service->Admit(*info, TenantOf(call->request), &call->admitted));
}

template <typename Call>
bool AdaptationService::RoutedElsewhere(grpc::CallbackServerContext* context, const char* method,
                                        Access access, const CallInfo& info, const Raw* request,
                                        Call* call) {
  const FrontEnd fe = fe_;
  return RoutedAway(
      fe_, context, info, call->request.tenant(), call->request.store(), access,
      [&](const grpc::Status& refused) { Refuse(fe_, call, method, refused); },
      [&](const RelayTarget& to) {
        const absl::Time start = absl::Now();
        to.Unary(method, context, *request, call->reply_buffer(),
                 [fe, call, method, start](const grpc::Status& status) {
                   fe.Record(method, status, start);
                   call->Finish(status);
                 });
      });
}

template <typename Call, typename ServeFn>
grpc::ServerUnaryReactor* AdaptationService::Serve(const char* method, Call* call, ServeFn serve) {
  const absl::Time start = absl::Now();
  serve(call->request, &call->response, [fe = fe_, call, method, start](const absl::Status& s) {
    const grpc::Status status = ToGrpc(s);
    fe.Record(method, status, start);
    call->Reply(status);
  });
  return call;
}

template <auto Method, typename Call>
grpc::ServerUnaryReactor* AdaptationService::Admin(grpc::CallbackServerContext* context,
                                                   const char* method, const Raw* request,
                                                   Call* call) {
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) return Refuse(fe_, call, method, s);
  if (auto s = fe_.service->AdmitAdmin(info); !s.ok()) {
    return Refuse(fe_, call, method, ToGrpc(s));
  }
  return Serve(method, call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    (fe_.service->*Method)(info, req, resp, std::move(done));
  });
}

template <auto Method, typename Call>
grpc::ServerUnaryReactor* AdaptationService::StoreCall(grpc::CallbackServerContext* context,
                                                       const char* method, Access access,
                                                       const Raw* request, Call* call) {
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) return Refuse(fe_, call, method, s);
  if (RoutedElsewhere(context, method, access, info, request, call)) return call;
  return Serve(method, call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    (fe_.service->*Method)(info, req, resp, std::move(done));
  });
}

grpc::ServerUnaryReactor* AdaptationService::GetStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::GetStoreRequest, adapt::v1::StoreInfo>(response);
  return StoreCall<&adaptd::Service::GetStore>(context, "GetStore", Access::kRead, request, call);
}

grpc::ServerUnaryReactor* AdaptationService::DeleteStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::DeleteStoreRequest, adapt::v1::DeleteStoreResponse>(response);
  return StoreCall<&adaptd::Service::DeleteStore>(context, "DeleteStore", Access::kDelete, request,
                                                  call);
}

grpc::ServerUnaryReactor* AdaptationService::PinStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::PinStoreRequest, adapt::v1::StoreInfo>(response);
  return StoreCall<&adaptd::Service::PinStore>(context, "PinStore", Access::kWrite, request, call);
}

grpc::ServerUnaryReactor* AdaptationService::Predict(grpc::CallbackServerContext* context,
                                                     const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::PredictRequest, adapt::v1::PredictResponse>(response);
  return StoreCall<&adaptd::Service::Predict>(context, "Predict", Access::kRead, request, call);
}

grpc::ServerUnaryReactor* AdaptationService::Feedback(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::FeedbackRequest, adapt::v1::FeedbackResponse>(response);
  return StoreCall<&adaptd::Service::Feedback>(context, "Feedback", Access::kWrite, request, call);
}

grpc::ServerUnaryReactor* AdaptationService::Compile(grpc::CallbackServerContext* context,
                                                     const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::CompileRequest, adapt::v1::CompileResponse>(response);
  return StoreCall<&adaptd::Service::Compile>(context, "Compile", Access::kWrite, request, call);
}

grpc::ServerUnaryReactor* AdaptationService::CreateStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::CreateStoreRequest, adapt::v1::StoreInfo>(response);
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) {
    return Refuse(fe_, call, "CreateStore", s);
  }
  if (auto s = fe_.service->CheckBase(info, call->request); !s.ok()) {
    return Refuse(fe_, call, "CreateStore", ToGrpc(s));
  }
  if (RoutedElsewhere(context, "CreateStore", Access::kCreate, info, request, call)) return call;
  return Serve("CreateStore", call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    fe_.service->CreateStore(info, req, resp, std::move(done));
  });
}

grpc::ServerUnaryReactor* AdaptationService::ListStores(grpc::CallbackServerContext* context,
                                                        const Raw* request, Raw* response) {
  auto* call = new UnaryCall<ListStoresRequest, ListStoresResponse>(response);
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) {
    return Refuse(fe_, call, "ListStores", s);
  }
  if (std::optional<std::vector<RelayTarget>> others = ListTargets(fe_, info)) {
    return GatherListStores(context, request, info, *others, call);
  }
  return Serve("ListStores", call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    fe_.service->ListStores(info, req, resp, std::move(done));
  });
}

namespace {

// A listing being gathered: the page served here and the page of every relay target.
struct ListFanIn {
  absl::Mutex mu;
  size_t pending ABSL_GUARDED_BY(mu) = 0;
  std::vector<ListStoresResponse> pages ABSL_GUARDED_BY(mu);
  grpc::Status local ABSL_GUARDED_BY(mu);                  // the error here, which wins
  grpc::Status remote ABSL_GUARDED_BY(mu);                 // the first target's error
  std::vector<std::unique_ptr<grpc::ByteBuffer>> replies;  // one per target
  ListStoresResponse page;                                 // the page served here
};

}  // namespace

grpc::ServerUnaryReactor* AdaptationService::GatherListStores(
    grpc::CallbackServerContext* context, const Raw* request, const CallInfo& info,
    const std::vector<RelayTarget>& others,
    UnaryCall<ListStoresRequest, ListStoresResponse>* call) {
  const absl::Time start = absl::Now();
  const FrontEnd fe = fe_;
  auto fan = std::make_shared<ListFanIn>();
  {
    absl::MutexLock lock(&fan->mu);
    fan->pending = others.size() + 1;
  }
  // The last part in finishes the call.
  auto arrived = [fe, call, start, fan] {
    std::vector<ListStoresResponse> pages;
    grpc::Status status;
    {
      absl::MutexLock lock(&fan->mu);
      if (--fan->pending > 0) return;
      pages = std::move(fan->pages);
      status = !fan->local.ok() ? fan->local : fan->remote;
    }
    if (status.ok()) {
      status = ToGrpc(adaptd::Service::MergeListPages(call->request, &pages, &call->response));
    }
    fe.Record("ListStores", status, start);
    call->Reply(status);
  };
  for (const RelayTarget& to : others) {
    fan->replies.push_back(std::make_unique<grpc::ByteBuffer>());
    grpc::ByteBuffer* reply = fan->replies.back().get();
    to.Unary("ListStores", context, *request, reply,
             [fan, reply, arrived, name = to.name()](const grpc::Status& status) {
               ListStoresResponse page;
               grpc::Status got = status.ok() ? ParseMessage(*reply, &page) : status;
               {
                 absl::MutexLock lock(&fan->mu);
                 if (got.ok()) {
                   fan->pages.push_back(std::move(page));
                 } else if (fan->remote.ok()) {
                   fan->remote = grpc::Status(
                       got.error_code(),
                       absl::StrCat("ListStores: member ", name, ": ", got.error_message()));
                 }
               }
               arrived();
             });
  }
  fe_.service->ListStores(info, call->request, &fan->page, [fan, arrived](const absl::Status& s) {
    {
      absl::MutexLock lock(&fan->mu);
      if (s.ok()) {
        fan->pages.push_back(std::move(fan->page));
      } else {
        fan->local = ToGrpc(s);
      }
    }
    arrived();
  });
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::Ping(grpc::CallbackServerContext* context,
                                                  const Raw* request, Raw* response) {
  // No work to queue: answered on the gRPC thread, the transport's baseline.
  auto* call = new UnaryCall<adapt::v1::PingRequest, adapt::v1::PingResponse>(response);
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) return Refuse(fe_, call, "Ping", s);
  fe_.Record("Ping", grpc::Status::OK, absl::Now());
  call->Reply(grpc::Status::OK);
  return call;
}

grpc::ServerUnaryReactor* AdaptationService::ListEncoders(grpc::CallbackServerContext* context,
                                                          const Raw* request, Raw* response) {
  auto* call =
      new UnaryCall<adapt::v1::ListEncodersRequest, adapt::v1::ListEncodersResponse>(response);
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) {
    return Refuse(fe_, call, "ListEncoders", s);
  }
  return Serve("ListEncoders", call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    fe_.service->ListEncoders(info, req, resp, std::move(done));
  });
}

grpc::ServerUnaryReactor* AdaptationService::ClusterRoutes(grpc::CallbackServerContext* context,
                                                           const Raw* request, Raw* response) {
  using adapt::v1::ClusterRoutesRequest, adapt::v1::ClusterRoutesResponse;
  auto* call = new UnaryCall<ClusterRoutesRequest, ClusterRoutesResponse>(response);
  CallInfo info;
  if (auto s = Open(context, request, call, &info); !s.ok()) {
    return Refuse(fe_, call, "ClusterRoutes", s);
  }
  return Serve("ClusterRoutes", call, [&](const auto& req, auto* resp, adaptd::Service::Done done) {
    fe_.service->ClusterRoutes(info, req, resp, std::move(done));
  });
}

grpc::ServerUnaryReactor* AdaptationService::ClusterStatus(grpc::CallbackServerContext* context,
                                                           const Raw* request, Raw* response) {
  using adapt::v1::ClusterStatusRequest, adapt::v1::ClusterStatusResponse;
  auto* call = new UnaryCall<ClusterStatusRequest, ClusterStatusResponse>(response);
  return Admin<&adaptd::Service::ClusterStatus>(context, "ClusterStatus", request, call);
}

grpc::ServerUnaryReactor* AdaptationService::DrainMember(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  using adapt::v1::DrainMemberRequest, adapt::v1::DrainMemberResponse;
  auto* call = new UnaryCall<DrainMemberRequest, DrainMemberResponse>(response);
  return Admin<&adaptd::Service::DrainMember>(context, "DrainMember", request, call);
}

grpc::ServerUnaryReactor* AdaptationService::ClusterQuota(grpc::CallbackServerContext* context,
                                                          const Raw* request, Raw* response) {
  using adapt::v1::ClusterQuotaRequest, adapt::v1::ClusterQuotaResponse;
  auto* call = new UnaryCall<ClusterQuotaRequest, ClusterQuotaResponse>(response);
  return Admin<&adaptd::Service::ClusterQuota>(context, "ClusterQuota", request, call);
}

grpc::ServerUnaryReactor* AdaptationService::ClusterBase(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  using adapt::v1::ClusterBaseRequest, adapt::v1::ClusterBaseResponse;
  auto* call = new UnaryCall<ClusterBaseRequest, ClusterBaseResponse>(response);
  return Admin<&adaptd::Service::ClusterBase>(context, "ClusterBase", request, call);
}

// Client and bidirectional streams: authenticated here; each message's tenant is authorized
// as it arrives.
grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::Adapt(
    grpc::CallbackServerContext* context, Raw* response) {
  CallInfo info = GrpcCallInfo(context);
  AdmittedCall admitted;
  if (auto s = fe_.service->Admit(info, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(fe_, "Adapt", ToGrpc(s));
  }
  return new WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>(
      fe_, context, std::move(info), std::move(admitted), response, "Adapt");
}

grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::Forget(
    grpc::CallbackServerContext* context, Raw* response) {
  CallInfo info = GrpcCallInfo(context);
  AdmittedCall admitted;
  if (auto s = fe_.service->Admit(info, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(fe_, "Forget", ToGrpc(s));
  }
  return new WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>(
      fe_, context, std::move(info), std::move(admitted), response, "Forget");
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* AdaptationService::PredictStream(
    grpc::CallbackServerContext* context) {
  CallInfo info = GrpcCallInfo(context);
  AdmittedCall admitted;
  if (auto s = fe_.service->Admit(info, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerBidiReactor<Raw, Raw>>(fe_, "PredictStream", ToGrpc(s));
  }
  return new PredictStreamReactor(fe_, context, std::move(info), std::move(admitted));
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* AdaptationService::ExportStore(
    grpc::CallbackServerContext* context, const Raw* request) {
  adapt::v1::ExportStoreRequest parsed;
  AdmittedCall admitted;
  CallInfo info;
  grpc::Status s = ParseMessage(*request, &parsed);
  if (s.ok()) {
    info = GrpcCallInfo(context);
    s = ToGrpc(fe_.service->Admit(info, parsed.tenant(), &admitted));
  }
  if (!s.ok()) return RefuseStream<grpc::ServerWriteReactor<Raw>>(fe_, "ExportStore", s);
  grpc::ServerWriteReactor<Raw>* reactor = nullptr;
  if (RoutedAway(
          fe_, context, info, parsed.tenant(), parsed.store(), Access::kRead,
          [&](const grpc::Status& refused) {
            reactor = RefuseStream<grpc::ServerWriteReactor<Raw>>(fe_, "ExportStore", refused);
          },
          [&](const RelayTarget& to) {
            reactor = new ExportReactor(fe_, context, std::move(admitted), to, *request);
          })) {
    return reactor;
  }
  return new ExportReactor(fe_, info, std::move(admitted), std::move(parsed));
}

grpc::ServerReadReactor<grpc::ByteBuffer>* AdaptationService::ImportStore(
    grpc::CallbackServerContext* context, Raw* response) {
  CallInfo info = GrpcCallInfo(context);
  AdmittedCall admitted;
  if (auto s = fe_.service->Admit(info, "", &admitted); !s.ok()) {
    return RefuseStream<grpc::ServerReadReactor<Raw>>(fe_, "ImportStore", ToGrpc(s));
  }
  return new ImportReactor(fe_, context, std::move(info), std::move(admitted), response);
}

}  // namespace adaptd
