// adaptd::Client: a thin synchronous C++ client for the adapt.v1.Adaptation service.
//
// Every method is one RPC with a deadline (ClientOptions::unary_timeout for unary calls,
// stream_timeout for streaming ones) and, when a token is configured, the metadata
// `authorization: Bearer <token>`. A grpc::Status maps one to one onto the returned
// absl::Status (same code, same message); a client-side failure (an unreadable CA file, a sink
// that fails) keeps its own code.
//
// In a cluster on etcd (docs/CLUSTER_OPERATIONS.md, "Clients route to holders") the calls for
// one store (CreateStore, GetStore, DeleteStore, PinStore, Compile, Predict, Feedback, Adapt,
// Forget, ImportStore, ExportStore) go to the member holding the store's shard, by the route
// table the given member answers (ClientOptions::route_to_holders; Router); the others
// (ListStores, PredictStream, ListEncoders, Health, the cluster calls) go to the given member.
//
// Thread safety: a Client is safe to use from several threads at once; each call creates its
// own grpc::ClientContext. The channels are shared and owned by the Client.
#ifndef ADAPTD_CLIENT_CPP_CLIENT_H_
#define ADAPTD_CLIENT_CPP_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "adapt/v1/adapt.grpc.pb.h"
#include "adapt/v1/adapt.pb.h"
#include "grpcpp/grpcpp.h"

namespace adaptd {

class Router;  // client/cpp/router.h

struct ClientOptions {
  // HOST:PORT, or any target gRPC understands (e.g. unix:/path).
  std::string address = "127.0.0.1:50051";
  // Sent as `authorization: Bearer <token>` on every call when not empty.
  std::string token;
  // PEM file of the CA that signed the server's certificate. Empty: plaintext channel.
  std::string tls_ca_file;
  // PEM files of a client certificate chain and its key, for a server that requires client
  // certificates (mutual TLS). Both or neither; they need tls_ca_file.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Overrides the name checked against the server certificate (TLS only; empty: from address).
  std::string tls_server_name;
  // Deadline of each unary call, and of each streaming call from its start to its end.
  absl::Duration unary_timeout = absl::Seconds(30);
  absl::Duration stream_timeout = absl::Minutes(5);
  // Largest message sent or received, in bytes.
  int max_message_bytes = 64 << 20;
  // Attempts of a call the server answers UNAVAILABLE (a store being handed off between
  // cluster members, a member restarting), with exponential backoff from 0.2 s up to 5 s,
  // within the call's deadline (gRPC's retry policy; at most 5). Adapt and Forget are never
  // retried this way: resend them with example ids. 1: no retries.
  int max_attempts = 5;
  // Call each store's holder directly in a cluster on etcd: the route table (ClusterRoutes) is
  // fetched before the first call for a store, and each such call goes to its shard's holder
  // over a channel of its own (these options' credentials; tls_server_name applies to
  // `address` only: a member's certificate is checked against the address it advertises).
  // The call goes to `address` instead (which forwards it) when the shard has no holder, the
  // holder's channel is not connected, or the holder answers UNAVAILABLE (a unary call that
  // gRPC's retry policy covers is then sent to `address` once, within its deadline; Adapt,
  // Forget, ImportStore and Feedback are not: resend them). A single server answers
  // ClusterRoutes UNIMPLEMENTED: every call stays on `address`. false: every call goes to
  // `address`. Client::FromChannel never routes.
  bool route_to_holders = true;
};

// Maps a gRPC status onto an absl::Status with the same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

// How AdaptExamples and AdaptSequences split their data into stream messages.
struct AdaptOptions {
  // Examples, or sequence items, per stream message (at least 1).
  size_t batch = 256;
  // fwpkm: every message fed this many times (iterative reading); 0 or 1: once.
  uint32_t passes = 0;
  // AdaptSequences: the first sequence continues the one the store kept (its last item is the
  // predecessor of the first new one). By default every sequence starts afresh.
  bool continue_sequence = false;
};

// The messages AdaptExamples sends: `examples` in order, options.batch a message, the first
// naming the store; one message naming the store when there are none.
std::vector<adapt::v1::AdaptRequest> ExampleRequests(absl::string_view tenant,
                                                     absl::string_view store,
                                                     absl::Span<const adapt::v1::Example> examples,
                                                     const AdaptOptions& options = {});
// The messages AdaptSequences sends: each sequence's items in order, options.batch a message,
// a message never mixing two sequences; the first message of each sequence sets
// restart_sequence (except the first one under continue_sequence). Empty sequences are skipped;
// one message naming the store when no items remain. `ids` (optional): per sequence, one id
// per item (Example.id's rules), sent as sequence_ids, so that a resent call is skipped message
// by message; lengths that differ from the items' are refused by the server.
std::vector<adapt::v1::AdaptRequest> SequenceRequests(
    absl::string_view tenant, absl::string_view store,
    absl::Span<const std::vector<adapt::v1::Input>> sequences, const AdaptOptions& options = {},
    absl::Span<const std::vector<std::string>> ids = {});

// The serving status the standard health service (grpc.health.v1.Health/Check) reports.
enum class ServingStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };
const char* ServingStatusName(ServingStatus status);

// One open PredictStream call (Client::OpenPredictStream): requests go out as they are
// written and each response comes back in order, while the call stays open. One thread may
// write while another reads; neither method may be called from two threads at once.
class PredictStreamCall {
 public:
  PredictStreamCall(const PredictStreamCall&) = delete;
  PredictStreamCall& operator=(const PredictStreamCall&) = delete;
  // Cancels a call that is still open.
  ~PredictStreamCall();

  // Sends one request; false once the call has ended (Finish says why).
  bool Write(const adapt::v1::PredictRequest& request);
  // Tells the server no more requests follow; responses to those sent still arrive.
  bool WritesDone();
  // The next response, in request order; std::nullopt once the call has ended (Finish says
  // whether it ended well).
  std::optional<adapt::v1::PredictResponse> Read();
  // Ends the call and returns its status: OK when the server answered everything, its error
  // otherwise. Call it once, when no Write is in progress (it sends WritesDone if that was not
  // done); responses not read by then are dropped.
  absl::Status Finish();
  // Asks the call to end now (from any thread); Finish then returns CANCELLED.
  void Cancel();

 private:
  friend class Client;
  PredictStreamCall() = default;

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<adapt::v1::PredictRequest, adapt::v1::PredictResponse>>
      stream_;
  bool writes_done_ = false;
  bool finished_ = false;
};

class Client {
 public:
  // Called with each chunk of an exported snapshot, in order; a non-OK status cancels the call.
  using ChunkSink = std::function<absl::Status(absl::string_view chunk)>;
  // Fills *chunk with the next piece of a snapshot to import; returns false at the end.
  using ChunkSource = std::function<absl::StatusOr<bool>(std::string* chunk)>;

  // Creates the channel; no connection is attempted until the first call.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  // Uses an existing channel (tests, custom credentials); address and TLS options are ignored.
  static std::unique_ptr<Client> FromChannel(std::shared_ptr<grpc::Channel> channel,
                                             const ClientOptions& options);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  absl::StatusOr<adapt::v1::StoreInfo> CreateStore(const adapt::v1::CreateStoreRequest& request);
  absl::StatusOr<adapt::v1::StoreInfo> GetStore(absl::string_view tenant, absl::string_view store);
  // Every store of the tenant in name order, fetched a page of `page_size` at a time (0: the
  // server's default, 100; at most 1000); the response's next_page_token is empty.
  absl::StatusOr<adapt::v1::ListStoresResponse> ListStores(absl::string_view tenant,
                                                           uint32_t page_size = 0);
  // Calls `visit` with each store of the tenant in name order, fetching the next page only when
  // the previous one is visited, so memory holds one page. A non-OK status from `visit` ends the
  // listing and is returned.
  using StoreVisitor = std::function<absl::Status(const adapt::v1::StoreInfo& store)>;
  absl::Status ForEachStore(absl::string_view tenant, const StoreVisitor& visit,
                            uint32_t page_size = 0);
  // One ListStores call: the page `request` names (page_size, page_token; see adapt.proto).
  absl::StatusOr<adapt::v1::ListStoresResponse> ListStoresPage(
      const adapt::v1::ListStoresRequest& request);
  absl::Status DeleteStore(absl::string_view tenant, absl::string_view store);
  // Pins the store (kept loaded under the server's memory budget), or unpins it.
  absl::StatusOr<adapt::v1::StoreInfo> PinStore(absl::string_view tenant, absl::string_view store,
                                                bool pinned);

  // Sends the batches as consecutive messages of one stream: the server applies them as one
  // transaction. The first batch must name the tenant and the store.
  absl::StatusOr<adapt::v1::AdaptResponse> Adapt(absl::Span<const adapt::v1::AdaptRequest> batches);
  // Adapts labelled examples in one transaction (ExampleRequests). Give every example an id to
  // make a resend after a failure safe: the store skips ids it applied already.
  absl::StatusOr<adapt::v1::AdaptResponse> AdaptExamples(
      absl::string_view tenant, absl::string_view store,
      absl::Span<const adapt::v1::Example> examples, const AdaptOptions& options = {});
  // Adapts a `next` store from sequences of items in one transaction (SequenceRequests): each
  // item's predecessor in its sequence predicts it.
  absl::StatusOr<adapt::v1::AdaptResponse> AdaptSequences(
      absl::string_view tenant, absl::string_view store,
      absl::Span<const std::vector<adapt::v1::Input>> sequences, const AdaptOptions& options = {},
      absl::Span<const std::vector<std::string>> ids = {});
  absl::StatusOr<adapt::v1::ForgetResponse> Forget(
      absl::Span<const adapt::v1::ForgetRequest> batches);

  absl::StatusOr<adapt::v1::CompileResponse> Compile(const adapt::v1::CompileRequest& request);
  absl::StatusOr<adapt::v1::PredictResponse> Predict(const adapt::v1::PredictRequest& request);
  // Feedback on served predictions (docs/FEEDBACK.md): prediction ids with their true labels
  // or targets; resending the same request applies it once.
  absl::StatusOr<adapt::v1::FeedbackResponse> Feedback(const adapt::v1::FeedbackRequest& request);
  // One response per request, in order, over one bidirectional stream.
  absl::StatusOr<std::vector<adapt::v1::PredictResponse>> PredictStream(
      absl::Span<const adapt::v1::PredictRequest> requests);
  // Opens a PredictStream call for requests written one at a time (the deadline is
  // options().stream_timeout from now). Never null.
  std::unique_ptr<PredictStreamCall> OpenPredictStream();

  // Streams the store's snapshot into `sink`, chunk by chunk.
  absl::Status ExportStore(absl::string_view tenant, absl::string_view store,
                           const ChunkSink& sink);
  // Collects the whole snapshot in memory.
  absl::StatusOr<std::string> ExportStore(absl::string_view tenant, absl::string_view store);

  // Creates `tenant/store` (which must not exist) from the chunks `source` yields.
  absl::StatusOr<adapt::v1::StoreInfo> ImportStore(absl::string_view tenant,
                                                   absl::string_view store,
                                                   const ChunkSource& source);
  // Imports a snapshot held in memory, sent in chunks of at most `chunk_bytes`.
  absl::StatusOr<adapt::v1::StoreInfo> ImportStore(absl::string_view tenant,
                                                   absl::string_view store,
                                                   absl::string_view snapshot,
                                                   size_t chunk_bytes = 1 << 20);

  absl::StatusOr<adapt::v1::ListEncodersResponse> ListEncoders();

  // The standard health service's status for `service` ("": the server as a whole). A service
  // the server does not know is NOT_FOUND.
  absl::StatusOr<ServingStatus> Health(absl::string_view service = "");

  // A cluster's members, stores per member and moves in flight (an admin token).
  absl::StatusOr<adapt::v1::ClusterStatusResponse> ClusterStatus();
  // Drains `member` (or undoes it) and, with `wait`, answers once its stores have moved, within
  // `timeout` (an admin token).
  absl::StatusOr<adapt::v1::DrainMemberResponse> DrainMember(absl::string_view member, bool undo,
                                                             bool wait, absl::Duration timeout);

  // A cluster on etcd's route table as the given member sees it (any authenticated caller);
  // UNIMPLEMENTED on a single server.
  absl::StatusOr<adapt::v1::ClusterRoutesResponse> ClusterRoutes();
  // Whether calls for stores go to their holders now: routing is on and a route table is held.
  bool routing() const;

  const ClientOptions& options() const { return options_; }

 private:
  Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options);

  // Sets the deadline and the credentials metadata of one call.
  void Prepare(grpc::ClientContext& context, absl::Duration timeout) const;
  void PrepareUntil(grpc::ClientContext& context, absl::Time deadline) const;
  // One unary call for tenant/store, `call(stub, context, response)`, sent where the router
  // says; sent again to the given member after a holder's UNAVAILABLE when `resend`.
  template <typename Response, typename Call>
  absl::StatusOr<Response> StoreUnary(absl::string_view tenant, absl::string_view store,
                                      bool resend, Call call);
  // The destination of a call for tenant/store; the given member's stub when none.
  struct Destination;
  Destination Route(absl::string_view tenant, absl::string_view store) const;
  // Tells the router how a call sent to `to` ended, with the context its answer filled.
  void Observe(const grpc::ClientContext& context, absl::StatusCode code, const Destination& to);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
  std::unique_ptr<Router> router_;  // null: every call to the given member
};

}  // namespace adaptd

#endif  // ADAPTD_CLIENT_CPP_CLIENT_H_
