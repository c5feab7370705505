#include "server/rpc/stream_reactors.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/rpc/predict_batch.h"
#include "server/rpc/wire.h"

namespace adaptd {
namespace {

void Fill(const adapt::v1::AdaptResponse& result, adapt::v1::AdaptResponse* response) {
  *response = result;
}

void Fill(const adapt::v1::AdaptResponse& result, adapt::v1::ForgetResponse* response) {
  response->set_forgotten(result.accepted());
  response->set_version(result.version());
}

absl::Status Stage(WriteSession& session, const adapt::v1::AdaptRequest& request) {
  return session.Add(request.tenant(), request.store(), request.examples(), request.sequence(),
                     request.passes(), request.restart_sequence(), request.sequence_ids());
}

absl::Status Stage(WriteSession& session, const adapt::v1::ForgetRequest& request) {
  return session.Add(request.tenant(), request.store(), request.examples());
}

// A client stream (Adapt, Forget, ImportStore) relayed to its store's owner from its first
// message, `*incoming` (forwarding.h): the caller's next message is read once the owner took
// the last, the owner's reply lands in `*reply`, and its status finishes `reactor`. Not
// started: the caller keeps the Stream, then calls Start last.
template <typename Reactor>
std::shared_ptr<Forwarder::Stream> OpenClientStreamRelay(
    const ServiceContext& ctx, grpc::CallbackServerContext* context, const cluster::Member& owner,
    const char* method, absl::Time start, Reactor* reactor, grpc::ByteBuffer* incoming,
    grpc::ByteBuffer* reply) {
  Forwarder::StreamCallbacks callbacks;
  callbacks.sent = [reactor, incoming] { reactor->StartRead(incoming); };
  callbacks.received = [reply](const grpc::ByteBuffer& message) {
    *reply = message;
    return true;
  };
  callbacks.done = [ctx, reactor, method, start](const grpc::Status& status) {
    ctx.Record(method, status, start);
    reactor->Finish(status);
  };
  return ctx.forwarder->OpenStream(owner, method, context, *incoming, /*last=*/false,
                                   std::move(callbacks));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

template <typename Request, typename Response>
WriteReactor<Request, Response>::WriteReactor(ServiceContext ctx,
                                              grpc::CallbackServerContext* context,
                                              AdmittedCall admitted, grpc::ByteBuffer* reply,
                                              TxnKind kind, const char* method)
    : ctx_(ctx),
      context_(context),
      admitted_(std::move(admitted)),
      reply_(reply),
      method_(method),
      start_(absl::Now()),
      session_(ctx.engine->StartWrite(kind)) {
  StartRead(&incoming_);
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::Complete(const grpc::Status& status) {
  const grpc::Status answer = status.ok() ? SerializeMessage(response_, reply_) : status;
  ctx_.Record(method_, answer, start_);
  Finish(answer);
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::Relay(const cluster::Member& owner) {
  upstream_ =
      OpenClientStreamRelay(ctx_, context_, owner, method_, start_, this, &incoming_, reply_);
  std::shared_ptr<Forwarder::Stream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::OnReadDone(bool ok) {
  if (upstream_ != nullptr) {  // relaying to the owner: each message as it came
    if (ok) {
      upstream_->Send(incoming_);
    } else {
      upstream_->Close();
    }
    return;
  }
  if (!ok) {
    // End of the client's stream (or a broken one: then the commit is moot but harmless to
    // skip). Commit only when the call is still wanted.
    // Commits run in the store's lane: commits to one store apply in arrival order.
    Task task = CallTask(context_, tenant_);
    task.lane = lane_;
    task.run = [this](const absl::Status& wanted) {
      if (wanted.ok()) {
        Commit();
      } else {
        Complete(ToGrpc(wanted));
      }
    };
    if (const absl::Status queued = ctx_.scheduler->Submit(std::move(task)); !queued.ok()) {
      Complete(ToGrpc(queued));
    }
    return;
  }
  if (grpc::Status parsed = ParseMessage(incoming_, &request_); !parsed.ok()) {
    Complete(parsed);
    return;
  }
  if (auto denied = ctx_.Authorize(*context_, request_.tenant()); !denied.ok()) {
    Complete(denied);
    return;
  }
  if (tenant_.empty() && !request_.tenant().empty() && !request_.store().empty()) {
    // In a cluster, the first message names the owner.
    const cluster::Member* owner = nullptr;
    if (grpc::Status routed =
            ctx_.Route(*context_, request_.tenant(), request_.store(), Access::kWrite, &owner);
        !routed.ok()) {
      Complete(routed);
      return;
    }
    if (owner != nullptr) {
      Relay(*owner);
      return;
    }
    tenant_ = request_.tenant();
    lane_ = absl::StrCat(request_.tenant(), "/", request_.store());
  }
  Task task = CallTask(context_, tenant_);
  task.run = [this](const absl::Status& wanted) {
    if (!wanted.ok()) {
      Complete(ToGrpc(wanted));
      return;
    }
    absl::Status status = Stage(*session_, request_);
    if (!status.ok()) {
      Complete(ToGrpc(status));
      return;
    }
    StartRead(&incoming_);
  };
  if (const absl::Status queued = ctx_.scheduler->Submit(std::move(task)); !queued.ok()) {
    Complete(ToGrpc(queued));
  }
}

template <typename Request, typename Response>
void WriteReactor<Request, Response>::Commit() {
  grpc::Status wanted = CallStillWanted(context_);
  if (!wanted.ok()) {
    Complete(wanted);
    return;
  }
  auto result = session_->Finish();
  if (result.ok()) Fill(*result, &response_);
  Complete(ToGrpc(result.status()));
}

template class WriteReactor<adapt::v1::AdaptRequest, adapt::v1::AdaptResponse>;
template class WriteReactor<adapt::v1::ForgetRequest, adapt::v1::ForgetResponse>;

// ---------------------------------------------------------------------------------------------

PredictStreamReactor::PredictStreamReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                                           AdmittedCall admitted)
    : ctx_(ctx), context_(context), admitted_(std::move(admitted)), start_(absl::Now()) {
  StartRead(&incoming_);
}

void PredictStreamReactor::Complete(const grpc::Status& status) {
  ctx_.Record("PredictStream", status, start_);
  Finish(status);
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
  if (auto denied = ctx_.Authorize(*context_, request_.tenant()); !denied.ok()) {
    Complete(denied);
    return;
  }
  // In a cluster, a message for another member's store goes there.
  const cluster::Member* owner = nullptr;
  if (grpc::Status routed =
          ctx_.Route(*context_, request_.tenant(), request_.store(), Access::kRead, &owner);
      !routed.ok()) {
    Complete(routed);
    return;
  }
  if (owner != nullptr) {
    ctx_.forwarder->Unary(*owner, "Predict", context_, incoming_, &forwarded_,
                          [this](const grpc::Status& status) {
                            if (!status.ok()) {
                              Complete(status);
                              return;
                            }
                            outgoing_ = forwarded_;
                            StartWrite(&outgoing_);
                          });
    return;
  }
  // Batchable, like a unary Predict; the next read starts once the answer is written.
  Task task = CallTask(context_, request_.tenant());
  task.run = [this](const absl::Status& dropped) { Complete(ToGrpc(dropped)); };
  task.batch_item = std::make_unique<PredictItem>(
      &request_, [this](absl::StatusOr<adapt::v1::PredictResponse> result) {
        if (!result.ok()) {
          Complete(ToGrpc(result.status()));
          return;
        }
        if (grpc::Status written = SerializeMessage(*result, &outgoing_); !written.ok()) {
          Complete(written);
          return;
        }
        StartWrite(&outgoing_);
      });
  if (const absl::Status queued = ctx_.scheduler->Submit(std::move(task)); !queued.ok()) {
    Complete(ToGrpc(queued));
  }
}

void PredictStreamReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Complete(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
    return;
  }
  StartRead(&incoming_);
}

// ---------------------------------------------------------------------------------------------

ExportReactor::ExportReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                             AdmittedCall admitted, adapt::v1::ExportStoreRequest request)
    : ctx_(ctx), admitted_(std::move(admitted)), start_(absl::Now()) {
  Task task = CallTask(context, request.tenant());
  task.run = [this, request](const absl::Status& wanted) {
    if (!wanted.ok()) {
      Complete(ToGrpc(wanted));
      return;
    }
    auto file = ctx_.engine->Export(request);
    if (!file.ok()) {
      Complete(ToGrpc(file.status()));
      return;
    }
    file_ = *std::move(file);
    WriteNext();
  };
  if (const absl::Status queued = ctx_.scheduler->Submit(std::move(task)); !queued.ok()) {
    Complete(ToGrpc(queued));
  }
}

ExportReactor::ExportReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                             AdmittedCall admitted, const cluster::Member& owner,
                             const grpc::ByteBuffer& request)
    : ctx_(ctx), admitted_(std::move(admitted)), start_(absl::Now()) {
  Forwarder::StreamCallbacks callbacks;
  callbacks.received = [this](const grpc::ByteBuffer& chunk) {
    outgoing_ = chunk;
    StartWrite(&outgoing_);
    return false;  // the next chunk once this one is written (OnWriteDone)
  };
  callbacks.done = [this](const grpc::Status& status) { Complete(status); };
  upstream_ = ctx_.forwarder->OpenStream(owner, "ExportStore", context, request, /*last=*/true,
                                         std::move(callbacks));
  std::shared_ptr<Forwarder::Stream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

void ExportReactor::Complete(const grpc::Status& status) {
  ctx_.Record("ExportStore", status, start_);
  Finish(status);
}

void ExportReactor::WriteNext() {
  if (offset_ >= file_.size()) {
    Complete(grpc::Status::OK);
    return;
  }
  const size_t n = std::min(ctx_.export_chunk_bytes, file_.size() - offset_);
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
    // Relaying: the next chunk from the owner. A failed write means the caller is gone; the
    // cancellation reaches the owner's call, which then ends (and Complete runs).
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

ImportReactor::ImportReactor(ServiceContext ctx, grpc::CallbackServerContext* context,
                             AdmittedCall admitted, grpc::ByteBuffer* reply)
    : ctx_(ctx),
      context_(context),
      admitted_(std::move(admitted)),
      reply_(reply),
      start_(absl::Now()) {
  StartRead(&incoming_);
}

void ImportReactor::Complete(const grpc::Status& status) {
  const grpc::Status answer = status.ok() ? SerializeMessage(response_, reply_) : status;
  ctx_.Record("ImportStore", answer, start_);
  Finish(answer);
}

void ImportReactor::Relay(const cluster::Member& owner) {
  upstream_ =
      OpenClientStreamRelay(ctx_, context_, owner, "ImportStore", start_, this, &incoming_, reply_);
  std::shared_ptr<Forwarder::Stream> upstream = upstream_;
  upstream->Start();  // may finish this call: nothing after it
}

void ImportReactor::OnReadDone(bool ok) {
  if (upstream_ != nullptr) {  // relaying to the owner: each chunk as it came
    if (ok) {
      upstream_->Send(incoming_);
    } else {
      upstream_->Close();
    }
    return;
  }
  if (ok) {
    if (grpc::Status parsed = ParseMessage(incoming_, &chunk_); !parsed.ok()) {
      Complete(parsed);
      return;
    }
    if (auto denied = ctx_.Authorize(*context_, chunk_.tenant()); !denied.ok()) {
      Complete(denied);
      return;
    }
    if (tenant_.empty() && store_.empty()) {
      // In a cluster, the first chunk names the owner.
      const cluster::Member* owner = nullptr;
      if (grpc::Status routed =
              ctx_.Route(*context_, chunk_.tenant(), chunk_.store(), Access::kCreate, &owner);
          !routed.ok()) {
        Complete(routed);
        return;
      }
      if (owner != nullptr) {
        Relay(*owner);
        return;
      }
      tenant_ = chunk_.tenant();
      store_ = chunk_.store();
      applied_ids_.assign(chunk_.applied_ids().begin(), chunk_.applied_ids().end());
      moved_ = ctx_.handoff != nullptr && ctx_.handoff->IsMove(*context_);
    } else if ((!chunk_.tenant().empty() && chunk_.tenant() != tenant_) ||
               (!chunk_.store().empty() && chunk_.store() != store_)) {
      Complete(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "store: later chunks must name the same store as the first"));
      return;
    }
    if (file_.size() + chunk_.data().size() > ctx_.max_import_bytes) {
      Complete(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            absl::StrCat("data: the snapshot exceeds the import limit of ",
                                         ctx_.max_import_bytes, " bytes")));
      return;
    }
    file_.append(chunk_.data());
    StartRead(&incoming_);
    return;
  }
  Task task = CallTask(context_, tenant_);
  task.lane = absl::StrCat(tenant_, "/", store_);
  task.run = [this](const absl::Status& wanted) {
    if (!wanted.ok()) {
      Complete(ToGrpc(wanted));
      return;
    }
    auto import = [this] {
      auto info = ctx_.engine->Import(tenant_, store_, file_, applied_ids_, moved_);
      if (info.ok()) response_ = *std::move(info);
      return info.status();
    };
    // A hand-off brings a store the tenant has already: no slot in its count.
    Complete(ToGrpc(moved_ ? import()
                           : ctx_.CreateCounted(tenant_, store_, CallDeadline(*context_), import)));
  };
  if (const absl::Status queued = ctx_.scheduler->Submit(std::move(task)); !queued.ok()) {
    Complete(ToGrpc(queued));
  }
}

}  // namespace adaptd
