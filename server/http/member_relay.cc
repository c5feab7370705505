#include "server/http/member_relay.h"

#include <deque>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/base/grpc_status.h"
#include "server/cluster/forwarding.h"

namespace adaptd::http {
namespace {

// How often a wait on the member looks at the caller's cancellation probe (the server
// stopping).
constexpr absl::Duration kProbeEvery = absl::Milliseconds(100);

// The metadata a relayed call carries: the caller's credential, as gRPC's, so the owner
// authenticates and authorizes it again.
std::vector<std::pair<std::string, std::string>> MetadataOf(const CallInfo& call) {
  std::vector<std::pair<std::string, std::string>> metadata;
  if (call.authorization.has_value()) {
    metadata.emplace_back("authorization", std::string(*call.authorization));
  }
  return metadata;
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// What the stream's callbacks (on gRPC's threads) and the connection thread share.
struct StreamState {
  absl::Mutex mu;
  bool sending ABSL_GUARDED_BY(mu) = true;  // the first message is out until `sent`
  std::deque<std::string> received ABSL_GUARDED_BY(mu);
  bool done ABSL_GUARDED_BY(mu) = false;
  grpc::Status status ABSL_GUARDED_BY(mu);
};

// A MemberStream over a Forwarder's MessageStream: each message the member sends pauses the
// stream until Next takes it, so at most one waits here.
class ForwardedStream final : public MemberStream {
 public:
  ForwardedStream(std::shared_ptr<StreamState> state, MessageStream call,
                  std::function<bool()> cancelled)
      : state_(std::move(state)), call_(std::move(call)), cancelled_(std::move(cancelled)) {}
  ~ForwardedStream() override {
    bool done = false;
    {
      absl::MutexLock lock(&state_->mu);
      done = state_->done;
    }
    if (!done) call_.cancel();  // it ends on its own; its callbacks hold what they touch
  }

  bool Send(std::string message) override {
    {
      absl::MutexLock lock(&state_->mu);
      Await(absl::Condition(
          +[](StreamState* s)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) { return !s->sending || s->done; },
          state_.get()));
      if (state_->done) return false;
      state_->sending = true;
    }
    grpc::Slice slice(message);
    call_.stream->Send(grpc::ByteBuffer(&slice, 1));
    return true;
  }

  bool Next(std::string* message) override {
    {
      absl::MutexLock lock(&state_->mu);
      Await(absl::Condition(
          +[](StreamState* s)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) { return !s->received.empty() || s->done; },
          state_.get()));
      if (state_->received.empty()) return false;
      *message = std::move(state_->received.front());
      state_->received.pop_front();
    }
    call_.stream->Resume();
    return true;
  }

  absl::Status Finish(std::string* last) override {
    call_.stream->Close();
    std::string message;
    while (Next(&message)) *last = std::move(message);  // Next is false once the call ended
    absl::MutexLock lock(&state_->mu);
    return FromGrpc(state_->status);
  }

  void Cancel() override { call_.cancel(); }

 private:
  // Waits for `condition`, cancelling the call once the caller's probe says so meanwhile (the
  // call then ends, which every condition waits for too).
  void Await(const absl::Condition& condition) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu) {
    while (!state_->mu.AwaitWithTimeout(condition, kProbeEvery)) {
      if (cancelled_ && cancelled_()) {
        state_->mu.Unlock();  // cancelling may run the call's callbacks, which take the lock
        call_.cancel();
        state_->mu.Lock();
      }
    }
  }

  const std::shared_ptr<StreamState> state_;
  const MessageStream call_;
  const std::function<bool()> cancelled_;
};

}  // namespace

Relays RelaysOver(Forwarder* forwarder) {
  if (forwarder == nullptr) return {};
  Relays relays;
  relays.unary = [forwarder](const cluster::Member& to, const char* method, std::string request,
                             const CallInfo& call, std::string* response, Service::Done done) {
    forwarder->UnaryMessage(
        to, method, std::move(request), call.deadline, MetadataOf(call), response,
        [done = std::move(done)](const grpc::Status& status) { done(FromGrpc(status)); });
  };
  relays.stream = [forwarder](const cluster::Member& to, const char* method,
                              const std::string& first, bool last,
                              const CallInfo& call) -> std::unique_ptr<MemberStream> {
    auto state = std::make_shared<StreamState>();
    RelayCallbacks callbacks;
    callbacks.sent = [state] {
      absl::MutexLock lock(&state->mu);
      state->sending = false;
    };
    callbacks.received = [state](const grpc::ByteBuffer& message) {
      std::string bytes = BytesOf(message);
      absl::MutexLock lock(&state->mu);
      state->received.push_back(std::move(bytes));
      return false;  // paused until Next takes it
    };
    callbacks.done = [state](const grpc::Status& status) {
      absl::MutexLock lock(&state->mu);
      state->status = status;
      state->done = true;
    };
    MessageStream opened = OpenMessageStream(*forwarder, to, method, call.deadline,
                                             MetadataOf(call), first, last, std::move(callbacks));
    std::shared_ptr<RelayStream> stream = opened.stream;
    auto relayed =
        std::make_unique<ForwardedStream>(std::move(state), std::move(opened), call.cancelled);
    stream->Start();
    return relayed;
  };
  return relays;
}

}  // namespace adaptd::http
