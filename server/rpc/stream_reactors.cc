#include "server/rpc/stream_reactors.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "server/rpc/wire.h"

namespace adaptd {
namespace {

// A client stream (Adapt, Forget, ImportStore) relayed from its first message, `*incoming`
// (forwarding.h): the caller's next message is read once the member took the last, the
// member's reply lands in `*reply`, and its status finishes `reactor`. Not started: the caller
// keeps the Stream, then calls Start last.
template <typename Reactor>
std::shared_ptr<RelayStream> OpenClientStreamRelay(const FrontEnd& fe,
                                                   grpc::CallbackServerContext* context,
                                                   const RelayTarget& to, const char* method,
                                                   absl::Time start, Reactor* reactor,
                                                   grpc::ByteBuffer* incoming,
                                                   grpc::ByteBuffer* reply) {
  RelayCallbacks callbacks;
  callbacks.sent = [reactor, incoming] { reactor->StartRead(incoming); };
  callbacks.received = [reply](const grpc::ByteBuffer& message) {
    *reply = message;
    return true;
  };
  callbacks.done = [fe, reactor, method, start](const grpc::Status& status) {
    fe.Record(method, status, start);
    reactor->Finish(status);
  };
  return to.OpenStream(method, context, *incoming, /*last=*/false, std::move(callbacks));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

template <typename Request, typename Response>
WriteReactor<Request, Response>::WriteReactor(FrontEnd fe, grpc::CallbackServerContext* context,
                                              CallInfo info, AdmittedCall admitted,
                                              grpc::ByteBuffer* reply, const char* method)
    : fe_(fe),
      context_(context),
      info_(std::move(info)),
      admitted_(std::move(admitted)),
      reply_(reply),
      method_(method),
      start_(absl::Now()) {
  if constexpr (std::is_same_v<Request, adapt::v1::AdaptRequest>) {
    write_ = fe_.service->StartAdapt(info_);
  } else {
    write_ = fe_.service->StartForget(info_);
  }
  StartRead(&incoming_);
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::Complete(const grpc::Status& status) {
  const grpc::Status answer = status.ok() ? SerializeMessage(response_, reply_) : status;
  fe_.Record(method_, answer, start_);
  Finish(answer);
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::Relay(const RelayTarget& to) {
  upstream_ = OpenClientStreamRelay(fe_, context_, to, method_, start_, this, &incoming_, reply_);
  std::shared_ptr<RelayStream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::OnReadDone(bool ok) {
  if (upstream_ != nullptr) {  // relaying: each message as it came
    if (ok) {
      upstream_->Send(incoming_);
    } else {
      upstream_->Close();
    }
    return;
  }
  if (!ok) {
    // End of the client's stream (or a broken one: then the commit is moot but harmless to
    // skip). The service commits only when the call is still wanted.
    write_->Commit(&response_, [this](const absl::Status& s) { Complete(ToGrpc(s)); });
    return;
  }
  if (grpc::Status parsed = ParseMessage(incoming_, &request_); !parsed.ok()) {
    Complete(parsed);
    return;
  }
  if (absl::Status denied = fe_.service->Authorize(info_, request_.tenant()); !denied.ok()) {
    Complete(ToGrpc(denied));
    return;
  }
  if (!routed_ && !request_.tenant().empty() && !request_.store().empty()) {
    // The first message that names the store routes the stream.
    if (RoutedAway(
            fe_, context_, info_, request_.tenant(), request_.store(), Access::kWrite,
            [this](const grpc::Status& refused) { Complete(refused); },
            [this](const RelayTarget& to) { Relay(to); })) {
      return;
    }
    routed_ = true;
  }
  write_->Stage(request_, [this](const absl::Status& s) {
    if (!s.ok()) {
      Complete(ToGrpc(s));
      return;
    }
    StartRead(&incoming_);
  });
}

template class WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>;
template class WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>;

// ---------------------------------------------------------------------------------------------

PredictStreamReactor::PredictStreamReactor(FrontEnd fe, grpc::CallbackServerContext* context,
                                           CallInfo info, AdmittedCall admitted)
    : fe_(fe),
      context_(context),
      info_(std::move(info)),
      admitted_(std::move(admitted)),
      start_(absl::Now()) {
  StartRead(&incoming_);
}

void PredictStreamReactor::Complete(const grpc::Status& status) {
  fe_.Record("PredictStream", status, start_);
  Finish(status);
}

void PredictStreamReactor::Answer(const absl::Status& status) {
  if (!status.ok()) {
    Complete(ToGrpc(status));
    return;
  }
  if (grpc::Status written = SerializeMessage(response_, &outgoing_); !written.ok()) {
    Complete(written);
    return;
  }
  StartWrite(&outgoing_);
}

void PredictStreamReactor::OnReadDone(bool ok) {
  if (!ok) {
    Complete(grpc::Status::OK);
    return;
  }
  if (grpc::Status parsed = ParseMessage(incoming_, &request_); !parsed.ok()) {
    Complete(parsed);
    return;
  }
  if (absl::Status denied = fe_.service->Authorize(info_, request_.tenant()); !denied.ok()) {
    Complete(ToGrpc(denied));
    return;
  }
  // Each message is routed on its own: one for another member's store is passed there as a
  // unary Predict.
  if (RoutedAway(
          fe_, /*hinted=*/nullptr, info_, request_.tenant(), request_.store(), Access::kRead,
          [this](const grpc::Status& refused) { Complete(refused); },
          [this](const RelayTarget& to) {
            to.Unary("Predict", context_, incoming_, &relayed_, [this](const grpc::Status& status) {
              if (!status.ok()) {
                Complete(status);
                return;
              }
              outgoing_ = relayed_;
              StartWrite(&outgoing_);
            });
          })) {
    return;
  }
  // Batchable, like a unary Predict; the next read starts once the answer is written.
  fe_.service->Predict(info_, request_, &response_,
                       [this](const absl::Status& status) { Answer(status); });
}

void PredictStreamReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Complete(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
    return;
  }
  StartRead(&incoming_);
}

// ---------------------------------------------------------------------------------------------

ExportReactor::ExportReactor(FrontEnd fe, const CallInfo& info, AdmittedCall admitted,
                             adapt::v1::ExportStoreRequest request)
    : fe_(fe), admitted_(std::move(admitted)), start_(absl::Now()), request_(std::move(request)) {
  fe_.service->Export(info, request_, &file_, [this](const absl::Status& status) {
    if (!status.ok()) {
      Complete(ToGrpc(status));
      return;
    }
    WriteNext();
  });
}

ExportReactor::ExportReactor(FrontEnd fe, grpc::CallbackServerContext* context,
                             AdmittedCall admitted, const RelayTarget& to,
                             const grpc::ByteBuffer& request)
    : fe_(fe), admitted_(std::move(admitted)), start_(absl::Now()) {
  RelayCallbacks callbacks;
  callbacks.received = [this](const grpc::ByteBuffer& chunk) {
    outgoing_ = chunk;
    StartWrite(&outgoing_);
    return false;  // the next chunk once this one is written (OnWriteDone)
  };
  callbacks.done = [this](const grpc::Status& status) { Complete(status); };
  upstream_ = to.OpenStream("ExportStore", context, request, /*last=*/true, std::move(callbacks));
  std::shared_ptr<RelayStream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

void ExportReactor::Complete(const grpc::Status& status) {
  fe_.Record("ExportStore", status, start_);
  Finish(status);
}

void ExportReactor::WriteNext() {
  if (offset_ >= file_.size()) {
    Complete(grpc::Status::OK);
    return;
  }
  const size_t n = std::min(fe_.service->export_chunk_bytes(), file_.size() - offset_);
  adapt::v1::StoreChunk chunk;
  chunk.set_data(file_.substr(offset_, n));
  offset_ += n;
  if (grpc::Status written = SerializeMessage(chunk, &outgoing_); !written.ok()) {
    Complete(written);
    return;
  }
  StartWrite(&outgoing_);
}

void ExportReactor::OnWriteDone(bool ok) {
  if (upstream_ != nullptr) {
    // Relaying: the next chunk from upstream. A failed write means the caller is gone; the
    // cancellation reaches the upstream call, which then ends (and Complete runs).
    if (ok) upstream_->Resume();
    return;
  }
  if (!ok) {
    Complete(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
    return;
  }
  WriteNext();
}

// ---------------------------------------------------------------------------------------------

ImportReactor::ImportReactor(FrontEnd fe, grpc::CallbackServerContext* context, CallInfo info,
                             AdmittedCall admitted, grpc::ByteBuffer* reply)
    : fe_(fe),
      context_(context),
      info_(std::move(info)),
      admitted_(std::move(admitted)),
      reply_(reply),
      start_(absl::Now()),
      import_(fe_.service->StartImport(info_)) {
  StartRead(&incoming_);
}

void ImportReactor::Complete(const grpc::Status& status) {
  const grpc::Status answer = status.ok() ? SerializeMessage(response_, reply_) : status;
  fe_.Record("ImportStore", answer, start_);
  Finish(answer);
}

void ImportReactor::Relay(const RelayTarget& to) {
  upstream_ =
      OpenClientStreamRelay(fe_, context_, to, "ImportStore", start_, this, &incoming_, reply_);
  std::shared_ptr<RelayStream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

void ImportReactor::OnReadDone(bool ok) {
  if (upstream_ != nullptr) {  // relaying: each chunk as it came
    if (ok) {
      upstream_->Send(incoming_);
    } else {
      upstream_->Close();
    }
    return;
  }
  if (!ok) {
    import_->Commit(&response_, [this](const absl::Status& status) { Complete(ToGrpc(status)); });
    return;
  }
  if (grpc::Status parsed = ParseMessage(incoming_, &chunk_); !parsed.ok()) {
    Complete(parsed);
    return;
  }
  if (absl::Status denied = fe_.service->Authorize(info_, chunk_.tenant()); !denied.ok()) {
    Complete(ToGrpc(denied));
    return;
  }
  // The first chunk that names the store routes the stream.
  if (!import_->named() &&
      RoutedAway(
          fe_, context_, info_, chunk_.tenant(), chunk_.store(), Access::kCreate,
          [this](const grpc::Status& refused) { Complete(refused); },
          [this](const RelayTarget& to) { Relay(to); })) {
    return;
  }
  if (absl::Status added = import_->Add(chunk_); !added.ok()) {
    Complete(ToGrpc(added));
    return;
  }
  StartRead(&incoming_);
}

}  // namespace adaptd
