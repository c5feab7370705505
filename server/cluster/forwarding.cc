#include "server/cluster/forwarding.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_callback.h"
#include "server/base/grpc_status.h"
#include "server/config/config.h"

namespace adaptd {
namespace {

constexpr char kServicePath[] = "/adapt.v1.Adaptation/";

absl::StatusOr<std::string> ReadFile(const char* field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(field, " ", path, ": cannot be read"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Metadata a forwarded call must not copy: gRPC's own and the transport's.
bool CopiedHeader(absl::string_view key) {
  return !key.empty() && key[0] != ':' && !absl::StartsWith(key, "grpc-") &&
         key != "content-type" && key != "user-agent" && key != "te" && key != "host" &&
         key != "accept-encoding" && key != kForwardedHeader;
}

// One forwarded streaming call: a client bidi reactor over the generic stub, which serves
// every shape of stream (the owner's handler decides what the stream means). A hold keeps the
// call open until the owner's stream has ended and no write is out, so no Start* call from
// the caller's side (Send, Close, Resume) ever meets a finished call.
class StreamCall final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                         public RelayStream,
                         public std::enable_shared_from_this<StreamCall> {
 public:
  StreamCall(std::unique_ptr<grpc::ClientContext> context, RelayCallbacks callbacks)
      : context_(std::move(context)), callbacks_(std::move(callbacks)) {}

  // Prepared, not started: Start begins the call.
  void Prepare(grpc::GenericStub* stub, std::string path, const grpc::ByteBuffer& first,
               bool last) {
    stub_ = stub;
    path_ = std::move(path);
    absl::MutexLock lock(&mu_);
    outgoing_ = first;
    closed_ = half_closed_ = last;
  }

  void Start() override {
    bool last = false;
    {
      absl::MutexLock lock(&mu_);
      if (started_) return;
      started_ = true;
      writing_ = true;
      last = closed_;
    }
    self_ = shared_from_this();  // until OnDone
    stub_->PrepareBidiStreamingCall(context_.get(), path_, grpc::StubOptions(), this);
    AddHold();  // released when the owner's stream has ended and no write is out
    if (last) {
      StartWriteLast(&outgoing_, grpc::WriteOptions());
    } else {
      StartWrite(&outgoing_);
    }
    StartRead(&incoming_);
    StartCall();
  }

  void Send(const grpc::ByteBuffer& message) override {
    {
      absl::MutexLock lock(&mu_);
      if (!started_ || owner_ended_ || closed_ || writing_) return;
      writing_ = true;
      outgoing_ = message;
    }
    StartWrite(&outgoing_);
  }
  void Close() override {
    {
      absl::MutexLock lock(&mu_);
      if (owner_ended_ || closed_) return;
      closed_ = true;
      if (writing_) return;  // OnWriteDone half-closes
      half_closed_ = true;
    }
    StartWritesDone();
  }
  void Resume() override {
    {
      absl::MutexLock lock(&mu_);
      if (owner_ended_) return;
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    bool half_close = false, release = false, closed = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      closed = closed_;
      half_close = ok && closed_ && !half_closed_ && !owner_ended_;
      if (half_close) half_closed_ = true;
      release = owner_ended_;
    }
    if (half_close) StartWritesDone();
    if (release) {
      RemoveHold();
      return;
    }
    // A failed write means the call is ending: the owner's stream ends too, then OnDone.
    if (ok && !closed && callbacks_.sent) callbacks_.sent();
  }
  void OnReadDone(bool ok) override {
    if (ok) {
      if (callbacks_.received(incoming_)) StartRead(&incoming_);  // else paused until Resume
      return;
    }
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      owner_ended_ = true;
      release = !writing_;
    }
    if (release) RemoveHold();  // OnDone follows, with the owner's status
  }
  void OnDone(const grpc::Status& status) override {
    callbacks_.done(status);
    std::shared_ptr<StreamCall> self = std::move(self_);  // may delete this on return
  }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  const RelayCallbacks callbacks_;
  grpc::ByteBuffer incoming_, outgoing_;
  std::shared_ptr<StreamCall> self_;
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool owner_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;  // WritesDone (or the last write) is out
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  grpc::GenericStub* stub_ = nullptr;
  std::string path_;
};

}  // namespace

cluster::CallOrigin CallOriginOf(const grpc::ServerContextBase& context) {
  cluster::CallOrigin origin;
  const auto& metadata = context.client_metadata();
  if (const auto from = metadata.find(kForwardedHeader); from != metadata.end()) {
    origin.forwarded = true;
    origin.forwarded_by.assign(from->second.data(), from->second.size());
  }
  return origin;
}

absl::StatusOr<std::unique_ptr<Forwarder>> Forwarder::Create(const adapt::v1::ServerConfig& config,
                                                             Metrics* metrics) {
  absl::StatusOr<cluster::Membership> membership = ClusterMembership(config);
  if (!membership.ok()) return membership.status();
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!config.tls_cert_file().empty()) {
    // The members present their own server certificate and trust the client CA (the one that
    // signs every member's certificate) or, without one, the system's roots.
    grpc::SslCredentialsOptions tls;
    absl::StatusOr<std::string> cert = ReadFile("tls_cert_file", config.tls_cert_file());
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("tls_key_file", config.tls_key_file());
    if (!key.ok()) return key.status();
    tls.pem_cert_chain = *cert;
    tls.pem_private_key = *key;
    if (!config.tls_client_ca_file().empty()) {
      absl::StatusOr<std::string> ca = ReadFile("tls_client_ca_file", config.tls_client_ca_file());
      if (!ca.ok()) return ca.status();
      tls.pem_root_certs = *ca;
    }
    credentials = grpc::SslCredentials(tls);
  }
  return std::unique_ptr<Forwarder>(new Forwarder(*std::move(membership), std::move(credentials),
                                                  static_cast<int>(config.max_message_bytes()),
                                                  metrics));
}

std::shared_ptr<grpc::Channel> Forwarder::ChannelFor(const cluster::Member& member) {
  absl::MutexLock lock(&mu_);
  // By address: a member of a cluster on etcd may come back elsewhere under its name.
  std::shared_ptr<grpc::Channel>& channel = channels_[member.address];
  if (channel == nullptr) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(max_message_bytes_);
    args.SetMaxSendMessageSize(max_message_bytes_);
    channel = grpc::CreateCustomChannel(member.address, credentials_, args);
  }
  return channel;
}

grpc::GenericStub* Forwarder::StubFor(const cluster::Member& member) {
  std::shared_ptr<grpc::Channel> channel = ChannelFor(member);
  absl::MutexLock lock(&mu_);
  std::unique_ptr<grpc::GenericStub>& stub = stubs_[member.address];
  if (stub == nullptr) stub = std::make_unique<grpc::GenericStub>(std::move(channel));
  return stub.get();
}

std::unique_ptr<grpc::ClientContext> Forwarder::ContextFor(
    grpc::CallbackServerContext* context) const {
  // The caller's deadline and cancellation carry over to the call to the owner.
  std::unique_ptr<grpc::ClientContext> out =
      grpc::ClientContext::FromCallbackServerContext(*context);
  for (const auto& [key, value] : context->client_metadata()) {
    const absl::string_view k(key.data(), key.size());
    if (CopiedHeader(k)) out->AddMetadata(std::string(k), std::string(value.data(), value.size()));
  }
  out->AddMetadata(kForwardedHeader, membership_.self().name);
  return out;
}

void Forwarder::Unary(const cluster::Member& owner, const char* method,
                      grpc::CallbackServerContext* context, const grpc::ByteBuffer& request,
                      grpc::ByteBuffer* response, std::function<void(const grpc::Status&)> done) {
  std::shared_ptr<grpc::ClientContext> client = ContextFor(context);
  StubFor(owner)->UnaryCall(client.get(), absl::StrCat(kServicePath, method), grpc::StubOptions(),
                            &request, response,
                            [this, client, method, done = std::move(done)](grpc::Status status) {
                              Record(method, status);
                              done(status);
                            });
}

void Forwarder::UnaryMessage(const cluster::Member& owner, const char* method, std::string request,
                             absl::Time deadline,
                             const std::vector<std::pair<std::string, std::string>>& metadata,
                             std::string* response, std::function<void(const grpc::Status&)> done) {
  auto client = std::make_shared<grpc::ClientContext>();
  if (deadline != absl::InfiniteFuture()) client->set_deadline(absl::ToChronoTime(deadline));
  for (const auto& [key, value] : metadata) client->AddMetadata(key, value);
  client->AddMetadata(kForwardedHeader, membership_.self().name);
  grpc::Slice slice(request);
  auto sent = std::make_shared<grpc::ByteBuffer>(&slice, 1);
  auto reply = std::make_shared<grpc::ByteBuffer>();
  StubFor(owner)->UnaryCall(
      client.get(), absl::StrCat(kServicePath, method), grpc::StubOptions(), sent.get(),
      reply.get(),
      [this, client, sent, reply, response, method, done = std::move(done)](grpc::Status status) {
        if (status.ok()) {
          std::vector<grpc::Slice> slices;
          status = reply->Dump(&slices);
          response->clear();
          for (const grpc::Slice& s : slices) {
            response->append(reinterpret_cast<const char*>(s.begin()), s.size());
          }
        }
        Record(method, status);
        done(status);
      });
}

std::shared_ptr<RelayStream> Forwarder::OpenStream(const cluster::Member& owner, const char* method,
                                                   grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer& first, bool last,
                                                   RelayCallbacks callbacks) {
  auto done = std::move(callbacks.done);
  callbacks.done = [this, method, done = std::move(done)](const grpc::Status& status) {
    Record(method, status);
    done(status);
  };
  auto call = std::make_shared<StreamCall>(ContextFor(context), std::move(callbacks));
  call->Prepare(StubFor(owner), absl::StrCat(kServicePath, method), first, last);
  return call;
}

void Forwarder::Record(const char* method, const grpc::Status& status) const {
  if (metrics_ != nullptr) metrics_->RecordForwarded(method, CodeName(status.error_code()));
}

MessageStream OpenMessageStream(Forwarder& forwarder, const cluster::Member& owner,
                                const char* method, absl::Time deadline,
                                const std::vector<std::pair<std::string, std::string>>& metadata,
                                const std::string& first, bool last, RelayCallbacks callbacks) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (deadline != absl::InfiniteFuture()) context->set_deadline(absl::ToChronoTime(deadline));
  for (const auto& [key, value] : metadata) context->AddMetadata(key, value);
  context->AddMetadata(kForwardedHeader, forwarder.membership().self().name);
  grpc::ClientContext* const cancellable = context.get();  // lives as long as the call
  // The stub is the channel's handle only; the call keeps it until it ends.
  auto stub = std::make_shared<grpc::GenericStub>(forwarder.ChannelFor(owner));
  auto done = std::move(callbacks.done);
  callbacks.done = [&forwarder, stub, method, done = std::move(done)](const grpc::Status& status) {
    forwarder.Record(method, status);
    done(status);
  };
  auto call = std::make_shared<StreamCall>(std::move(context), std::move(callbacks));
  grpc::Slice slice(first);
  call->Prepare(stub.get(), absl::StrCat(kServicePath, method), grpc::ByteBuffer(&slice, 1), last);
  std::weak_ptr<StreamCall> held = call;
  return MessageStream{call, [held, cancellable] {
                         // Once the call is gone, so is its context: nothing left to cancel.
                         if (std::shared_ptr<StreamCall> alive = held.lock()) {
                           cancellable->TryCancel();
                         }
                       }};
}

}  // namespace adaptd
