// Forwarding (docs/CLUSTER_ETCD.md, "Routing"): in a cluster, a member that does not hold a
// call's shard passes the call to the holder, once, and answers with the holder's reply. A
// forwarded call carries the caller's deadline (and cancellation), its metadata (credentials
// included: the holder authenticates and authorizes again) and `adaptd-forwarded: <this
// member>`; a member that receives a forwarded call never forwards it again (EtcdCluster::Route
// decides where a call runs).
//
// Messages travel raw (the bytes the caller sent), so forwarding parses nothing it does not
// need. Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_FORWARDING_H_
#define ADAPTD_SERVER_CLUSTER_FORWARDING_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/cluster/membership.h"
#include "server/cluster/routing.h"
#include "server/metrics/metrics.h"

namespace adaptd {

// The metadata key that marks a forwarded call; its value names the member that forwarded it.
inline constexpr char kForwardedHeader[] = "adaptd-forwarded";

// Who a gRPC call came from: forwarded by another member (kForwardedHeader), or not.
cluster::CallOrigin CallOriginOf(const grpc::ServerContextBase& context);

// A streaming call passed to another member, message by message (the caller's stream drives
// it): Send writes one message (`sent` runs when it is out; send the next only then), Close
// half-closes; each message the member sends runs `received` (the buffer is valid during the
// call), which returns true to read the next at once or false to pause until Resume; `done`
// runs once with the member's status, after which nothing else runs and Send, Close and
// Resume do nothing. Every method may be called from any thread.
class RelayStream {
 public:
  virtual ~RelayStream() = default;
  virtual void Send(const grpc::ByteBuffer& message) = 0;
  virtual void Close() = 0;
  virtual void Resume() = 0;
  // Begins the call, which OpenStream only prepares: the caller holds the stream before
  // any callback can run. A callback may finish the caller's call at once: call it last.
  virtual void Start() = 0;
};
struct RelayCallbacks {
  std::function<void()> sent;
  std::function<bool(const grpc::ByteBuffer&)> received;
  std::function<void(const grpc::Status&)> done;
};

class Forwarder {
 public:
  // From the config's `cluster` (which ValidateConfig checked); channels to the other members
  // use TLS when the server does (docs/CLUSTER_ETCD.md, "Security between members").
  static absl::StatusOr<std::unique_ptr<Forwarder>> Create(const adapt::v1::ServerConfig& config,
                                                           Metrics* metrics);

  // This member alone (the others are registered in etcd: EtcdCluster).
  const cluster::Membership& membership() const { return membership_; }

  // The channel to `member` (one per address, shared by every call to it).
  std::shared_ptr<grpc::Channel> ChannelFor(const cluster::Member& member) ABSL_LOCKS_EXCLUDED(mu_);

  // Passes a unary call to `owner`. `done` runs once, on a gRPC thread, with the owner's
  // status; `response` then holds the owner's reply.
  void Unary(const cluster::Member& owner, const char* method, grpc::CallbackServerContext* context,
             const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
             std::function<void(const grpc::Status&)> done);

  // Passes a request already parsed (its serialized bytes) to `owner` from outside a gRPC
  // call (the HTTP front end, docs/HTTP.md "A cluster"): the call carries `deadline`,
  // `metadata` (credentials included) and the forwarded mark. `done` runs once, on a gRPC
  // thread, with the owner's status; `response` then holds the owner's reply's bytes.
  void UnaryMessage(const cluster::Member& owner, const char* method, std::string request,
                    absl::Time deadline,
                    const std::vector<std::pair<std::string, std::string>>& metadata,
                    std::string* response, std::function<void(const grpc::Status&)> done);

  // Prepares the stream with `first` as its first message (with `last`, the only one: the
  // stream is half-closed with it); Stream::Start begins it.
  std::shared_ptr<RelayStream> OpenStream(const cluster::Member& owner, const char* method,
                                          grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer& first, bool last,
                                          RelayCallbacks callbacks);

  // Counts a forwarded call's outcome (adaptd_forwarded_calls_total).
  void Record(const char* method, const grpc::Status& status) const;

 private:
  Forwarder(cluster::Membership membership, std::shared_ptr<grpc::ChannelCredentials> credentials,
            int max_message_bytes, Metrics* metrics)
      : membership_(std::move(membership)),
        credentials_(std::move(credentials)),
        max_message_bytes_(max_message_bytes),
        metrics_(metrics) {}
  grpc::GenericStub* StubFor(const cluster::Member& member) ABSL_LOCKS_EXCLUDED(mu_);
  // A client context for the call to the owner: the caller's deadline, cancellation and
  // metadata, and the forwarded mark.
  std::unique_ptr<grpc::ClientContext> ContextFor(grpc::CallbackServerContext* context) const;

  const cluster::Membership membership_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const int max_message_bytes_;
  Metrics* const metrics_;  // nullable
  absl::Mutex mu_;
  // By the member's address.
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<grpc::GenericStub>> stubs_ ABSL_GUARDED_BY(mu_);
};

// Where the service routed a call: the member and the forwarder that reaches it. What a gRPC
// front end holds to relay the caller's bytes there. Copyable; valid while the forwarder is.
class RelayTarget {
 public:
  RelayTarget(Forwarder* forwarder, const cluster::Member* to) : forwarder_(forwarder), to_(to) {}

  const std::string& name() const { return to_->name; }
  // Forwarder::Unary and Forwarder::OpenStream, to this target.
  void Unary(const char* method, grpc::CallbackServerContext* context,
             const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
             std::function<void(const grpc::Status&)> done) const {
    forwarder_->Unary(*to_, method, context, request, response, std::move(done));
  }
  std::shared_ptr<RelayStream> OpenStream(const char* method, grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer& first, bool last,
                                          RelayCallbacks callbacks) const {
    return forwarder_->OpenStream(*to_, method, context, first, last, std::move(callbacks));
  }

 private:
  Forwarder* forwarder_;
  const cluster::Member* to_;
};

// A streaming call to another member from outside a gRPC call (the HTTP front end,
// docs/HTTP.md "A cluster"): the stream, and the cancellation of its call (the caller's
// connection gone), which ends it CANCELLED at once. `cancel` may be called from any thread,
// any number of times, also after the call ended.
struct MessageStream {
  std::shared_ptr<RelayStream> stream;
  std::function<void()> cancel;
};

// Prepares a stream to `owner` as Forwarder::OpenStream does, `first` its first message's bytes
// (with `last`, the only one), with no gRPC server context: the call carries `deadline`,
// `metadata` (credentials included) and the forwarded mark, as Forwarder::UnaryMessage's.
// RelayStream::Start begins it; its outcome is counted as the forwarder's other calls.
MessageStream OpenMessageStream(Forwarder& forwarder, const cluster::Member& owner,
                                const char* method, absl::Time deadline,
                                const std::vector<std::pair<std::string, std::string>>& metadata,
                                const std::string& first, bool last, RelayCallbacks callbacks);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_FORWARDING_H_
