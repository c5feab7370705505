#include "server/rpc/adaptation_service.h"

#include "server/rpc/predict_batch.h"
#include "server/rpc/stream_reactors.h"

namespace adaptd {

template <typename Fn>
grpc::ServerUnaryReactor* AdaptationService::Unary(grpc::CallbackServerContext* context,
                                                   const char* method, const std::string& tenant,
                                                   Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  Task task = CallTask(context, tenant);
  task.run = [ctx, reactor, method, start, fn](const absl::Status& wanted) {
    const grpc::Status status = wanted.ok() ? ToGrpc(fn()) : ToGrpc(wanted);
    ctx.Record(method, status, start);
    reactor->Finish(status);
  };
  if (const absl::Status queued = ctx.scheduler->Submit(std::move(task)); !queued.ok()) {
    ctx.Record(method, ToGrpc(queued), start);
    reactor->Finish(ToGrpc(queued));
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdaptationService::CreateStore(
    grpc::CallbackServerContext* context, const adapt::v1::CreateStoreRequest* request,
    adapt::v1::StoreInfo* response) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "CreateStore", s);
  }
  return Unary(context, "CreateStore", request->tenant(), [this, request, response]() -> absl::Status {
    auto info = ctx_.engine->CreateStore(*request);
    if (!info.ok()) return info.status();
    *response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::GetStore(grpc::CallbackServerContext* context,
                                                      const adapt::v1::GetStoreRequest* request,
                                                      adapt::v1::StoreInfo* response) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "GetStore", s);
  }
  return Unary(context, "GetStore", request->tenant(), [this, request, response]() -> absl::Status {
    auto info = ctx_.engine->GetStore(*request);
    if (!info.ok()) return info.status();
    *response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::ListStores(grpc::CallbackServerContext* context,
                                                        const adapt::v1::ListStoresRequest* request,
                                                        adapt::v1::ListStoresResponse* response) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "ListStores", s);
  }
  return Unary(context, "ListStores", request->tenant(), [this, request, response]() -> absl::Status {
    auto list = ctx_.engine->ListStores(*request);
    if (!list.ok()) return list.status();
    *response = *std::move(list);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::DeleteStore(
    grpc::CallbackServerContext* context, const adapt::v1::DeleteStoreRequest* request,
    adapt::v1::DeleteStoreResponse*) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "DeleteStore", s);
  }
  return Unary(context, "DeleteStore", request->tenant(),
               [this, request]() -> absl::Status { return ctx_.engine->DeleteStore(*request); });
}

grpc::ServerUnaryReactor* AdaptationService::Predict(grpc::CallbackServerContext* context,
                                                     const adapt::v1::PredictRequest* request,
                                                     adapt::v1::PredictResponse* response) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "Predict", s);
  }
  // Batchable: the scheduler hands it to RunPredictBatch with other predicts.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  auto finish = [ctx, reactor, start](const grpc::Status& status) {
    ctx.Record("Predict", status, start);
    reactor->Finish(status);
  };
  Task task = CallTask(context, request->tenant());
  task.run = [finish](const absl::Status& dropped) { finish(ToGrpc(dropped)); };
  task.batch_item = std::make_unique<PredictItem>(
      request, [finish, response](absl::StatusOr<adapt::v1::PredictResponse> result) {
        if (result.ok()) *response = *std::move(result);
        finish(ToGrpc(result.status()));
      });
  if (const absl::Status queued = ctx.scheduler->Submit(std::move(task)); !queued.ok()) {
    finish(ToGrpc(queued));
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdaptationService::Ping(grpc::CallbackServerContext* context,
                                                  const adapt::v1::PingRequest*,
                                                  adapt::v1::PingResponse*) {
  // No work to queue: answered on the gRPC thread, the transport's baseline.
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) return Refuse(ctx_, context, "Ping", s);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ctx_.Record("Ping", grpc::Status::OK, absl::Now());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* AdaptationService::ListEncoders(
    grpc::CallbackServerContext* context, const adapt::v1::ListEncodersRequest*,
    adapt::v1::ListEncodersResponse* response) {
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) return Refuse(ctx_, context, "ListEncoders", s);
  return Unary(context, "ListEncoders", "", [this, response]() -> absl::Status {
    *response = ctx_.engine->ListEncoders();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::Compile(grpc::CallbackServerContext* context,
                                                     const adapt::v1::CompileRequest* request,
                                                     adapt::v1::CompileResponse* response) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    return Refuse(ctx_, context, "Compile", s);
  }
  // The compile pool, not the scheduler, runs the work; the reactor finishes from there.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  ctx.engine->Compile(
      *request, [ctx, reactor, response, start](absl::StatusOr<adapt::v1::CompileResponse> result) {
        grpc::Status status = ToGrpc(result.status());
        if (result.ok()) *response = *std::move(result);
        ctx.Record("Compile", status, start);
        reactor->Finish(status);
      });
  return reactor;
}

grpc::ServerReadReactor<adapt::v1::AdaptRequest>* AdaptationService::Adapt(
    grpc::CallbackServerContext* context, adapt::v1::AdaptResponse* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) {
    ctx_.Record("Adapt", s, absl::Now());
    return new RefusedReactor<grpc::ServerReadReactor<adapt::v1::AdaptRequest>>(s);
  }
  return new WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>(
      ctx_, context, response, TxnKind::kAdapt, "Adapt");
}

grpc::ServerReadReactor<adapt::v1::ForgetRequest>* AdaptationService::Forget(
    grpc::CallbackServerContext* context, adapt::v1::ForgetResponse* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) {
    ctx_.Record("Forget", s, absl::Now());
    return new RefusedReactor<grpc::ServerReadReactor<adapt::v1::ForgetRequest>>(s);
  }
  return new WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>(
      ctx_, context, response, TxnKind::kForget, "Forget");
}

grpc::ServerBidiReactor<adapt::v1::PredictRequest, adapt::v1::PredictResponse>*
AdaptationService::PredictStream(grpc::CallbackServerContext* context) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) {
    ctx_.Record("PredictStream", s, absl::Now());
    return new RefusedReactor<
        grpc::ServerBidiReactor<adapt::v1::PredictRequest, adapt::v1::PredictResponse>>(s);
  }
  return new PredictStreamReactor(ctx_, context);
}

grpc::ServerWriteReactor<adapt::v1::StoreChunk>* AdaptationService::ExportStore(
    grpc::CallbackServerContext* context, const adapt::v1::ExportStoreRequest* request) {
  if (auto s = ctx_.Admit(*context, request->tenant()); !s.ok()) {
    ctx_.Record("ExportStore", s, absl::Now());
    return new RefusedReactor<grpc::ServerWriteReactor<adapt::v1::StoreChunk>>(s);
  }
  return new ExportReactor(ctx_, context, *request);
}

grpc::ServerReadReactor<adapt::v1::StoreChunk>* AdaptationService::ImportStore(
    grpc::CallbackServerContext* context, adapt::v1::StoreInfo* response) {
  // Authenticated here; each message's tenant is authorized as it arrives.
  if (auto s = ctx_.Admit(*context, ""); !s.ok()) {
    ctx_.Record("ImportStore", s, absl::Now());
    return new RefusedReactor<grpc::ServerReadReactor<adapt::v1::StoreChunk>>(s);
  }
  return new ImportReactor(ctx_, context, response);
}

}  // namespace adaptd
