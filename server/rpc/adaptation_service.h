// AdaptationService: the adapt.v1.Adaptation service on gRPC's callback API. Handlers
// validate nothing and compute nothing themselves: each hands the request to the scheduler,
// where the engine runs it, and the reactor finishes from there. Thread-safe.
#ifndef ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
#define ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_

#include "adapt/v1/adapt.grpc.pb.h"
#include "server/rpc/service_context.h"

namespace adaptd {

class AdaptationService final : public adapt::v1::Adaptation::CallbackService {
 public:
  explicit AdaptationService(ServiceContext context) : ctx_(context) {}

  grpc::ServerUnaryReactor* CreateStore(grpc::CallbackServerContext* context,
                                        const adapt::v1::CreateStoreRequest* request,
                                        adapt::v1::StoreInfo* response) override;
  grpc::ServerUnaryReactor* GetStore(grpc::CallbackServerContext* context,
                                     const adapt::v1::GetStoreRequest* request,
                                     adapt::v1::StoreInfo* response) override;
  grpc::ServerUnaryReactor* ListStores(grpc::CallbackServerContext* context,
                                       const adapt::v1::ListStoresRequest* request,
                                       adapt::v1::ListStoresResponse* response) override;
  grpc::ServerUnaryReactor* DeleteStore(grpc::CallbackServerContext* context,
                                        const adapt::v1::DeleteStoreRequest* request,
                                        adapt::v1::DeleteStoreResponse* response) override;
  grpc::ServerReadReactor<adapt::v1::AdaptRequest>* Adapt(
      grpc::CallbackServerContext* context, adapt::v1::AdaptResponse* response) override;
  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const adapt::v1::CompileRequest* request,
                                    adapt::v1::CompileResponse* response) override;
  grpc::ServerReadReactor<adapt::v1::ForgetRequest>* Forget(
      grpc::CallbackServerContext* context, adapt::v1::ForgetResponse* response) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context,
                                    const adapt::v1::PredictRequest* request,
                                    adapt::v1::PredictResponse* response) override;
  grpc::ServerBidiReactor<adapt::v1::PredictRequest, adapt::v1::PredictResponse>* PredictStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<adapt::v1::StoreChunk>* ExportStore(
      grpc::CallbackServerContext* context, const adapt::v1::ExportStoreRequest* request) override;
  grpc::ServerReadReactor<adapt::v1::StoreChunk>* ImportStore(
      grpc::CallbackServerContext* context, adapt::v1::StoreInfo* response) override;
  grpc::ServerUnaryReactor* ListEncoders(grpc::CallbackServerContext* context,
                                         const adapt::v1::ListEncodersRequest* request,
                                         adapt::v1::ListEncodersResponse* response) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context,
                                 const adapt::v1::PingRequest* request,
                                 adapt::v1::PingResponse* response) override;

 private:
  // Queues `fn` (returning absl::Status) on the scheduler in `tenant`'s queue and finishes the
  // call with its status (or with the reason it did not run).
  template <typename Fn>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, const char* method,
                                  const std::string& tenant, Fn fn);

  ServiceContext ctx_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
