// Every RPC of adapt.v1.Adaptation against an in-process server, plus the health service.
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>

#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "tests/integration/test_server.h"

namespace adaptd::testing {
namespace {

// Four well-separated classes in 8 dimensions.
std::vector<adapt::v1::Example> Classes(int per_class, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0, 0.1f);
  std::vector<adapt::v1::Example> out;
  for (int i = 0; i < per_class; ++i) {
    for (int c = 0; c < 4; ++c) {
      std::vector<float> key(8);
      for (auto& v : key) v = noise(rng);
      key[c] += 1.0f;
      key[c + 4] -= 1.0f;
      out.push_back(LabelExample(key, "class-" + std::to_string(c)));
    }
  }
  return out;
}

adapt::v1::AdaptRequest Message(const std::string& tenant, const std::string& store,
                                const std::vector<adapt::v1::Example>& examples, size_t begin,
                                size_t end) {
  adapt::v1::AdaptRequest m;
  m.set_tenant(tenant);
  m.set_store(store);
  for (size_t i = begin; i < end; ++i) *m.add_examples() = examples[i];
  return m;
}

class RpcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  adapt::v1::Adaptation::Stub& stub() { return server_->stub(); }
  static TestServer* server_;
};
TestServer* RpcTest::server_ = nullptr;

TEST_F(RpcTest, CreateAdaptCompilePredictGetListDelete) {
  ASSERT_TRUE(CreateStore(stub(), "acme", "intents", FaastSpec()).ok());
  const auto examples = Classes(20, 1);
  adapt::v1::AdaptResponse adapted;
  // Three messages in one stream: one transaction.
  ASSERT_TRUE(
      AdaptStream(stub(),
                  {Message("acme", "intents", examples, 0, 30), Message("", "", examples, 30, 60),
                   Message("acme", "intents", examples, 60, 80)},
                  &adapted)
          .ok());
  EXPECT_EQ(adapted.accepted(), 80u);
  EXPECT_EQ(adapted.evaluated(), 0u);  // nothing was published before

  adapt::v1::PredictResponse predicted;
  grpc::Status status = Predict(stub(), "acme", "intents", {{1, 0, 0, 0, -1, 0, 0, 0}}, &predicted);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();

  adapt::v1::CompileResponse compiled;
  ASSERT_TRUE(Compile(stub(), "acme", "intents", &compiled).ok());
  EXPECT_EQ(compiled.version(), 1u);
  EXPECT_EQ(compiled.faast().effective_rank(), 8u);

  ASSERT_TRUE(Predict(stub(), "acme", "intents",
                      {{1, 0, 0, 0, -1, 0, 0, 0}, {0, 0, 1, 0, 0, 0, -1, 0}}, &predicted, 3)
                  .ok());
  EXPECT_EQ(predicted.version(), 1u);
  ASSERT_EQ(predicted.predictions_size(), 2);
  EXPECT_EQ(predicted.predictions(0).labels(0).label(), "class-0");
  EXPECT_EQ(predicted.predictions(1).labels(0).label(), "class-2");
  ASSERT_EQ(predicted.predictions(0).labels_size(), 3);
  EXPECT_GE(predicted.predictions(0).labels(0).score(), predicted.predictions(0).labels(1).score());

  // A second adapt is evaluated prequentially against version 1.
  const auto more = Classes(5, 2);
  ASSERT_TRUE(
      AdaptStream(stub(), {Message("acme", "intents", more, 0, more.size())}, &adapted).ok());
  EXPECT_EQ(adapted.evaluated(), 20u);
  EXPECT_GE(adapted.accuracy(), 0.95);

  const auto info = GetStore(stub(), "acme", "intents");
  EXPECT_EQ(info.examples(), 100u);
  EXPECT_EQ(info.version(), 1u);
  EXPECT_EQ(info.labels_size(), 4);
  EXPECT_EQ(info.spec().dim(), 8u);
  EXPECT_GT(info.memory_bytes(), 0u);

  ASSERT_TRUE(CreateStore(stub(), "acme", "other", FaastSpec()).ok());
  adapt::v1::ListStoresRequest list_request;
  list_request.set_tenant("acme");
  adapt::v1::ListStoresResponse list;
  ASSERT_TRUE(stub().ListStores(Context().get(), list_request, &list).ok());
  ASSERT_EQ(list.stores_size(), 2);
  EXPECT_EQ(list.stores(0).store(), "intents");

  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("acme");
  del.set_store("other");
  adapt::v1::DeleteStoreResponse deleted;
  ASSERT_TRUE(stub().DeleteStore(Context().get(), del, &deleted).ok());
  EXPECT_EQ(stub().DeleteStore(Context().get(), del, &deleted).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(RpcTest, ForgetRemovesExamplesExactly) {
  ASSERT_TRUE(CreateStore(stub(), "acme", "forget", FaastSpec("labels", 0.5)).ok());
  ASSERT_TRUE(CreateStore(stub(), "acme", "reference", FaastSpec("labels", 0.5)).ok());
  const auto a = Classes(10, 3), b = Classes(3, 4);
  adapt::v1::AdaptResponse r;
  ASSERT_TRUE(AdaptStream(stub(),
                          {Message("acme", "forget", a, 0, a.size()),
                           Message("acme", "forget", b, 0, b.size())},
                          &r)
                  .ok());
  ASSERT_TRUE(AdaptStream(stub(), {Message("acme", "reference", a, 0, a.size())}, &r).ok());

  auto context = Context();
  adapt::v1::ForgetResponse forgotten;
  auto writer = stub().Forget(context.get(), &forgotten);
  adapt::v1::ForgetRequest request;
  request.set_tenant("acme");
  request.set_store("forget");
  for (const auto& e : b) *request.add_examples() = e;
  ASSERT_TRUE(writer->Write(request));
  writer->WritesDone();
  ASSERT_TRUE(writer->Finish().ok());
  EXPECT_EQ(forgotten.forgotten(), b.size());

  ASSERT_TRUE(Compile(stub(), "acme", "forget").ok());
  ASSERT_TRUE(Compile(stub(), "acme", "reference").ok());
  const std::vector<std::vector<float>> probe = {{0.3f, -0.2f, 0.5f, 0.1f, 0, 0.4f, -0.6f, 0.2f}};
  adapt::v1::PredictResponse p1, p2;
  ASSERT_TRUE(Predict(stub(), "acme", "forget", probe, &p1, 4).ok());
  ASSERT_TRUE(Predict(stub(), "acme", "reference", probe, &p2, 4).ok());
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(p1.predictions(0).labels(j).label(), p2.predictions(0).labels(j).label());
    EXPECT_NEAR(p1.predictions(0).labels(j).score(), p2.predictions(0).labels(j).score(), 1e-5);
  }
}

TEST_F(RpcTest, PredictStreamAnswersInOrder) {
  ASSERT_TRUE(CreateStore(stub(), "acme", "stream", FaastSpec()).ok());
  const auto examples = Classes(10, 5);
  adapt::v1::AdaptResponse r;
  ASSERT_TRUE(
      AdaptStream(stub(), {Message("acme", "stream", examples, 0, examples.size())}, &r).ok());
  ASSERT_TRUE(Compile(stub(), "acme", "stream").ok());
  auto context = Context();
  auto stream = stub().PredictStream(context.get());
  for (int c = 0; c < 4; ++c) {
    adapt::v1::PredictRequest request;
    request.set_tenant("acme");
    request.set_store("stream");
    auto* v = request.add_inputs()->mutable_vector();
    for (int j = 0; j < 8; ++j) v->add_values(j == c ? 1.0f : (j == c + 4 ? -1.0f : 0.0f));
    ASSERT_TRUE(stream->Write(request));
    adapt::v1::PredictResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.predictions(0).labels(0).label(), "class-" + std::to_string(c));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(RpcTest, ExportImportRoundTrip) {
  ASSERT_TRUE(CreateStore(stub(), "acme", "source", FaastSpec("vector:3")).ok());
  std::mt19937_64 rng(6);
  std::normal_distribution<float> n;
  adapt::v1::AdaptRequest m;
  m.set_tenant("acme");
  m.set_store("source");
  for (int i = 0; i < 50; ++i) {
    std::vector<float> key(6), target(3);
    for (auto& v : key) v = n(rng);
    for (auto& v : target) v = n(rng);
    *m.add_examples() = VectorExample(key, target);
  }
  adapt::v1::AdaptResponse r;
  ASSERT_TRUE(AdaptStream(stub(), {m}, &r).ok());
  ASSERT_TRUE(Compile(stub(), "acme", "source").ok());

  adapt::v1::ExportStoreRequest export_request;
  export_request.set_tenant("acme");
  export_request.set_store("source");
  auto context = Context();
  auto reader = stub().ExportStore(context.get(), export_request);
  std::string file;
  adapt::v1::StoreChunk chunk;
  while (reader->Read(&chunk)) file += chunk.data();
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GT(file.size(), 24u);

  auto import = [&](const std::string& store, const std::string& data) {
    auto ctx = Context();
    adapt::v1::StoreInfo info;
    auto writer = stub().ImportStore(ctx.get(), &info);
    adapt::v1::StoreChunk first;
    first.set_tenant("beta");
    first.set_store(store);
    first.set_data(data.substr(0, data.size() / 2));
    writer->Write(first);
    adapt::v1::StoreChunk second;
    second.set_data(data.substr(data.size() / 2));
    writer->Write(second);
    writer->WritesDone();
    return writer->Finish();
  };
  ASSERT_TRUE(import("copy", file).ok());
  std::string corrupt = file;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  EXPECT_EQ(import("corrupt", corrupt).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(import("truncated", file.substr(0, file.size() - 10)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(import("foreign", std::string(100, 'x')).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(import("copy", file).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  adapt::v1::PredictResponse p1, p2;
  const std::vector<std::vector<float>> probe = {{1, 2, 3, 4, 5, 6}};
  ASSERT_TRUE(Predict(stub(), "acme", "source", probe, &p1).ok());
  ASSERT_TRUE(Predict(stub(), "beta", "copy", probe, &p2).ok());
  EXPECT_EQ(p1.version(), p2.version());
  ASSERT_EQ(p2.predictions(0).vector_size(), 3);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(p1.predictions(0).vector(j), p2.predictions(0).vector(j));
  }
}

TEST_F(RpcTest, ListEncodersAndHealth) {
  adapt::v1::ListEncodersResponse encoders;
  ASSERT_TRUE(stub().ListEncoders(Context().get(), {}, &encoders).ok());
  ASSERT_GE(encoders.encoders_size(), 1);
  bool identity = false;
  for (const auto& e : encoders.encoders()) {
    identity |= e.name() == "identity";
    EXPECT_FALSE(e.fingerprint().empty());
  }
  EXPECT_TRUE(identity);

  // grpc.health.v1.Health/Check with an empty request, called as a generic unary method.
  grpc::GenericStub generic(server_->channel());
  grpc::ByteBuffer request, response;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                    &response, [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING
}

}  // namespace
}  // namespace adaptd::testing
