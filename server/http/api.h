// Api: the HTTP/JSON front end's calls over the service layer (docs/HTTP.md), apart from the
// HTTP library: one request (method, path, the headers it reads, body) in, one Reply out. Each
// public unary RPC is `POST /v1/<Method>` with the request and the response in protobuf's JSON
// mapping; Adapt and Forget read their body's messages (newline-delimited JSON or one array)
// as they arrive and commit them as one transaction; ExportStore answers the store's snapshot
// as length-delimited StoreChunk messages, and ImportStore reads the same bytes back;
// `/healthz` and `/readyz` answer probes. In a cluster, a call for another member's store is
// passed there over `Relays` (member_relay.h), streamed calls message by message.
// Serve runs on the HTTP library's connection thread and waits there for the service's
// callback. The members' own calls (ClusterQuota, ClusterBase) are not served. Thread-safe.
#ifndef ADAPTD_SERVER_HTTP_API_H_
#define ADAPTD_SERVER_HTTP_API_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "google/protobuf/message.h"
#include "server/http/http_status.h"
#include "server/http/write_body.h"
#include "server/service/service.h"

namespace adaptd::http {

// The header carrying a call's deadline: milliseconds from when the request arrives, as
// gRPC's timeout is relative (`Adaptd-Timeout-Ms: 2500`).
inline constexpr char kTimeoutHeader[] = "Adaptd-Timeout-Ms";

struct Request {
  std::string method;    // "POST", "GET", ...
  std::string path;      // "/v1/GetStore"
  std::string body;      // empty for a call that reads its own body (Api::ReadsOwnBody)
  BodyReader read_body;  // set for a call that reads its own body, as it arrives
  std::optional<std::string> authorization;  // `Authorization: Bearer <token>`, as gRPC's
  std::optional<std::string> timeout_ms;     // kTimeoutHeader
  // The Open Inference Protocol's Inference-Header-Content-Length (server/http/oip.h).
  std::optional<std::string> header_length;
};

// Runs `start` with a Done and waits for it: the service never blocks the caller, and a
// connection thread of the HTTP library is the caller's thread to wait on.
absl::Status Wait(const std::function<void(Service::Done)>& start);

// Relays one call to another cluster member over gRPC (docs/HTTP.md, "A cluster"): `request`
// is the parsed request's serialized bytes, sent with `call`'s deadline and credentials;
// `done` runs once with the member's status, and on OK `*response` holds its reply's bytes.
using Relay = std::function<void(const cluster::Member& to, const char* method, std::string request,
                                 const CallInfo& call, std::string* response, Service::Done done)>;

// Relays `request` to `to` with `relay` and reads its answer into `response`: the member's
// status (INTERNAL when its answer does not parse).
absl::Status RelayedCall(const Relay& relay, const cluster::Member& to, const char* method,
                         const CallInfo& call, const google::protobuf::Message& request,
                         google::protobuf::Message* response);

// A streamed call relayed to another cluster member (docs/HTTP.md, "A cluster"): the
// messages' serialized bytes in order, as the gRPC stream carries them. Driven from one
// connection thread, which each method may block; destroying it before the call ended cancels
// the call.
class MemberStream {
 public:
  virtual ~MemberStream() = default;
  // Sends the next message, once the previous one is out (at most one is buffered). False once
  // the member's call ended (Finish says how): the message went nowhere.
  virtual bool Send(std::string message) = 0;
  // The member's next message, waited for: false once its stream ended.
  virtual bool Next(std::string* message) = 0;
  // Half-closes the stream and waits for the call's end: the member's status; `*last` holds the
  // last message it sent (a client stream's reply).
  virtual absl::Status Finish(std::string* last) = 0;
  // Cancels the call before its end (the client is gone, or a message was refused here): the
  // member drops what the stream carried, as for a gRPC stream cancelled before its end.
  virtual void Cancel() = 0;
};

// Opens a stream to `to` with `first` as its first message (with `last`, the only one),
// carrying `call`'s deadline and credential, and cancelled once `call.cancelled` says so.
using StreamRelay = std::function<std::unique_ptr<MemberStream>(
    const cluster::Member& to, const char* method, const std::string& first, bool last,
    const CallInfo& call)>;

// How calls for another member's store reach it; each null without a cluster (the calls are
// then refused with 421 naming the member).
struct Relays {
  Relay unary;
  StreamRelay stream;
};

// 421 Misdirected Request: a store another cluster member serves.
inline constexpr int kMisdirected = 421;
// The status a call for a store `member` serves is refused with where it is not relayed (no
// relay: a server without a cluster's channels), so it names the member.
absl::Status MisdirectedStatus(const std::string& tenant, const std::string& store,
                               const cluster::Member& member);

// What the front end does with a method of adapt.v1.Adaptation named in `/v1/<Method>`.
enum class MethodKind {
  kServed,       // a public unary call, and ExportStore (its answer a download)
  kStreamed,     // Adapt, Forget, ImportStore: the body's messages read as they arrive
  kLaterSlice,   // a streaming call: 501 until its slice is built
  kMembersOnly,  // a cluster member's own call: 404
  kUnknown,      // no such method: 404
};

class Api {
 public:
  static MethodKind KindOf(absl::string_view method);

  // Without `relays`, calls for another member's store answer 421 and a cluster's ListStores
  // 501.
  explicit Api(Service* service, WriteLimits limits = {}, Relays relays = {})
      : service_(service), limits_(limits), relays_(std::move(relays)) {}

  // Whether the call reads its body itself, as it arrives (POST /v1/Adapt, /v1/Forget): the
  // server then sets `Request::read_body` instead of reading `body` whole.
  static bool ReadsOwnBody(absl::string_view verb, absl::string_view path);
  // Whether the body is bounded by the call limit (Adapt, Forget); ImportStore's is bounded by
  // the import limit, on the snapshot it carries.
  static bool HasCallLimit(absl::string_view path);

  // Serves `request` on the caller's thread, waiting for the service's answer.
  Reply Serve(const Request& request) const;

  // From here on /readyz answers 503 (the service itself refuses new calls once its gate
  // closes).
  void Drain() { draining_ = true; }
  // Whether the server is ready (/readyz and the Open Inference Protocol's /v2/health/ready):
  // a member of a cluster on etcd only once it holds its shards; true until set.
  void SetReady(bool ready) { ready_ = ready; }
  // Calls still queued from here on are not run: their probe reports them cancelled.
  void CancelAll() { cancelled_ = true; }

 private:
  // Why /readyz answers 503: "" when ready.
  std::string NotReady() const;
  // POST /v1/<method>.
  Reply ServeMethod(absl::string_view method, const Request& request) const;
  // The service's view of the call; an error for a malformed deadline header.
  absl::StatusOr<CallInfo> CallInfoOf(const Request& request) const;

  Service* service_;
  const WriteLimits limits_;
  const Relays relays_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> ready_{true};
  std::atomic<bool> cancelled_{false};
};

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_API_H_
