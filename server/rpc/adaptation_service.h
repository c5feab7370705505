// AdaptationService: the gRPC front end of the service layer (server/service/service.h), on
// gRPC's callback API. Every method is registered raw: the front end parses each request itself
// (server/rpc/wire.h), so a request protobuf refuses (a string that is not UTF-8) is answered
// INVALID_ARGUMENT naming the field. Handlers map streams, metadata, deadlines and status codes
// and nothing else: the service admits, routes, queues and runs each call, which finishes from
// there; a call the service routes to another member is relayed as the caller's bytes. Every
// admitted call holds a place in the CallGate until it is done, so shutdown can drain.
// Thread-safe.
#ifndef ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
#define ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_

#include <vector>

#include "adapt/v1/adapt.grpc.pb.h"
#include "server/rpc/front_end.h"
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
                                                        Adaptation::WithRawCallbackMethod_Feedback<
                                                            Adaptation::
                                                                WithRawCallbackMethod_ClusterRoutes<
                                                                    Adaptation::
                                                                        Service>>>>>>>>>>>>>>>>>>>>;
}  // namespace internal

class AdaptationService final : public internal::RawAdaptationService {
 public:
  using Raw = grpc::ByteBuffer;

  explicit AdaptationService(FrontEnd front_end) : fe_(front_end) {}

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
  grpc::ServerUnaryReactor* Feedback(grpc::CallbackServerContext* context, const Raw* request,
                                     Raw* response) override;
  grpc::ServerWriteReactor<Raw>* ExportStore(grpc::CallbackServerContext* context,
                                             const Raw* request) override;
  grpc::ServerReadReactor<Raw>* ImportStore(grpc::CallbackServerContext* context,
                                            Raw* response) override;
  grpc::ServerUnaryReactor* ListEncoders(grpc::CallbackServerContext* context, const Raw* request,
                                         Raw* response) override;
  grpc::ServerUnaryReactor* Ping(grpc::CallbackServerContext* context, const Raw* request,
                                 Raw* response) override;
  grpc::ServerUnaryReactor* ClusterRoutes(grpc::CallbackServerContext* context, const Raw* request,
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
  // Parses `request` into `call`, fills `info` and admits the call (draining,
  // authentication, authorization).
  template <typename Call>
  grpc::Status Open(grpc::CallbackServerContext* context, const Raw* request, Call* call,
                    CallInfo* info);
  // Routes `call` (RoutedAway): true when it was refused or relayed as the caller's bytes.
  template <typename Call>
  bool RoutedElsewhere(grpc::CallbackServerContext* context, const char* method, Access access,
                       const CallInfo& info, const Raw* request, Call* call);
  // Runs `serve` (a Service call taking the request, the response and a Done) and finishes
  // `call` with its outcome.
  template <typename Call, typename ServeFn>
  grpc::ServerUnaryReactor* Serve(const char* method, Call* call, ServeFn serve);
  // A call on one store: Open, route, then Service's `Method`.
  template <auto Method, typename Call>
  grpc::ServerUnaryReactor* StoreCall(grpc::CallbackServerContext* context, const char* method,
                                      Access access, const Raw* request, Call* call);
  // A cluster call: Open, then admin tokens only (FAILED_PRECONDITION on a single server),
  // then Service's `Method`.
  template <auto Method, typename Call>
  grpc::ServerUnaryReactor* Admin(grpc::CallbackServerContext* context, const char* method,
                                  const Raw* request, Call* call);
  // ListStores gathered (ListTargets): the page served here merged with the pages the
  // request relayed to `others` answer.
  grpc::ServerUnaryReactor* GatherListStores(
      grpc::CallbackServerContext* context, const Raw* request, const CallInfo& info,
      const std::vector<RelayTarget>& others,
      UnaryCall<adapt::v1::ListStoresRequest, adapt::v1::ListStoresResponse>* call);

  FrontEnd fe_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_ADAPTATION_SERVICE_H_
