#include "server/rpc/adaptation_service.h"

#include "server/rpc/predict_batch.h"
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

grpc::ServerUnaryReactor* AdaptationService::CreateStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call = new UnaryCall<CreateStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "CreateStore", s);
  return Unary(context, "CreateStore", call, [this, call]() -> absl::Status {
    auto info = ctx_.engine->CreateStore(call->request);
    if (!info.ok()) return info.status();
    call->response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::GetStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<GetStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "GetStore", s);
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
  return Unary(context, "ListStores", call, [this, call]() -> absl::Status {
    auto list = ctx_.engine->ListStores(call->request);
    if (!list.ok()) return list.status();
    call->response = *std::move(list);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::DeleteStore(grpc::CallbackServerContext* context,
                                                         const Raw* request, Raw* response) {
  auto* call = new UnaryCall<DeleteStoreRequest, DeleteStoreResponse>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "DeleteStore", s);
  return Unary(context, "DeleteStore", call,
               [this, call]() -> absl::Status { return ctx_.engine->DeleteStore(call->request); });
}

grpc::ServerUnaryReactor* AdaptationService::PinStore(grpc::CallbackServerContext* context,
                                                      const Raw* request, Raw* response) {
  auto* call = new UnaryCall<adapt::v1::PinStoreRequest, StoreInfo>(response);
  if (auto s = Open(context, request, call); !s.ok()) return Refuse(ctx_, call, "PinStore", s);
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
