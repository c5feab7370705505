// Tests of adaptd::Client against an in-process fake of the Adaptation service (and gRPC's own
// health service).
#include "client/cpp/client.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

using adapt::v1::AdaptRequest;
using adapt::v1::AdaptResponse;

// Records what the client sent and answers with canned replies.
class FakeService final : public adapt::v1::Adaptation::Service {
 public:
  grpc::Status GetStore(grpc::ServerContext* context, const adapt::v1::GetStoreRequest* request,
                        adapt::v1::StoreInfo* response) override {
    Record(context);
    if (!error_.ok()) return error_;
    if (Refused()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "moving; retry");
    response->set_tenant(request->tenant());
    response->set_store(request->store());
    response->set_version(7);
    return grpc::Status::OK;
  }

  grpc::Status Adapt(grpc::ServerContext* context, grpc::ServerReader<AdaptRequest>* reader,
                     AdaptResponse* response) override {
    Record(context);
    if (Refused()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "moving; retry");
    AdaptRequest request;
    uint64_t examples = 0;
    while (reader->Read(&request)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++messages_;
      examples += request.examples_size() + request.sequence_size();
      tenants_.push_back(request.tenant());
      adapt_requests_.push_back(request);
    }
    response->set_accepted(examples);
    return grpc::Status::OK;
  }

  grpc::Status Feedback(grpc::ServerContext* context, const adapt::v1::FeedbackRequest* request,
                        adapt::v1::FeedbackResponse* response) override {
    Record(context);
    if (!error_.ok()) return error_;
    response->set_accepted(request->items_size());
    response->set_version(request->items(0).prediction_id().size());
    return grpc::Status::OK;
  }

  grpc::Status ExportStore(grpc::ServerContext* context,
                           const adapt::v1::ExportStoreRequest* /*request*/,
                           grpc::ServerWriter<adapt::v1::StoreChunk>* writer) override {
    Record(context);
    for (const char* piece : {"abc", "def", "g"}) {
      adapt::v1::StoreChunk chunk;
      chunk.set_data(piece);
      if (!writer->Write(chunk)) break;
    }
    return grpc::Status::OK;
  }

  grpc::Status ImportStore(grpc::ServerContext* context,
                           grpc::ServerReader<adapt::v1::StoreChunk>* reader,
                           adapt::v1::StoreInfo* response) override {
    Record(context);
    adapt::v1::StoreChunk chunk;
    std::lock_guard<std::mutex> lock(mu_);
    while (reader->Read(&chunk)) {
      chunks_.push_back(chunk);
    }
    response->set_tenant(chunks_.empty() ? "" : chunks_[0].tenant());
    return grpc::Status::OK;
  }

  grpc::Status PredictStream(grpc::ServerContext* context,
                             grpc::ServerReaderWriter<adapt::v1::PredictResponse,
                                                      adapt::v1::PredictRequest>* stream) override {
    Record(context);
    adapt::v1::PredictRequest request;
    while (stream->Read(&request)) {
      adapt::v1::PredictResponse response;
      response.set_version(request.top_k());
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

  grpc::Status ListEncoders(grpc::ServerContext* context, const adapt::v1::ListEncodersRequest*,
                            adapt::v1::ListEncodersResponse*) override {
    Record(context);
    // Waits for the client's deadline to pass.
    for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return grpc::Status::OK;
  }

  // Pages through the stores "s0".."s4": two a page unless asked otherwise, the token is the
  // index of the next store. A stuck service answers every page with the token it was sent.
  grpc::Status ListStores(grpc::ServerContext* context, const adapt::v1::ListStoresRequest* request,
                          adapt::v1::ListStoresResponse* response) override {
    Record(context);
    std::lock_guard<std::mutex> lock(mu_);
    list_requests_.push_back(*request);
    const size_t start = request->page_token().empty() ? 0 : std::stoul(request->page_token());
    if (start >= fail_list_at_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "draining");
    const size_t size = request->page_size() == 0 ? 2 : request->page_size();
    const size_t end = std::min<size_t>(start + size, 5);
    for (size_t i = start; i < end; ++i) {
      response->add_stores()->set_store("s" + std::to_string(i));
    }
    if (stuck_) {
      response->set_next_page_token(request->page_token().empty() ? "0" : request->page_token());
    } else if (end < 5) {
      response->set_next_page_token(std::to_string(end));
    }
    return grpc::Status::OK;
  }

  void set_error(grpc::Status error) { error_ = std::move(error); }
  // The next `n` calls of GetStore and Adapt answer UNAVAILABLE.
  void refuse_next(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_ = n;
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void set_stuck() { stuck_ = true; }
  void fail_list_at(size_t start) { fail_list_at_ = start; }
  std::vector<adapt::v1::ListStoresRequest> list_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return list_requests_;
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }
  std::chrono::system_clock::time_point deadline() {
    std::lock_guard<std::mutex> lock(mu_);
    return deadline_;
  }
  int messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  std::vector<std::string> tenants() {
    std::lock_guard<std::mutex> lock(mu_);
    return tenants_;
  }
  std::vector<AdaptRequest> adapt_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return adapt_requests_;
  }
  std::vector<adapt::v1::StoreChunk> chunks() {
    std::lock_guard<std::mutex> lock(mu_);
    return chunks_;
  }

 private:
  bool Refused() {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_ == 0) return false;
    --refuse_;
    return true;
  }
  void Record(grpc::ServerContext* context) {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    deadline_ = context->deadline();
    authorization_.clear();
    auto it = context->client_metadata().find("authorization");
    if (it != context->client_metadata().end()) {
      authorization_.assign(it->second.data(), it->second.size());
    }
  }

  grpc::Status error_;
  std::mutex mu_;
  std::string authorization_;
  std::chrono::system_clock::time_point deadline_;
  int messages_ = 0;
  std::vector<std::string> tenants_;
  std::vector<AdaptRequest> adapt_requests_;
  std::vector<adapt::v1::StoreChunk> chunks_;
  std::vector<adapt::v1::ListStoresRequest> list_requests_;
  bool stuck_ = false;
  size_t fail_list_at_ = 5;
  int refuse_ = 0;
  int calls_ = 0;
};

std::vector<std::string> StoreNames(const adapt::v1::ListStoresResponse& response) {
  std::vector<std::string> names;
  for (const auto& store : response.stores()) names.push_back(store.store());
  return names;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<Client> MakeClient(ClientOptions options) {
    options.address = "127.0.0.1:" + std::to_string(port_);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  FakeService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(ClientTest, SendsBearerTokenAndDeadline) {
  ClientOptions options;
  options.token = "secret";
  options.unary_timeout = absl::Seconds(12);
  std::unique_ptr<Client> client = MakeClient(options);
  const auto before = std::chrono::system_clock::now();
  absl::StatusOr<adapt::v1::StoreInfo> info = client->GetStore("acme", "s1");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->tenant(), "acme");
  EXPECT_EQ(info->store(), "s1");
  EXPECT_EQ(info->version(), 7u);
  EXPECT_EQ(service_.authorization(), "Bearer secret");
  // The deadline the server saw is the call's start plus 12 s; the call started between
  // `before` and now (a loaded machine may take a while to deliver it).
  const auto after = std::chrono::system_clock::now();
  EXPECT_GT(std::chrono::duration<double>(service_.deadline() - before).count(), 11.0);
  EXPECT_LT(std::chrono::duration<double>(service_.deadline() - after).count(), 13.0);
}

TEST_F(ClientTest, NoTokenSendsNoAuthorization) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  ASSERT_TRUE(client->GetStore("acme", "s1").ok());
  EXPECT_EQ(service_.authorization(), "");
}

TEST_F(ClientTest, MapsStatusCodeAndMessage) {
  service_.set_error(grpc::Status(grpc::StatusCode::NOT_FOUND, "store acme/s1 not found"));
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<adapt::v1::StoreInfo> info = client->GetStore("acme", "s1");
  EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(info.status().message(), "store acme/s1 not found");
}

TEST_F(ClientTest, FeedbackSendsTheItemsWithTheUnaryDeadline) {
  ClientOptions options;
  options.unary_timeout = absl::Seconds(12);
  std::unique_ptr<Client> client = MakeClient(options);
  adapt::v1::FeedbackRequest request;
  request.set_tenant("acme");
  request.set_store("s1");
  request.add_items()->set_prediction_id("p1.8000000000000001.0000000000000002.3");
  request.add_items()->set_prediction_id("p1.8000000000000001.0000000000000002.4");
  const auto before = std::chrono::system_clock::now();
  absl::StatusOr<adapt::v1::FeedbackResponse> response = client->Feedback(request);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->accepted(), 2u);
  EXPECT_EQ(response->version(), request.items(0).prediction_id().size());
  EXPECT_GT(std::chrono::duration<double>(service_.deadline() - before).count(), 11.0);
  service_.set_error(grpc::Status(grpc::StatusCode::NOT_FOUND, "items[0].prediction_id: gone"));
  response = client->Feedback(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(response.status().message(), "items[0].prediction_id: gone");
}

TEST(FromGrpcStatusTest, EveryCodeMapsOneToOne) {
  for (int code = 0; code <= 16; ++code) {
    absl::Status status =
        FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(code), code ? "m" : ""));
    EXPECT_EQ(static_cast<int>(status.code()), code);
    EXPECT_EQ(absl::StatusCodeToString(status.code()),
              absl::StatusCodeToString(static_cast<absl::StatusCode>(code)));
  }
}

TEST_F(ClientTest, AdaptSendsAllBatchesInOneStream) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  std::vector<AdaptRequest> batches(3);
  batches[0].set_tenant("acme");
  batches[0].set_store("s1");
  for (AdaptRequest& batch : batches) {
    batch.add_examples()->set_label("a");
    batch.add_examples()->set_label("b");
  }
  absl::StatusOr<AdaptResponse> response = client->Adapt(batches);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->accepted(), 6u);
  EXPECT_EQ(service_.messages(), 3);
  EXPECT_EQ(service_.tenants(), (std::vector<std::string>{"acme", "", ""}));
}

TEST_F(ClientTest, StreamDeadlineUsesStreamTimeout) {
  ClientOptions options;
  options.stream_timeout = absl::Seconds(100);
  std::unique_ptr<Client> client = MakeClient(options);
  const auto before = std::chrono::system_clock::now();
  ASSERT_TRUE(client->Adapt({}).ok());
  const auto after = std::chrono::system_clock::now();
  EXPECT_GT(std::chrono::duration<double>(service_.deadline() - before).count(), 99.0);
  EXPECT_LT(std::chrono::duration<double>(service_.deadline() - after).count(), 101.0);
}

TEST_F(ClientTest, ExportCollectsChunksInOrder) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<std::string> snapshot = client->ExportStore("acme", "s1");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(*snapshot, "abcdefg");
}

TEST_F(ClientTest, ExportSinkErrorIsReturned) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::Status status = client->ExportStore(
      "acme", "s1", [](absl::string_view) { return absl::DataLossError("disk full"); });
  EXPECT_EQ(status, absl::DataLossError("disk full"));
}

TEST_F(ClientTest, ImportSendsChunksAndNamesTargetFirst) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<adapt::v1::StoreInfo> info = client->ImportStore("acme", "s2", "abcdefg", 3);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->tenant(), "acme");
  std::vector<adapt::v1::StoreChunk> chunks = service_.chunks();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].store(), "s2");
  EXPECT_EQ(chunks[0].data(), "abc");
  EXPECT_EQ(chunks[1].tenant(), "");
  EXPECT_EQ(chunks[1].data(), "def");
  EXPECT_EQ(chunks[2].data(), "g");
}

TEST_F(ClientTest, ImportOfEmptySnapshotStillNamesTarget) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  ASSERT_TRUE(client->ImportStore("acme", "s2", "").ok());
  std::vector<adapt::v1::StoreChunk> chunks = service_.chunks();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].tenant(), "acme");
  EXPECT_EQ(chunks[0].data(), "");
}

TEST_F(ClientTest, PredictStreamKeepsOrder) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  std::vector<adapt::v1::PredictRequest> requests(50);
  for (size_t i = 0; i < requests.size(); ++i) requests[i].set_top_k(i + 1);
  absl::StatusOr<std::vector<adapt::v1::PredictResponse>> responses =
      client->PredictStream(requests);
  ASSERT_TRUE(responses.ok()) << responses.status();
  ASSERT_EQ(responses->size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ((*responses)[i].version(), i + 1);
}

// The call stays open between requests: each response is read before the next request is
// written, which a client that sent everything first could not do.
TEST_F(ClientTest, OpenPredictStreamAnswersEachRequestWhileOpen) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  std::unique_ptr<PredictStreamCall> call = client->OpenPredictStream();
  for (uint32_t i = 1; i <= 5; ++i) {
    adapt::v1::PredictRequest request;
    request.set_top_k(i);
    ASSERT_TRUE(call->Write(request));
    std::optional<adapt::v1::PredictResponse> response = call->Read();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->version(), i);
  }
  EXPECT_TRUE(call->WritesDone());
  EXPECT_FALSE(call->Read().has_value());
  EXPECT_TRUE(call->Finish().ok());
  EXPECT_EQ(call->Finish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(call->Write(adapt::v1::PredictRequest()));
}

TEST_F(ClientTest, PredictStreamCallCancelledOrLeftOpen) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  std::unique_ptr<PredictStreamCall> call = client->OpenPredictStream();
  ASSERT_TRUE(call->Write(adapt::v1::PredictRequest()));
  ASSERT_TRUE(call->Read().has_value());
  call->Cancel();
  EXPECT_EQ(call->Finish().code(), absl::StatusCode::kCancelled);
  // A call dropped while open is cancelled by its destructor, which returns.
  std::unique_ptr<PredictStreamCall> dropped = client->OpenPredictStream();
  ASSERT_TRUE(dropped->Write(adapt::v1::PredictRequest()));
  dropped.reset();
  // Finish without WritesDone closes the sending side itself.
  std::unique_ptr<PredictStreamCall> unclosed = client->OpenPredictStream();
  ASSERT_TRUE(unclosed->Write(adapt::v1::PredictRequest()));
  EXPECT_TRUE(unclosed->Finish().ok());
}

TEST_F(ClientTest, HealthReportsTheServingStatus) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<ServingStatus> health = client->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, ServingStatus::kServing);
  EXPECT_STREQ(ServingStatusName(*health), "SERVING");
  server_->GetHealthCheckService()->SetServingStatus(false);
  health = client->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, ServingStatus::kNotServing);
  EXPECT_EQ(client->Health("no.such.Service").status().code(), absl::StatusCode::kNotFound);
}

adapt::v1::Input Item(float value) {
  adapt::v1::Input input;
  input.mutable_vector()->add_values(value);
  return input;
}

TEST(RequestsTest, ExamplesInBatchesWithPasses) {
  std::vector<adapt::v1::Example> examples(5);
  for (size_t i = 0; i < examples.size(); ++i) examples[i].set_id("e" + std::to_string(i));
  AdaptOptions options;
  options.batch = 2;
  options.passes = 3;
  std::vector<AdaptRequest> requests = ExampleRequests("acme", "s", examples, options);
  ASSERT_EQ(requests.size(), 3u);
  std::vector<std::string> ids;
  for (const AdaptRequest& request : requests) {
    EXPECT_EQ(request.tenant(), "acme");
    EXPECT_EQ(request.store(), "s");
    EXPECT_EQ(request.passes(), 3u);
    EXPECT_FALSE(request.restart_sequence());
    for (const auto& example : request.examples()) ids.push_back(example.id());
  }
  EXPECT_EQ(requests[2].examples_size(), 1);
  EXPECT_EQ(ids, (std::vector<std::string>{"e0", "e1", "e2", "e3", "e4"}));
  std::vector<AdaptRequest> none = ExampleRequests("acme", "s", {}, options);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].store(), "s");
}

// Messages never mix two sequences, and each sequence's first message restarts it.
TEST(RequestsTest, SequencesRestartEachAndNeverShareAMessage) {
  const std::vector<std::vector<adapt::v1::Input>> sequences = {
      {Item(1), Item(2), Item(3)}, {}, {Item(4), Item(5), Item(6), Item(7), Item(8)}};
  AdaptOptions options;
  options.batch = 2;
  std::vector<AdaptRequest> requests = SequenceRequests("acme", "s", sequences, options);
  std::vector<std::pair<int, bool>> shape;  // items, restart
  std::vector<float> items;
  for (const AdaptRequest& request : requests) {
    shape.emplace_back(request.sequence_size(), request.restart_sequence());
    for (const auto& item : request.sequence()) items.push_back(item.vector().values(0));
  }
  EXPECT_EQ(shape, (std::vector<std::pair<int, bool>>{
                       {2, true}, {1, false}, {2, true}, {2, false}, {1, false}}));
  EXPECT_EQ(items, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  options.continue_sequence = true;
  requests = SequenceRequests("acme", "s", sequences, options);
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_FALSE(requests[0].restart_sequence());
  EXPECT_TRUE(requests[2].restart_sequence());
  requests = SequenceRequests("acme", "s", {{}, {}}, options);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].sequence_size(), 0);
  EXPECT_FALSE(requests[0].restart_sequence());
}

// Item ids travel with their items, message by message.
TEST(RequestsTest, SequenceIdsFollowTheirItems) {
  const std::vector<std::vector<adapt::v1::Input>> sequences = {
      {Item(1), Item(2), Item(3)}, {}, {Item(4), Item(5)}};
  const std::vector<std::vector<std::string>> ids = {{"a", "b", "c"}, {}, {"d", "e"}};
  AdaptOptions options;
  options.batch = 2;
  const std::vector<AdaptRequest> requests = SequenceRequests("acme", "s", sequences, options, ids);
  std::vector<std::vector<std::string>> sent;
  for (const AdaptRequest& request : requests) {
    ASSERT_EQ(request.sequence_ids_size(), request.sequence_size());
    sent.emplace_back(request.sequence_ids().begin(), request.sequence_ids().end());
  }
  EXPECT_EQ(sent, (std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}, {"d", "e"}}));
  for (const AdaptRequest& request : SequenceRequests("acme", "s", sequences, options)) {
    EXPECT_EQ(request.sequence_ids_size(), 0);
  }
}

TEST_F(ClientTest, AdaptSequencesSendsOneStream) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  AdaptOptions options;
  options.batch = 3;
  options.passes = 2;
  absl::StatusOr<AdaptResponse> response = client->AdaptSequences(
      "acme", "s", {{Item(1), Item(2)}, {Item(3), Item(4), Item(5)}}, options);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->accepted(), 5u);
  EXPECT_EQ(service_.calls(), 1);
  std::vector<AdaptRequest> sent = service_.adapt_requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0].restart_sequence() && sent[1].restart_sequence());
  EXPECT_EQ(sent[1].passes(), 2u);
  std::vector<adapt::v1::Example> examples(4);
  response = client->AdaptExamples("acme", "s", examples, options);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->accepted(), 4u);
  EXPECT_EQ(service_.adapt_requests().size(), 4u);
}

TEST_F(ClientTest, DeadlineExceeded) {
  ClientOptions options;
  options.unary_timeout = absl::Milliseconds(200);
  std::unique_ptr<Client> client = MakeClient(options);
  EXPECT_EQ(client->ListEncoders().status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ClientTest, ListStoresFollowsEveryPage) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<adapt::v1::ListStoresResponse> all = client->ListStores("acme");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(StoreNames(*all), (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4"}));
  EXPECT_TRUE(all->next_page_token().empty());
  std::vector<std::string> tokens;
  for (const auto& request : service_.list_requests()) {
    EXPECT_EQ(request.tenant(), "acme");
    EXPECT_EQ(request.page_size(), 0u);
    tokens.push_back(request.page_token());
  }
  EXPECT_EQ(tokens, (std::vector<std::string>{"", "2", "4"}));
}

TEST_F(ClientTest, ListStoresSendsThePageSize) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  absl::StatusOr<adapt::v1::ListStoresResponse> all = client->ListStores("acme", 3);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->stores_size(), 5);
  ASSERT_EQ(service_.list_requests().size(), 2u);
  EXPECT_EQ(service_.list_requests()[1].page_size(), 3u);
}

// UNAVAILABLE (a store being handed off) is retried with backoff, but not for Adapt, whose
// retry could apply examples twice.
TEST_F(ClientTest, UnavailableIsRetriedButNotForAdapt) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  service_.refuse_next(2);
  absl::StatusOr<adapt::v1::StoreInfo> info = client->GetStore("acme", "s1");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(service_.calls(), 3);
  service_.refuse_next(1);
  AdaptRequest batch;
  batch.set_tenant("acme");
  batch.set_store("s1");
  EXPECT_EQ(client->Adapt({batch}).status(), absl::UnavailableError("moving; retry"));
  EXPECT_EQ(service_.calls(), 4);
  ClientOptions once;
  once.max_attempts = 1;
  std::unique_ptr<Client> no_retries = MakeClient(once);
  service_.refuse_next(1);
  EXPECT_EQ(no_retries->GetStore("acme", "s1").status(), absl::UnavailableError("moving; retry"));
  ClientOptions bad;
  bad.max_attempts = 6;
  bad.address = "127.0.0.1:1";
  EXPECT_EQ(Client::Connect(bad).status(),
            absl::InvalidArgumentError("max_attempts must be from 1 to 5"));
}

TEST_F(ClientTest, ListStoresReturnsTheErrorOfALaterPage) {
  service_.fail_list_at(2);
  ClientOptions once;  // the error at once, not after the retries
  once.max_attempts = 1;
  std::unique_ptr<Client> client = MakeClient(once);
  EXPECT_EQ(client->ListStores("acme").status(), absl::UnavailableError("draining"));
}

TEST_F(ClientTest, ListStoresRefusesATokenThatDoesNotMove) {
  service_.set_stuck();
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  EXPECT_EQ(client->ListStores("acme").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(service_.list_requests().size(), 2u);
}

TEST_F(ClientTest, ListStoresLazilyWithForEachStore) {
  std::unique_ptr<Client> client = MakeClient(ClientOptions());
  std::vector<std::string> seen;
  absl::Status status = client->ForEachStore("acme", [&](const adapt::v1::StoreInfo& store) {
    seen.push_back(store.store());
    return seen.size() == 3 ? absl::CancelledError("enough") : absl::OkStatus();
  });
  EXPECT_EQ(status, absl::CancelledError("enough"));
  EXPECT_EQ(seen, (std::vector<std::string>{"s0", "s1", "s2"}));
  EXPECT_EQ(service_.list_requests().size(), 2u) << "the third page was never asked for";
}

TEST(ConnectTest, MissingCaFileIsAnError) {
  ClientOptions options;
  options.tls_ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(Client::Connect(options).status().code(), absl::StatusCode::kNotFound);
}

TEST(ConnectTest, EmptyAddressIsAnError) {
  ClientOptions options;
  options.address = "";
  EXPECT_EQ(Client::Connect(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
