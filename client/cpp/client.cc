#include "client/cpp/client.h"

#include <algorithm>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/cpp/router.h"
#include "google/protobuf/wrappers.pb.h"
#include "grpcpp/generic/generic_stub.h"

namespace adaptd {
namespace {

using adapt::v1::AdaptRequest;
using adapt::v1::AdaptResponse;
using adapt::v1::CompileRequest;
using adapt::v1::CompileResponse;
using adapt::v1::ForgetRequest;
using adapt::v1::ForgetResponse;
using adapt::v1::ListEncodersResponse;
using adapt::v1::ListStoresResponse;
using adapt::v1::PredictRequest;
using adapt::v1::PredictResponse;
using adapt::v1::StoreChunk;
using adapt::v1::StoreInfo;

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return contents.str();
}

// The response when the call succeeded, its status otherwise. Callers finish the call before
// passing the response: argument evaluation order is unspecified.
template <typename T>
absl::StatusOr<T> Reply(const grpc::Status& status, T response) {
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

// One client-streaming call: every batch in order, then the server's single answer.
template <typename Request, typename Response, typename StartFn>
absl::StatusOr<Response> StreamBatches(grpc::ClientContext& context,
                                       absl::Span<const Request> batches, StartFn start) {
  Response response;
  std::unique_ptr<grpc::ClientWriter<Request>> writer = start(&context, &response);
  for (const Request& batch : batches) {
    // A failed write means the server already ended the call; Finish says why.
    if (!writer->Write(batch)) break;
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  return Reply(status, std::move(response));
}

// gRPC's retry policy for every method but the writes that carry examples (a retry of one
// whose first attempt was applied would apply it again unless every example has an id).
std::string RetryServiceConfig(int max_attempts) {
  std::string names;
  for (const char* method : {"CreateStore", "GetStore", "ListStores", "DeleteStore", "PinStore",
                             "Compile", "Predict", "PredictStream", "ExportStore", "ImportStore",
                             "ListEncoders", "Ping", "ClusterStatus", "DrainMember"}) {
    absl::StrAppend(&names, names.empty() ? "" : ",",
                    "{\"service\":\"adapt.v1.Adaptation\",\"method\":\"", method, "\"}");
  }
  return absl::StrCat("{\"methodConfig\":[{\"name\":[", names,
                      "],\"retryPolicy\":{\"maxAttempts\":", max_attempts,
                      ",\"initialBackoff\":\"0.2s\",\"maxBackoff\":\"5s\","
                      "\"backoffMultiplier\":3,\"retryableStatusCodes\":[\"UNAVAILABLE\"]}}]}");
}

// A message naming the store, as the first of a stream must.
AdaptRequest NamedRequest(absl::string_view tenant, absl::string_view store) {
  AdaptRequest request;
  request.set_tenant(std::string(tenant));
  request.set_store(std::string(store));
  return request;
}

// The channel credentials `options` ask for: TLS with its CA (and client certificate), or
// plaintext.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentialsOf(
    const ClientOptions& options) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file and tls_key_file go together");
  }
  if (!options.tls_cert_file.empty() && options.tls_ca_file.empty()) {
    return absl::InvalidArgumentError("a client certificate needs tls_ca_file (TLS)");
  }
  if (options.tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  absl::StatusOr<std::string> ca = ReadWholeFile(options.tls_ca_file);
  if (!ca.ok()) return ca.status();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *std::move(ca);
  if (!options.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadWholeFile(options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadWholeFile(options.tls_key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

// A channel's arguments: the message size limits and, for more than one attempt, the retry
// policy.
grpc::ChannelArguments ChannelArgumentsOf(const ClientOptions& options, int max_attempts) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  if (max_attempts > 1) args.SetServiceConfigJSON(RetryServiceConfig(max_attempts));
  return args;
}

}  // namespace

struct Client::Destination {
  Router::Route route;                // the holder, or none
  adapt::v1::Adaptation::Stub* stub;  // the holder's stub, else the given member's
};

std::vector<AdaptRequest> ExampleRequests(absl::string_view tenant, absl::string_view store,
                                          absl::Span<const adapt::v1::Example> examples,
                                          const AdaptOptions& options) {
  const size_t batch = std::max<size_t>(1, options.batch);
  std::vector<AdaptRequest> requests;
  for (size_t begin = 0; begin < examples.size() || requests.empty(); begin += batch) {
    AdaptRequest& request = requests.emplace_back(NamedRequest(tenant, store));
    request.set_passes(options.passes);
    const size_t end = std::min(examples.size(), begin + batch);
    for (size_t i = begin; i < end; ++i) *request.add_examples() = examples[i];
  }
  return requests;
}

std::vector<AdaptRequest> SequenceRequests(
    absl::string_view tenant, absl::string_view store,
    absl::Span<const std::vector<adapt::v1::Input>> sequences, const AdaptOptions& options,
    absl::Span<const std::vector<std::string>> ids) {
  const size_t batch = std::max<size_t>(1, options.batch);
  std::vector<AdaptRequest> requests;
  bool first_sequence = true;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<adapt::v1::Input>& items = sequences[s];
    if (items.empty()) continue;
    for (size_t begin = 0; begin < items.size(); begin += batch) {
      AdaptRequest& request = requests.emplace_back(NamedRequest(tenant, store));
      request.set_passes(options.passes);
      request.set_restart_sequence(begin == 0 && !(first_sequence && options.continue_sequence));
      const size_t end = std::min(items.size(), begin + batch);
      for (size_t i = begin; i < end; ++i) *request.add_sequence() = items[i];
      if (s < ids.size()) {
        for (size_t i = begin; i < std::min(end, ids[s].size()); ++i) {
          request.add_sequence_ids(ids[s][i]);
        }
      }
    }
    first_sequence = false;
  }
  if (requests.empty()) requests.push_back(NamedRequest(tenant, store));
  return requests;
}

const char* ServingStatusName(ServingStatus status) {
  switch (status) {
    case ServingStatus::kServing:
      return "SERVING";
    case ServingStatus::kNotServing:
      return "NOT_SERVING";
    case ServingStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case ServingStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

PredictStreamCall::~PredictStreamCall() {
  if (!finished_) {
    Cancel();
    Finish().IgnoreError();
  }
}

bool PredictStreamCall::Write(const PredictRequest& request) {
  return !finished_ && stream_->Write(request);
}

bool PredictStreamCall::WritesDone() {
  if (finished_ || writes_done_) return false;
  writes_done_ = true;
  return stream_->WritesDone();
}

std::optional<PredictResponse> PredictStreamCall::Read() {
  PredictResponse response;
  if (finished_ || !stream_->Read(&response)) return std::nullopt;
  return response;
}

absl::Status PredictStreamCall::Finish() {
  if (finished_) return absl::FailedPreconditionError("PredictStream: Finish was called already");
  finished_ = true;
  if (!writes_done_) stream_->WritesDone();
  // Finish waits for the server's status, which follows every response: drain what is left.
  PredictResponse unread;
  while (stream_->Read(&unread)) {
  }
  return FromGrpcStatus(stream_->Finish());
}

void PredictStreamCall::Cancel() { context_.TryCancel(); }

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // Both enumerations carry the canonical codes with the same numbers.
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.address.empty()) return absl::InvalidArgumentError("empty server address");
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("max_message_bytes must be positive");
  }
  if (options.max_attempts < 1 || options.max_attempts > 5) {
    return absl::InvalidArgumentError("max_attempts must be from 1 to 5");
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ChannelCredentialsOf(options);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args = ChannelArgumentsOf(options, options.max_attempts);
  if (!options.tls_ca_file.empty() && !options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, *credentials, args);
  std::unique_ptr<Client> client(new Client(std::move(channel), options));
  if (options.route_to_holders) {
    // A holder's channel does not retry: an UNAVAILABLE holder sends the call to the given
    // member, whose channel retries.
    Client* raw = client.get();
    client->router_ = std::make_unique<Router>(
        options.address, [raw] { return raw->ClusterRoutes(); },
        [credentials = *credentials,
         member_args = ChannelArgumentsOf(options, 1)](const std::string& address) {
          return grpc::CreateCustomChannel(address, credentials, member_args);
        });
  }
  return client;
}

std::unique_ptr<Client> Client::FromChannel(std::shared_ptr<grpc::Channel> channel,
                                            const ClientOptions& options) {
  return std::unique_ptr<Client>(new Client(std::move(channel), options));
}

Client::Client(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options)
    : options_(options),
      channel_(std::move(channel)),
      stub_(adapt::v1::Adaptation::NewStub(channel_)) {}

Client::~Client() = default;

void Client::Prepare(grpc::ClientContext& context, absl::Duration timeout) const {
  PrepareUntil(context, absl::Now() + timeout);
}

void Client::PrepareUntil(grpc::ClientContext& context, absl::Time deadline) const {
  context.set_deadline(absl::ToChronoTime(deadline));
  if (!options_.token.empty()) {
    context.AddMetadata("authorization", absl::StrCat("Bearer ", options_.token));
  }
}

Client::Destination Client::Route(absl::string_view tenant, absl::string_view store) const {
  Destination to{router_ != nullptr ? router_->Pick(tenant, store) : Router::Route{}, nullptr};
  to.stub = to.route.stub != nullptr ? to.route.stub : stub_.get();
  return to;
}

template <typename Response, typename Call>
absl::StatusOr<Response> Client::StoreUnary(absl::string_view tenant, absl::string_view store,
                                            bool resend, Call call) {
  const absl::Time deadline = absl::Now() + options_.unary_timeout;
  const Destination to = Route(tenant, store);
  Response response;
  grpc::Status status;
  {
    grpc::ClientContext context;
    PrepareUntil(context, deadline);
    status = call(to.stub, &context, &response);
    Observe(context, static_cast<absl::StatusCode>(status.error_code()), to);
  }
  if (to.route.stub != nullptr && resend && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    // The holder is gone or its shard is moving: the given member routes the call again.
    response.Clear();
    grpc::ClientContext context;
    PrepareUntil(context, deadline);
    status = call(stub_.get(), &context, &response);
    Observe(context, static_cast<absl::StatusCode>(status.error_code()),
            Destination{Router::Route{}, stub_.get()});
  }
  return Reply(status, std::move(response));
}

void Client::Observe(const grpc::ClientContext& context, absl::StatusCode code,
                     const Destination& to) {
  if (router_ != nullptr) router_->Observe(context, static_cast<grpc::StatusCode>(code), to.route);
}

absl::StatusOr<adapt::v1::ClusterRoutesResponse> Client::ClusterRoutes() {
  grpc::ClientContext context;
  Prepare(context, std::min(options_.unary_timeout, absl::Seconds(5)));
  adapt::v1::ClusterRoutesResponse response;
  const grpc::Status status =
      stub_->ClusterRoutes(&context, adapt::v1::ClusterRoutesRequest(), &response);
  return Reply(status, std::move(response));
}

bool Client::routing() const {
  return router_ != nullptr && router_->enabled() && router_->revision().has_value();
}

// A unary method of the stub, as StoreUnary calls it.
#define ADAPTD_STUB_CALL(Method, request)                                                       \
  [&request](adapt::v1::Adaptation::Stub* stub, grpc::ClientContext* context, auto* response) { \
    return stub->Method(context, request, response);                                            \
  }

absl::StatusOr<StoreInfo> Client::CreateStore(const adapt::v1::CreateStoreRequest& request) {
  return StoreUnary<StoreInfo>(request.tenant(), request.store(), /*resend=*/true,
                               ADAPTD_STUB_CALL(CreateStore, request));
}

absl::StatusOr<StoreInfo> Client::GetStore(absl::string_view tenant, absl::string_view store) {
  adapt::v1::GetStoreRequest request;
  request.set_tenant(std::string(tenant));
  request.set_store(std::string(store));
  return StoreUnary<StoreInfo>(tenant, store, /*resend=*/true, ADAPTD_STUB_CALL(GetStore, request));
}

absl::StatusOr<ListStoresResponse> Client::ListStoresPage(
    const adapt::v1::ListStoresRequest& request) {
  grpc::ClientContext context;
  Prepare(context, options_.unary_timeout);
  ListStoresResponse response;
  const grpc::Status status = stub_->ListStores(&context, request, &response);
  return Reply(status, std::move(response));
}

absl::Status Client::ForEachStore(absl::string_view tenant, const StoreVisitor& visit,
                                  uint32_t page_size) {
  adapt::v1::ListStoresRequest request;
  request.set_tenant(std::string(tenant));
  request.set_page_size(page_size);
  do {
    absl::StatusOr<ListStoresResponse> page = ListStoresPage(request);
    if (!page.ok()) return page.status();
    for (const StoreInfo& store : page->stores()) {
      if (absl::Status visited = visit(store); !visited.ok()) return visited;
    }
    // A token that does not move would list the same page forever.
    if (!page->next_page_token().empty() && page->next_page_token() == request.page_token()) {
      return absl::InternalError("ListStores: the server answered a page token with itself");
    }
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return absl::OkStatus();
}

absl::StatusOr<ListStoresResponse> Client::ListStores(absl::string_view tenant,
                                                      uint32_t page_size) {
  ListStoresResponse all;
  absl::Status listed = ForEachStore(
      tenant,
      [&all](const StoreInfo& store) {
        *all.add_stores() = store;
        return absl::OkStatus();
      },
      page_size);
  if (!listed.ok()) return listed;
  return all;
}

absl::Status Client::DeleteStore(absl::string_view tenant, absl::string_view store) {
  adapt::v1::DeleteStoreRequest request;
  request.set_tenant(std::string(tenant));
  request.set_store(std::string(store));
  return StoreUnary<adapt::v1::DeleteStoreResponse>(tenant, store, /*resend=*/true,
                                                    ADAPTD_STUB_CALL(DeleteStore, request))
      .status();
}

absl::StatusOr<StoreInfo> Client::PinStore(absl::string_view tenant, absl::string_view store,
                                           bool pinned) {
  adapt::v1::PinStoreRequest request;
  request.set_tenant(std::string(tenant));
  request.set_store(std::string(store));
  request.set_pinned(pinned);
  return StoreUnary<StoreInfo>(tenant, store, /*resend=*/true, ADAPTD_STUB_CALL(PinStore, request));
}

absl::StatusOr<AdaptResponse> Client::Adapt(absl::Span<const AdaptRequest> batches) {
  const Destination to =
      batches.empty() ? Route("", "") : Route(batches.front().tenant(), batches.front().store());
  grpc::ClientContext context;
  Prepare(context, options_.stream_timeout);
  absl::StatusOr<AdaptResponse> response = StreamBatches<AdaptRequest, AdaptResponse>(
      context, batches,
      [&to](grpc::ClientContext* c, AdaptResponse* r) { return to.stub->Adapt(c, r); });
  Observe(context, response.status().code(), to);
  return response;
}

absl::StatusOr<AdaptResponse> Client::AdaptExamples(absl::string_view tenant,
                                                    absl::string_view store,
                                                    absl::Span<const adapt::v1::Example> examples,
                                                    const AdaptOptions& options) {
  return Adapt(ExampleRequests(tenant, store, examples, options));
}

absl::StatusOr<AdaptResponse> Client::AdaptSequences(
    absl::string_view tenant, absl::string_view store,
    absl::Span<const std::vector<adapt::v1::Input>> sequences, const AdaptOptions& options,
    absl::Span<const std::vector<std::string>> ids) {
  return Adapt(SequenceRequests(tenant, store, sequences, options, ids));
}

absl::StatusOr<ForgetResponse> Client::Forget(absl::Span<const ForgetRequest> batches) {
  const Destination to =
      batches.empty() ? Route("", "") : Route(batches.front().tenant(), batches.front().store());
  grpc::ClientContext context;
  Prepare(context, options_.stream_timeout);
  absl::StatusOr<ForgetResponse> response = StreamBatches<ForgetRequest, ForgetResponse>(
      context, batches,
      [&to](grpc::ClientContext* c, ForgetResponse* r) { return to.stub->Forget(c, r); });
  Observe(context, response.status().code(), to);
  return response;
}

absl::StatusOr<CompileResponse> Client::Compile(const CompileRequest& request) {
  return StoreUnary<CompileResponse>(request.tenant(), request.store(), /*resend=*/true,
                                     ADAPTD_STUB_CALL(Compile, request));
}

absl::StatusOr<PredictResponse> Client::Predict(const PredictRequest& request) {
  return StoreUnary<PredictResponse>(request.tenant(), request.store(), /*resend=*/true,
                                     ADAPTD_STUB_CALL(Predict, request));
}

absl::StatusOr<adapt::v1::FeedbackResponse> Client::Feedback(
    const adapt::v1::FeedbackRequest& request) {
  // Not retried by the given member's channel either: the caller resends it.
  return StoreUnary<adapt::v1::FeedbackResponse>(request.tenant(), request.store(),
                                                 /*resend=*/false,
                                                 ADAPTD_STUB_CALL(Feedback, request));
}

#undef ADAPTD_STUB_CALL

std::unique_ptr<PredictStreamCall> Client::OpenPredictStream() {
  std::unique_ptr<PredictStreamCall> call(new PredictStreamCall());
  Prepare(call->context_, options_.stream_timeout);
  call->stream_ = stub_->PredictStream(&call->context_);
  return call;
}

absl::StatusOr<std::vector<PredictResponse>> Client::PredictStream(
    absl::Span<const PredictRequest> requests) {
  std::unique_ptr<PredictStreamCall> call = OpenPredictStream();
  // Writes run beside the reads so that neither side's flow control can stall the other.
  std::thread writer([&call, requests] {
    for (const PredictRequest& request : requests) {
      if (!call->Write(request)) break;
    }
    call->WritesDone();
  });
  std::vector<PredictResponse> responses;
  while (std::optional<PredictResponse> response = call->Read()) {
    responses.push_back(*std::move(response));
  }
  writer.join();
  if (absl::Status status = call->Finish(); !status.ok()) return status;
  if (responses.size() != requests.size()) {
    return absl::DataLossError(absl::StrCat("PredictStream: ", requests.size(), " requests but ",
                                            responses.size(), " responses"));
  }
  return responses;
}

absl::Status Client::ExportStore(absl::string_view tenant, absl::string_view store,
                                 const ChunkSink& sink) {
  adapt::v1::ExportStoreRequest request;
  request.set_tenant(std::string(tenant));
  request.set_store(std::string(store));
  const absl::Time deadline = absl::Now() + options_.stream_timeout;
  Destination to = Route(tenant, store);
  bool delivered = false;  // a chunk reached the sink: the call is never sent again
  absl::Status sink_status;
  auto export_from = [&](adapt::v1::Adaptation::Stub* stub) {
    grpc::ClientContext context;
    PrepareUntil(context, deadline);
    std::unique_ptr<grpc::ClientReader<StoreChunk>> reader = stub->ExportStore(&context, request);
    StoreChunk chunk;
    while (reader->Read(&chunk)) {
      delivered = true;
      sink_status = sink(chunk.data());
      if (!sink_status.ok()) {
        context.TryCancel();
        while (reader->Read(&chunk)) {
        }
        break;
      }
    }
    grpc::Status status = reader->Finish();
    Observe(context, static_cast<absl::StatusCode>(status.error_code()), to);
    return status;
  };
  grpc::Status status = export_from(to.stub);
  if (to.route.stub != nullptr && !delivered &&
      status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    to = Destination{Router::Route{}, stub_.get()};  // the given member routes it again
    status = export_from(to.stub);
  }
  if (!sink_status.ok()) return sink_status;
  return FromGrpcStatus(status);
}

absl::StatusOr<std::string> Client::ExportStore(absl::string_view tenant, absl::string_view store) {
  std::string snapshot;
  absl::Status status = ExportStore(tenant, store, [&snapshot](absl::string_view chunk) {
    snapshot.append(chunk.data(), chunk.size());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return snapshot;
}

absl::StatusOr<StoreInfo> Client::ImportStore(absl::string_view tenant, absl::string_view store,
                                              const ChunkSource& source) {
  const Destination to = Route(tenant, store);
  grpc::ClientContext context;
  Prepare(context, options_.stream_timeout);
  StoreInfo response;
  std::unique_ptr<grpc::ClientWriter<StoreChunk>> writer =
      to.stub->ImportStore(&context, &response);
  StoreChunk chunk;
  chunk.set_tenant(std::string(tenant));
  chunk.set_store(std::string(store));
  absl::Status source_status;
  bool first = true;
  while (true) {
    absl::StatusOr<bool> more = source(chunk.mutable_data());
    if (!more.ok()) {
      source_status = more.status();
      context.TryCancel();
      break;
    }
    // The first chunk goes out even when the snapshot is empty: it names the target.
    if (!*more && !first) break;
    if (!writer->Write(chunk)) break;
    if (!*more) break;
    first = false;
    chunk.clear_tenant();
    chunk.clear_store();
    chunk.clear_data();
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  Observe(context, static_cast<absl::StatusCode>(status.error_code()), to);
  if (!source_status.ok()) return source_status;
  return Reply(status, std::move(response));
}

absl::StatusOr<StoreInfo> Client::ImportStore(absl::string_view tenant, absl::string_view store,
                                              absl::string_view snapshot, size_t chunk_bytes) {
  if (chunk_bytes == 0) return absl::InvalidArgumentError("chunk_bytes must be positive");
  size_t offset = 0;
  return ImportStore(tenant, store, [&](std::string* chunk) -> absl::StatusOr<bool> {
    if (offset >= snapshot.size()) return false;
    const size_t n = std::min(chunk_bytes, snapshot.size() - offset);
    chunk->assign(snapshot.data() + offset, n);
    offset += n;
    return true;
  });
}

absl::StatusOr<ServingStatus> Client::Health(absl::string_view service) {
  // grpc.health.v1's HealthCheckRequest {string service = 1} and HealthCheckResponse
  // {ServingStatus status = 1} have the wire format of StringValue and Int32Value.
  google::protobuf::StringValue request;
  request.set_value(std::string(service));
  google::protobuf::Int32Value response;
  grpc::ClientContext context;
  Prepare(context, options_.unary_timeout);
  grpc::TemplatedGenericStub<google::protobuf::StringValue, google::protobuf::Int32Value> stub(
      channel_);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return FromGrpcStatus(status);
  const int32_t value = response.value();
  return value >= 0 && value <= 3 ? static_cast<ServingStatus>(value) : ServingStatus::kUnknown;
}

absl::StatusOr<ListEncodersResponse> Client::ListEncoders() {
  grpc::ClientContext context;
  Prepare(context, options_.unary_timeout);
  ListEncodersResponse response;
  const grpc::Status status =
      stub_->ListEncoders(&context, adapt::v1::ListEncodersRequest(), &response);
  return Reply(status, std::move(response));
}

absl::StatusOr<adapt::v1::ClusterStatusResponse> Client::ClusterStatus() {
  grpc::ClientContext context;
  Prepare(context, options_.unary_timeout);
  adapt::v1::ClusterStatusResponse response;
  const grpc::Status status =
      stub_->ClusterStatus(&context, adapt::v1::ClusterStatusRequest(), &response);
  return Reply(status, std::move(response));
}

absl::StatusOr<adapt::v1::DrainMemberResponse> Client::DrainMember(absl::string_view member,
                                                                   bool undo, bool wait,
                                                                   absl::Duration timeout) {
  grpc::ClientContext context;
  Prepare(context, timeout);
  adapt::v1::DrainMemberRequest request;
  request.set_member(std::string(member));
  request.set_undo(undo);
  request.set_wait(wait);
  adapt::v1::DrainMemberResponse response;
  const grpc::Status status = stub_->DrainMember(&context, request, &response);
  return Reply(status, std::move(response));
}

}  // namespace adaptd
