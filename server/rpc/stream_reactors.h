// The reactors of the streaming RPCs: the gRPC side of the service layer's calls. Each reads
// or writes one message at a time, hands each message to the service (which queues its work
// on the scheduler) and starts the next read or write from the service's callback, so a stream
// is processed in order and no gRPC thread computes. Messages travel raw (grpc::ByteBuffer) and
// are parsed and serialized here (server/rpc/wire.h). A stream the service routes to another
// member is relayed as the caller's bytes, at most one message buffered. Each holds its call's
// place in the CallGate and deletes itself in OnDone.
#ifndef ADAPTD_SERVER_RPC_STREAM_REACTORS_H_
#define ADAPTD_SERVER_RPC_STREAM_REACTORS_H_

#include <memory>
#include <string>
#include <vector>

#include "adapt/v1/adapt.grpc.pb.h"
#include "server/rpc/front_end.h"

namespace adaptd {

// Adapt and Forget: stages each message in the service's Write and commits at the end of the
// stream. The first error finishes the call; nothing is committed then.
template <typename Request, typename Response>
class WriteReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  WriteReactor(FrontEnd fe, grpc::CallbackServerContext* context, CallInfo info,
               AdmittedCall admitted, grpc::ByteBuffer* reply, const char* method);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  // Passes the stream, from its first message on, to `to` (RoutedAway).
  void Relay(const RelayTarget& to);

  FrontEnd fe_;
  grpc::CallbackServerContext* context_;
  const CallInfo info_;
  AdmittedCall admitted_;
  grpc::ByteBuffer* reply_;
  const char* method_;
  absl::Time start_;
  std::unique_ptr<Service::Write<Request, Response>> write_;
  grpc::ByteBuffer incoming_;
  Request request_;
  Response response_;
  bool routed_ = false;                    // a message named the store
  std::shared_ptr<RelayStream> upstream_;  // set when relaying
};

class PredictStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  PredictStreamReactor(FrontEnd fe, grpc::CallbackServerContext* context, CallInfo info,
                       AdmittedCall admitted);
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void Answer(const absl::Status& status);

  FrontEnd fe_;
  grpc::CallbackServerContext* context_;
  const CallInfo info_;
  AdmittedCall admitted_;
  absl::Time start_;
  grpc::ByteBuffer incoming_, outgoing_;
  adapt::v1::PredictRequest request_;
  adapt::v1::PredictResponse response_;
  grpc::ByteBuffer relayed_;  // the reply to a message passed on (RoutedAway)
};

class ExportReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  ExportReactor(FrontEnd fe, const CallInfo& info, AdmittedCall admitted,
                adapt::v1::ExportStoreRequest request);
  // Passes the export to `to` and writes its chunks on (RoutedAway).
  ExportReactor(FrontEnd fe, grpc::CallbackServerContext* context, AdmittedCall admitted,
                const RelayTarget& to, const grpc::ByteBuffer& request);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void WriteNext();

  FrontEnd fe_;
  AdmittedCall admitted_;
  absl::Time start_;
  adapt::v1::ExportStoreRequest request_;
  std::string file_;
  size_t offset_ = 0;
  grpc::ByteBuffer outgoing_;
  std::shared_ptr<RelayStream> upstream_;  // set when relaying
};

class ImportReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  ImportReactor(FrontEnd fe, grpc::CallbackServerContext* context, CallInfo info,
                AdmittedCall admitted, grpc::ByteBuffer* reply);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void Relay(const RelayTarget& to);

  FrontEnd fe_;
  grpc::CallbackServerContext* context_;
  const CallInfo info_;
  AdmittedCall admitted_;
  grpc::ByteBuffer* reply_;
  absl::Time start_;
  std::unique_ptr<adaptd::Service::Import> import_;
  std::shared_ptr<RelayStream> upstream_;  // set when relaying
  grpc::ByteBuffer incoming_;
  adapt::v1::StoreChunk chunk_;
  adapt::v1::StoreInfo response_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_STREAM_REACTORS_H_
