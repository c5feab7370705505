// Every kind of bad input gets the status code docs/DESIGN.md ("Status codes") names, and
// leaves the store exactly as it was (same statistics, version, labels and predictions).
#include <limits>

#include "gtest/gtest.h"
#include "tests/integration/test_server.h"

namespace adaptd::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new TestServer(/*max_message_bytes=*/64 << 10);
    auto& stub = server_->stub();
    ASSERT_TRUE(CreateStore(stub, "t", "s", FaastSpec()).ok());
    adapt::v1::AdaptRequest m;
    m.set_tenant("t");
    m.set_store("s");
    *m.add_examples() = LabelExample({1, 0, 0}, "a");
    *m.add_examples() = LabelExample({0, 1, 0}, "b");
    *m.add_examples() = LabelExample({0, 0, 1}, "c");
    adapt::v1::AdaptResponse r;
    ASSERT_TRUE(AdaptStream(stub, {m}, &r).ok());
    ASSERT_TRUE(Compile(stub, "t", "s").ok());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override { before_ = Fingerprint(); }
  void TearDown() override { EXPECT_EQ(Fingerprint(), before_) << "the store changed"; }

  // Everything a reader can see of t/s.
  std::string Fingerprint() {
    adapt::v1::StoreInfo info = GetStore(stub(), "t", "s");
    info.clear_memory_bytes();
    info.mutable_faast()->clear_compile_seconds();
    adapt::v1::PredictResponse p;
    EXPECT_TRUE(Predict(stub(), "t", "s", {{0.5f, 0.2f, 0.1f}}, &p, 3).ok());
    return info.SerializeAsString() + p.SerializeAsString();
  }

  grpc::StatusCode AdaptOne(const adapt::v1::Example& e, std::string* message = nullptr) {
    adapt::v1::AdaptRequest m;
    m.set_tenant("t");
    m.set_store("s");
    *m.add_examples() = LabelExample({1, 1, 1}, "a");  // a good example before the bad one
    *m.add_examples() = e;
    adapt::v1::AdaptResponse r;
    grpc::Status status = AdaptStream(stub(), {m}, &r);
    if (message != nullptr) *message = status.error_message();
    return status.error_code();
  }

  adapt::v1::Adaptation::Stub& stub() { return server_->stub(); }
  static TestServer* server_;
  std::string before_;
};
TestServer* BadInputTest::server_ = nullptr;

TEST_F(BadInputTest, WrongDimension) {
  std::string message;
  EXPECT_EQ(AdaptOne(LabelExample({1, 2}, "a"), &message), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(message, "examples[1].input.vector: dimension 2, expected 3");
  adapt::v1::PredictResponse p;
  grpc::Status status = Predict(stub(), "t", "s", {{1, 2, 3, 4}}, &p);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "inputs[0].vector: dimension 4, expected 3");
}

TEST_F(BadInputTest, NaNAndInf) {
  std::string message;
  EXPECT_EQ(AdaptOne(LabelExample({1, kNaN, 0}, "a"), &message),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(message.rfind("examples[1].input.vector.values[1]: not a finite number", 0), 0u)
      << message;
  EXPECT_EQ(AdaptOne(LabelExample({kInf, 0, 0}, "a")), grpc::StatusCode::INVALID_ARGUMENT);
  adapt::v1::PredictResponse p;
  EXPECT_EQ(Predict(stub(), "t", "s", {{-kInf, 0, 0}}, &p).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, EmptyAndInvalidLabels) {
  std::string message;
  EXPECT_EQ(AdaptOne(LabelExample({1, 0, 0}, ""), &message), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(message, "examples[1].label: empty");
  EXPECT_EQ(AdaptOne(LabelExample({1, 0, 0}, "\xff\xfe")), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdaptOne(LabelExample({1, 0, 0}, std::string(1000, 'x'))),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdaptOne(VectorExample({1, 0, 0}, {1})), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, BadMessageLaterInTheStreamCommitsNothing) {
  adapt::v1::AdaptRequest good, bad;
  good.set_tenant("t");
  good.set_store("s");
  *good.add_examples() = LabelExample({3, 3, 3}, "new-label");
  *bad.add_examples() = LabelExample({1, 0, kNaN}, "a");
  adapt::v1::AdaptResponse r;
  grpc::Status status = AdaptStream(stub(), {good, good, bad}, &r);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("message 3: ", 0), 0u) << status.error_message();
  adapt::v1::AdaptRequest other = good;
  other.set_store("elsewhere");
  EXPECT_EQ(AdaptStream(stub(), {good, other}, &r).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, SequencesAndPassesOnlyWhereTheKindTakesThem) {
  adapt::v1::AdaptRequest m;
  m.set_tenant("t");
  m.set_store("s");
  m.add_sequence()->mutable_vector()->add_values(1);
  adapt::v1::AdaptResponse r;
  grpc::Status status = AdaptStream(stub(), {m}, &r);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("sequence:", 0), 0u) << status.error_message();
  *m.add_examples() = LabelExample({1, 0, 0}, "a");
  EXPECT_EQ(AdaptStream(stub(), {m}, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  m.clear_sequence();
  m.set_passes(2);
  status = AdaptStream(stub(), {m}, &r);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("passes:", 0), 0u) << status.error_message();
  m.set_passes(0);
  m.set_restart_sequence(true);
  status = AdaptStream(stub(), {m}, &r);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("restart_sequence:", 0), 0u) << status.error_message();
}

TEST_F(BadInputTest, UnknownStoreAndTenant) {
  adapt::v1::AdaptRequest m;
  m.set_tenant("t");
  m.set_store("missing");
  *m.add_examples() = LabelExample({1, 0, 0}, "a");
  adapt::v1::AdaptResponse r;
  EXPECT_EQ(AdaptStream(stub(), {m}, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  adapt::v1::PredictResponse p;
  EXPECT_EQ(Predict(stub(), "nobody", "s", {{1, 0, 0}}, &p).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Compile(stub(), "t", "missing").error_code(), grpc::StatusCode::NOT_FOUND);
  adapt::v1::AdaptRequest unnamed;
  *unnamed.add_examples() = LabelExample({1, 0, 0}, "a");
  EXPECT_EQ(AdaptStream(stub(), {unnamed}, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(AdaptStream(stub(), {}, &r).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, DuplicateCreateAndBadNames) {
  EXPECT_EQ(CreateStore(stub(), "t", "s", FaastSpec()).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  for (const char* name : {"", "a/b", "-x", "with space"}) {
    grpc::Status status = CreateStore(stub(), "t", name, FaastSpec());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
    EXPECT_EQ(status.error_message().rfind("store:", 0), 0u) << status.error_message();
  }
  EXPECT_EQ(CreateStore(stub(), std::string(64, 't'), "x", FaastSpec()).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, BadParametersAndKinds) {
  adapt::v1::StoreSpec spec = FaastSpec();
  spec.mutable_faast()->set_rcond(2);
  grpc::Status status = CreateStore(stub(), "t", "p", spec);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "spec.faast.rcond: must be in (0, 1), got 2");
  spec = FaastSpec();
  spec.mutable_faast()->set_decay(0);
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  spec = FaastSpec();
  spec.set_encoder("no-such-encoder");
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  spec = FaastSpec();
  spec.set_dim(1 << 20);
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // faast parameters under another kind.
  spec = FaastSpec();
  spec.set_kind(adapt::v1::STORE_KIND_FALCON);
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  spec.set_kind(adapt::v1::STORE_KIND_FWPKM);
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  spec.set_kind(adapt::v1::STORE_KIND_UNSPECIFIED);
  EXPECT_EQ(CreateStore(stub(), "t", "p", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  adapt::v1::CompileRequest compile;
  compile.set_tenant("t");
  compile.set_store("s");
  compile.mutable_faast()->set_alpha(-1);
  adapt::v1::CompileResponse response;
  EXPECT_EQ(stub().Compile(Context().get(), compile, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  adapt::v1::PredictResponse p;
  EXPECT_EQ(Predict(stub(), "t", "s", {}, &p).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Predict(stub(), "t", "s", {{1, 0, 0}}, &p, 1000000).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(BadInputTest, OversizedMessage) {
  adapt::v1::AdaptRequest m;
  m.set_tenant("t");
  m.set_store("s");
  std::vector<float> key(3, 1.0f);
  for (int i = 0; i < 8000; ++i) *m.add_examples() = LabelExample(key, "a");
  ASSERT_GT(m.ByteSizeLong(), 64u << 10);
  adapt::v1::AdaptResponse r;
  EXPECT_EQ(AdaptStream(stub(), {m}, &r).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(BadInputTest, ForgetOfUnknownLabelOrTooMany) {
  auto forget = [&](const adapt::v1::Example& e, int copies) {
    auto context = Context();
    adapt::v1::ForgetResponse response;
    auto writer = stub().Forget(context.get(), &response);
    adapt::v1::ForgetRequest request;
    request.set_tenant("t");
    request.set_store("s");
    for (int i = 0; i < copies; ++i) *request.add_examples() = e;
    writer->Write(request);
    writer->WritesDone();
    return writer->Finish().error_code();
  };
  EXPECT_EQ(forget(LabelExample({1, 0, 0}, "never-seen"), 1), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(forget(LabelExample({1, 0, 0}, "a"), 10), grpc::StatusCode::FAILED_PRECONDITION);
}

}  // namespace
}  // namespace adaptd::testing
