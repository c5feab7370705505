// The reactors of the streaming RPCs. Each reads or writes one message at a time, hands the
// work for it to the scheduler, and starts the next read or write from there, so a stream is
// processed in order and no gRPC thread computes. Messages travel raw (grpc::ByteBuffer) and
// are parsed and serialized here (server/rpc/wire.h). Each holds its call's place in the
// CallGate and deletes itself in OnDone.
#ifndef ADAPTD_SERVER_RPC_STREAM_REACTORS_H_
#define ADAPTD_SERVER_RPC_STREAM_REACTORS_H_

#include <memory>
#include <string>

#include "adapt/v1/adapt.grpc.pb.h"
#include "server/rpc/service_context.h"

namespace adaptd {

// Adapt and Forget: stages each message in a WriteSession and commits at the end of the
// stream. The first error finishes the call; nothing is committed then.
template <typename Request, typename Response>
class WriteReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  WriteReactor(ServiceContext ctx, grpc::CallbackServerContext* context, AdmittedCall admitted,
               grpc::ByteBuffer* reply, TxnKind kind, const char* method);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void Commit();
  // Passes the stream, from its first message on, to the store's owner (forwarding.h).
  void Relay(const cluster::Member& owner);

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  AdmittedCall admitted_;
  grpc::ByteBuffer* reply_;
  const char* method_;
  absl::Time start_;
  std::unique_ptr<WriteSession> session_;
  grpc::ByteBuffer incoming_;
  Request request_;
  Response response_;
  // From the first message: the queue the stream's work waits in, and the store's lane.
  std::string tenant_, lane_;
  std::shared_ptr<Forwarder::Stream> upstream_;  // set when relaying to the owner
};

class PredictStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  PredictStreamReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                       AdmittedCall admitted);
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  AdmittedCall admitted_;
  absl::Time start_;
  grpc::ByteBuffer incoming_, outgoing_;
  adapt::v1::PredictRequest request_;
  grpc::ByteBuffer forwarded_;  // the owner's reply to a message passed on (forwarding.h)
};

class ExportReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  ExportReactor(ServiceContext ctx, grpc::CallbackServerContext* context, AdmittedCall admitted,
                adapt::v1::ExportStoreRequest request);
  // Passes the export to the store's owner and writes its chunks on (forwarding.h).
  ExportReactor(ServiceContext ctx, grpc::CallbackServerContext* context, AdmittedCall admitted,
                const cluster::Member& owner, const grpc::ByteBuffer& request);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void WriteNext();

  ServiceContext ctx_;
  AdmittedCall admitted_;
  absl::Time start_;
  std::string file_;
  size_t offset_ = 0;
  grpc::ByteBuffer outgoing_;
  std::shared_ptr<Forwarder::Stream> upstream_;  // set when relaying from the owner
};

class ImportReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  ImportReactor(ServiceContext ctx, grpc::CallbackServerContext* context, AdmittedCall admitted,
                grpc::ByteBuffer* reply);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void Relay(const cluster::Member& owner);

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  AdmittedCall admitted_;
  grpc::ByteBuffer* reply_;
  absl::Time start_;
  std::string tenant_, store_, file_;
  std::vector<std::string> applied_ids_;         // from the first chunk
  bool moved_ = false;                           // a member handing the store off (handoff.h)
  std::shared_ptr<Forwarder::Stream> upstream_;  // set when relaying to the owner
  grpc::ByteBuffer incoming_;
  adapt::v1::StoreChunk chunk_;
  adapt::v1::StoreInfo response_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_STREAM_REACTORS_H_
