// AdaptationService: the adapt.v1.Adaptation service on gRPC's callback API. Every method is
// registered raw: the service parses each request itself (server/rpc/wire.h), so a request
// protobuf refuses (a string that is not UTF-8) is answered INVALID_ARGUMENT naming the field.
// Handlers validate nothing and compute nothing themselves: each hands the request to the
// scheduler, where the engine runs it, and the call finishes from there. Every admitted call
// holds a place in the CallGate until it is done, so shutdown can drain. Thread-safe.
#ifndef ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
#define ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_

#include "adapt/v1/adapt.grpc.pb.h"
#include "server/rpc/service_context.h"
#include "server/rpc/unary_call.h"

namespace adaptd {

namespace internal {
using adapt::v1::Adaptation;
// The generated service with every method marked raw (ByteBuffer in and out).
using RawAdaptationService = Adaptation::WithRawCallbackMethod_CreateStore<
    Adaptation::WithRawCallbackMethod_GetStore<Adaptation::WithRawCallbackMethod_ListStores<
        Adaptation::WithRawCallbackMethod_DeleteStore<Adaptation::WithRawCallbackMethod_PinStore<
            Adaptation::WithRawCallbackMethod_Adapt<Adaptation::WithRawCallbackMethod_Compile<
                Adaptation::WithRawCallbackMethod_Forget<Adaptation::WithRawCallbackMethod_Predict<
                    Adaptation::WithRawCallbackMethod_PredictStream<
                        Adaptation::WithRawCallbackMethod_ExportStore<
                            Adaptation::WithRawCallbackMethod_ImportStore<
                                Adaptation::WithRawCallbackMethod_ListEncoders<
                                    Adaptation::WithRawCallbackMethod_Ping<
                                        Adaptation::WithRawCallbackMethod_ClusterStatus<
                                            Adaptation::WithRawCallbackMethod_DrainMember<
                                                Adaptation::WithRawCallbackMethod_ClusterQuota<
                                                    Adaptation::WithRawCallbackMethod_ClusterBase<
                                                        Adaptation::Service>>>>>>>>>>>>>>>>>>;
}  // namespace internal

class AdaptationService final : public internal::RawAdaptationService {
 public:
  using Raw = grpc::ByteBuffer;

  explicit AdaptationService(ServiceContext context) : ctx_(context) {}

  grpc::ServerUnaryReactor* CreateStore(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;
  grpc::ServerUnaryReactor* GetStore(grpc::CallbackServerContext* context, const Raw* request,
                                     Raw* response) override;
  grpc::ServerUnaryReactor* ListStores(grpc::CallbackServerContext* context, const Raw* request,
                                       Raw* response) override;
  grpc::ServerUnaryReactor* DeleteStore(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;
  grpc::ServerUnaryReactor* PinStore(grpc::CallbackServerContext* context, const Raw* request,
                                     Raw* response) override;
  grpc::ServerReadReactor<Raw>* Adapt(grpc::CallbackServerContext* context, Raw* response) override;
  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context, const Raw* request,
                                    Raw* response) override;
  grpc::ServerReadReactor<Raw>* Forget(grpc::CallbackServerContext* context,
                                       Raw* response) override;
  grpc::ServerUnaryReactor* Predict(grpc::CallbackServerContext* context, const Raw* request,
                                    Raw* response) override;
  grpc::ServerBidiReactor<Raw, Raw>* PredictStream(grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<Raw>* ExportStore(grpc::CallbackServerContext* context,
                                             const Raw* request) override;
  grpc::ServerReadReactor<Raw>* ImportStore(grpc::CallbackServerContext* context,
                                            Raw* response) override;
  grpc::ServerUnaryReactor* ListEncoders(grpc::CallbackServerContext* context, const Raw* request,
                                         Raw* response) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context, const Raw* request,
                                 Raw* response) override;
  grpc::ServerUnaryReactor* ClusterStatus(grpc::CallbackServerContext* context, const Raw* request,
                                          Raw* response) override;
  grpc::ServerUnaryReactor* DrainMember(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;
  grpc::ServerUnaryReactor* ClusterQuota(grpc::CallbackServerContext* context, const Raw* request,
                                         Raw* response) override;
  grpc::ServerUnaryReactor* ClusterBase(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;

 private:
  // Parses `request` into `call` and admits the call (draining, authentication, authorization).
  template <typename Call>
  grpc::Status Open(grpc::CallbackServerContext* context, const Raw* request, Call* call);

  // CreateStore with spec.base: PERMISSION_DENIED naming spec.base when the caller may not read
  // the base's tenant; in a cluster, FAILED_PRECONDITION when the base lives on another member
  // than the new store; INVALID_ARGUMENT for a malformed name.
  grpc::Status CheckBase(const grpc::ServerContextBase& context,
                         const adapt::v1::CreateStoreRequest& request) const;

  // In a cluster, when another member owns `call`'s store: passes the call to it (or refuses
  // a forwarded call that is not ours) and returns true; the call finishes from there.
  template <typename Call>
  bool Forwarded(grpc::CallbackServerContext* context, const char* method, Access access,
                 const Raw* request, Call* call);
  // ClusterStatus, DrainMember, ClusterQuota and ClusterBase: admin tokens only;
  // FAILED_PRECONDITION on a single server.
  grpc::Status OpenAdmin(const grpc::ServerContextBase& context) const;
  // ListStores of a cluster: this member's page merged with every other member's.
  grpc::ServerUnaryReactor* ClusterListStores(
      grpc::CallbackServerContext* context, const Raw* request,
      UnaryCall<adapt::v1::ListStoresRequest, adapt::v1::ListStoresResponse>* call);

  // Queues `fn` (returning absl::Status) on the scheduler in `call`'s tenant queue and finishes
  // `call` with its status (or with the reason it did not run).
  template <typename Call, typename Fn>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, const char* method,
                                  Call* call, Fn fn);

  ServiceContext ctx_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
