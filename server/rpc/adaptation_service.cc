#include "server/rpc/adaptation_service.h"

#include "server/rpc/stream_reactors.h"

namespace adaptd {

template <typename Fn>
grpc::ServerUnaryReactor* AdaptationService::Unary(grpc::CallbackServerContext* context,
                                                   const char* method, Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const absl::Time start = absl::Now();
  const ServiceContext ctx = ctx_;
  const bool queued = ctx.executor->Submit([ctx, context, reactor, method, start, fn] {
    grpc::Status status = CallStillWanted(context);
    if (status.ok()) status = ToGrpc(fn());
    ctx.Record(method, status, start);
    reactor->Finish(status);
  });
  if (!queued) {
    ctx.Record(method, ShuttingDown(), start);
    reactor->Finish(ShuttingDown());
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdaptationService::CreateStore(
    grpc::CallbackServerContext* context, const adapt::v1::CreateStoreRequest* request,
    adapt::v1::StoreInfo* response) {
  return Unary(context, "CreateStore", [this, request, response]() -> absl::Status {
    auto info = ctx_.engine->CreateStore(*request);
    if (!info.ok()) return info.status();
    *response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::GetStore(grpc::CallbackServerContext* context,
                                                      const adapt::v1::GetStoreRequest* request,
                                                      adapt::v1::StoreInfo* response) {
  return Unary(context, "GetStore", [this, request, response]() -> absl::Status {
    auto info = ctx_.engine->GetStore(*request);
    if (!info.ok()) return info.status();
    *response = *std::move(info);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::ListStores(grpc::CallbackServerContext* context,
                                                        const adapt::v1::ListStoresRequest* request,
                                                        adapt::v1::ListStoresResponse* response) {
  return Unary(context, "ListStores", [this, request, response]() -> absl::Status {
    auto list = ctx_.engine->ListStores(*request);
    if (!list.ok()) return list.status();
    *response = *std::move(list);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::DeleteStore(
    grpc::CallbackServerContext* context, const adapt::v1::DeleteStoreRequest* request,
    adapt::v1::DeleteStoreResponse*) {
  return Unary(context, "DeleteStore",
               [this, request]() -> absl::Status { return ctx_.engine->DeleteStore(*request); });
}

grpc::ServerUnaryReactor* AdaptationService::Predict(grpc::CallbackServerContext* context,
                                                     const adapt::v1::PredictRequest* request,
                                                     adapt::v1::PredictResponse* response) {
  return Unary(context, "Predict", [this, request, response]() -> absl::Status {
    auto result = ctx_.engine->Predict(*request);
    if (!result.ok()) return result.status();
    *response = *std::move(result);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::ListEncoders(
    grpc::CallbackServerContext* context, const adapt::v1::ListEncodersRequest*,
    adapt::v1::ListEncodersResponse* response) {
  return Unary(context, "ListEncoders", [this, response]() -> absl::Status {
    *response = ctx_.engine->ListEncoders();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* AdaptationService::Compile(grpc::CallbackServerContext* context,
                                                     const adapt::v1::CompileRequest* request,
                                                     adapt::v1::CompileResponse* response) {
  // The compile pool, not the executor, runs the work; the reactor finishes from there.
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
  return new WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>(
      ctx_, context, response, TxnKind::kAdapt, "Adapt");
}

grpc::ServerReadReactor<adapt::v1::ForgetRequest>* AdaptationService::Forget(
    grpc::CallbackServerContext* context, adapt::v1::ForgetResponse* response) {
  return new WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>(
      ctx_, context, response, TxnKind::kForget, "Forget");
}

grpc::ServerBidiReactor<adapt::v1::PredictRequest, adapt::v1::PredictResponse>*
AdaptationService::PredictStream(grpc::CallbackServerContext* context) {
  return new PredictStreamReactor(ctx_, context);
}

grpc::ServerWriteReactor<adapt::v1::StoreChunk>* AdaptationService::ExportStore(
    grpc::CallbackServerContext* context, const adapt::v1::ExportStoreRequest* request) {
  return new ExportReactor(ctx_, context, *request);
}

grpc::ServerReadReactor<adapt::v1::StoreChunk>* AdaptationService::ImportStore(
    grpc::CallbackServerContext* context, adapt::v1::StoreInfo* response) {
  return new ImportReactor(ctx_, context, response);
}

}  // namespace adaptd
