// The reactors of the streaming RPCs. Each reads or writes one message at a time, hands the
// work for it to the scheduler, and starts the next read or write from there, so a stream is
// processed in order and no gRPC thread computes. Each deletes itself in OnDone.
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
class WriteReactor final : public grpc::ServerReadReactor<Request> {
 public:
  WriteReactor(ServiceContext ctx, grpc::CallbackServerContext* context, Response* response,
               TxnKind kind, const char* method);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void Commit();

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  Response* response_;
  const char* method_;
  absl::Time start_;
  std::unique_ptr<WriteSession> session_;
  Request request_;
  // From the first message: the queue the stream's work waits in, and the store's lane.
  std::string tenant_, lane_;
};

class PredictStreamReactor final
    : public grpc::ServerBidiReactor<adapt::v1::PredictRequest, adapt::v1::PredictResponse> {
 public:
  PredictStreamReactor(ServiceContext ctx, grpc::CallbackServerContext* context);
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  absl::Time start_;
  adapt::v1::PredictRequest request_;
  adapt::v1::PredictResponse response_;
};

class ExportReactor final : public grpc::ServerWriteReactor<adapt::v1::StoreChunk> {
 public:
  ExportReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                adapt::v1::ExportStoreRequest request);
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);
  void WriteNext();

  ServiceContext ctx_;
  absl::Time start_;
  std::string file_;
  size_t offset_ = 0;
  adapt::v1::StoreChunk chunk_;
};

class ImportReactor final : public grpc::ServerReadReactor<adapt::v1::StoreChunk> {
 public:
  ImportReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                adapt::v1::StoreInfo* response);
  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Complete(const grpc::Status& status);

  ServiceContext ctx_;
  grpc::CallbackServerContext* context_;
  adapt::v1::StoreInfo* response_;
  absl::Time start_;
  std::string tenant_, store_, file_;
  adapt::v1::StoreChunk chunk_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_STREAM_REACTORS_H_
