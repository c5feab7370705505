// UnaryCall: one raw unary call of the Adaptation service. It owns the parsed request and the
// response, serializes the response into gRPC's reply buffer when it finishes, holds the
// call's place in the CallGate and deletes itself when gRPC is done with it.
#ifndef ADAPTD_SERVER_RPC_UNARY_CALL_H_
#define ADAPTD_SERVER_RPC_UNARY_CALL_H_

#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "server/rpc/wire.h"
#include "server/service/call_gate.h"

namespace adaptd {

template <typename Request, typename Response>
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  explicit UnaryCall(grpc::ByteBuffer* reply) : reply_(reply) {}

  // Finishes the call with `status`, sending `response` when it is OK. Call exactly once.
  void Reply(const grpc::Status& status) {
    if (!status.ok()) {
      Finish(status);
      return;
    }
    Finish(SerializeMessage(response, reply_));
  }
  void OnDone() override { delete this; }
  // gRPC's reply buffer, for a reply that arrives serialized (a forwarded call's): fill it,
  // then Finish.
  grpc::ByteBuffer* reply_buffer() { return reply_; }

  Request request;
  Response response;
  AdmittedCall admitted;

 private:
  grpc::ByteBuffer* reply_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_UNARY_CALL_H_
