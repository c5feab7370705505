// Input validation beyond tests/integration/bad_input_test.cc: every store kind, text inputs,
// label limits and each kind's parameter ranges. Every bad input is INVALID_ARGUMENT (or the
// code docs/DESIGN.md names in "Status codes") with the field in the message, and leaves the
// stores unchanged.
// Documented limits (docs/SECURITY.md): a label is 1-256 bytes of UTF-8; a text 1 byte to
// 1 MiB of UTF-8; a label store holds at most max_labels distinct labels.
#include <functional>
#include <limits>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/security/security_server.h"

namespace adaptd::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

adapt::v1::StoreSpec Spec(adapt::v1::StoreKind kind, const std::string& encoder = "identity",
                          uint32_t dim = 4) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(kind);
  spec.set_encoder(encoder);
  if (encoder == "identity") spec.set_dim(dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  if (kind == adapt::v1::STORE_KIND_FALCON) {
    spec.mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
  }
  if (kind == adapt::v1::STORE_KIND_FWPKM) spec.mutable_fwpkm()->set_chunk(1);
  if (kind == adapt::v1::STORE_KIND_FAAST) {
    spec.mutable_faast()->set_auto_compile_every(0);
    spec.mutable_faast()->set_auto_compile_delay_ms(0);
    spec.mutable_faast()->set_max_labels(3);
  }
  return spec;
}

adapt::v1::Example Vec(std::vector<float> values, const std::string& label) {
  adapt::v1::Example e;
  for (float v : values) e.mutable_input()->mutable_vector()->add_values(v);
  e.set_label(label);
  return e;
}

adapt::v1::Example Text(const std::string& text, const std::string& label) {
  adapt::v1::Example e;
  e.mutable_input()->set_text(text);
  e.set_label(label);
  return e;
}

class InputValidationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    adapt::v1::ServerConfig config = TestConfig();
    auto* text = config.add_encoders();
    text->set_name("ngrams64");
    text->set_type("hashed_ngrams");
    text->set_dim(64);
    server_ = new SecurityServer(config);
    ASSERT_NE(server_->server(), nullptr);
    ASSERT_TRUE(Create("faast", Spec(adapt::v1::STORE_KIND_FAAST)).ok());
    ASSERT_TRUE(Create("falcon", Spec(adapt::v1::STORE_KIND_FALCON)).ok());
    ASSERT_TRUE(Create("fwpkm", Spec(adapt::v1::STORE_KIND_FWPKM)).ok());
    ASSERT_TRUE(Create("text", Spec(adapt::v1::STORE_KIND_FALCON, "ngrams64")).ok());
    for (const char* store : {"faast", "falcon", "fwpkm"}) {
      ASSERT_TRUE(Adapt(store, {Vec({1, 0, 0, 0}, "a"), Vec({0, 1, 0, 0}, "b")}).ok()) << store;
    }
    ASSERT_TRUE(Adapt("text", {Text("good morning", "greeting")}).ok());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override { before_ = Fingerprints(); }
  void TearDown() override { EXPECT_EQ(Fingerprints(), before_) << "a store changed"; }

  static adapt::v1::Adaptation::Stub& stub() { return server_->stub(); }

  static grpc::Status Create(const std::string& store, const adapt::v1::StoreSpec& spec) {
    adapt::v1::CreateStoreRequest request;
    request.set_tenant("t");
    request.set_store(store);
    *request.mutable_spec() = spec;
    adapt::v1::StoreInfo info;
    return stub().CreateStore(TokenContext("").get(), request, &info);
  }

  static grpc::Status Adapt(const std::string& store,
                            const std::vector<adapt::v1::Example>& examples) {
    adapt::v1::AdaptRequest m;
    m.set_tenant("t");
    m.set_store(store);
    for (const auto& e : examples) *m.add_examples() = e;
    auto context = TokenContext("");
    adapt::v1::AdaptResponse response;
    auto writer = stub().Adapt(context.get(), &response);
    writer->Write(m);
    writer->WritesDone();
    return writer->Finish();
  }

  static grpc::Status Predict(const std::string& store, const adapt::v1::Input& input,
                              uint32_t top_k = 1) {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store(store);
    request.set_top_k(top_k);
    *request.add_inputs() = input;
    adapt::v1::PredictResponse response;
    return stub().Predict(TokenContext("").get(), request, &response);
  }

  static std::string Fingerprints() {
    std::string all;
    for (const char* store : {"faast", "falcon", "fwpkm", "text"}) {
      adapt::v1::GetStoreRequest request;
      request.set_tenant("t");
      request.set_store(store);
      adapt::v1::StoreInfo info;
      EXPECT_TRUE(stub().GetStore(TokenContext("").get(), request, &info).ok());
      info.clear_memory_bytes();
      all += info.SerializeAsString();
    }
    return all;
  }

  static void ExpectInvalid(const grpc::Status& status, const std::string& field) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    // Anchored: the message opens with the field (a field named later, say inside an echoed
    // value, does not count).
    EXPECT_TRUE(absl::StartsWith(status.error_message(), field))
        << "'" << status.error_message() << "' does not start with " << field;
  }

  // A string field that is not UTF-8: refused by the server's parser, naming the field.
  static void ExpectNotUtf8(const grpc::Status& status, const std::string& field) {
    ExpectInvalid(status, field + ": not valid UTF-8");
  }

  static SecurityServer* server_;
  std::string before_;
};

SecurityServer* InputValidationTest::server_ = nullptr;

TEST_F(InputValidationTest, NaNAndInfInEveryKind) {
  for (const char* store : {"faast", "falcon", "fwpkm"}) {
    for (float bad : {kNaN, kInf, -kInf}) {
      ExpectInvalid(Adapt(store, {Vec({1, 0, 0, 0}, "a"), Vec({0, bad, 0, 0}, "b")}),
                    "examples[1].input.vector.values[1]");
      ExpectInvalid(Predict(store, Vec({bad, 0, 0, 0}, "").input()), "inputs[0]");
    }
  }
}

TEST_F(InputValidationTest, DimensionMismatchInEveryKind) {
  for (const char* store : {"faast", "falcon", "fwpkm"}) {
    ExpectInvalid(Adapt(store, {Vec({1, 0, 0}, "a")}), "examples[0].input");
    ExpectInvalid(Adapt(store, {Vec({1, 0, 0, 0, 0}, "a")}), "examples[0].input");
    ExpectInvalid(Predict(store, Vec({1, 0}, "").input()), "inputs[0]");
  }
}

TEST_F(InputValidationTest, EmptyInputsAndMessages) {
  for (const char* store : {"faast", "falcon", "fwpkm"}) {
    // An input that is neither a vector nor a text, and an empty vector.
    adapt::v1::Example none;
    none.set_label("a");
    EXPECT_EQ(Adapt(store, {none}).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << store;
    EXPECT_EQ(Adapt(store, {Vec({}, "a")}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(Predict(store, adapt::v1::Input()).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(InputValidationTest, LabelsEmptyOversizedOrNotUtf8) {
  for (const char* store : {"faast", "falcon", "fwpkm"}) {
    ExpectInvalid(Adapt(store, {Vec({1, 0, 0, 0}, "")}), "examples[0].label");
    ExpectInvalid(Adapt(store, {Vec({1, 0, 0, 0}, std::string(257, 'x'))}), "examples[0].label");
    // Invalid UTF-8 in a proto3 string field: protobuf cannot parse the message, so the
    // server's own parser finds the field; the stream ends and nothing changes.
    ExpectNotUtf8(Adapt(store, {Vec({1, 0, 0, 0}, "bad\xc3(utf8")}), "examples[0].label");
    ExpectNotUtf8(Adapt(store, {Vec({1, 0, 0, 0}, "a"), Vec({0, 1, 0, 0}, "\xed\xa0\x80")}),
                  "examples[1].label");  // a UTF-16 surrogate, in the second example
  }
}

TEST_F(InputValidationTest, LabelAtTheLimitIsAccepted) {
  // Accepted by a fresh store (so the suite's stores stay unchanged), then deleted.
  ASSERT_TRUE(Create("limit", Spec(adapt::v1::STORE_KIND_FALCON)).ok());
  EXPECT_TRUE(Adapt("limit", {Vec({1, 0, 0, 0}, std::string(256, 'x'))}).ok());
  EXPECT_TRUE(Adapt("limit", {Vec({1, 0, 0, 0}, "\xc3\xa9t\xc3\xa9")}).ok());  // "été"
  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("t");
  del.set_store("limit");
  adapt::v1::DeleteStoreResponse deleted;
  ASSERT_TRUE(stub().DeleteStore(TokenContext("").get(), del, &deleted).ok());
}

TEST_F(InputValidationTest, TextsEmptyOversizedOrNotUtf8) {
  ExpectInvalid(Adapt("text", {Text("", "greeting")}), "examples[0].input.text");
  ExpectNotUtf8(Adapt("text", {Text("caf\xe9", "greeting")}), "examples[0].input.text");
  // Over 1 MiB, in a message the server accepts (its size limit is 64 MiB).
  ExpectInvalid(Adapt("text", {Text(std::string((1 << 20) + 1, 'a'), "greeting")}),
                "examples[0].input.text");
  adapt::v1::Input bad;
  bad.set_text("\xff");
  ExpectNotUtf8(Predict("text", bad), "inputs[0].text");
  // A vector for a text encoder and a text for a vector encoder.
  ExpectInvalid(Adapt("text", {Vec({1, 0, 0, 0}, "greeting")}), "examples[0].input");
  ExpectInvalid(Adapt("faast", {Text("hello", "a")}), "examples[0].input");
}

TEST_F(InputValidationTest, NamesNotUtf8InUnaryCalls) {
  // Unary calls: gRPC alone would answer UNIMPLEMENTED with no message.
  ExpectNotUtf8(Create("bad\xc0\xafname", Spec(adapt::v1::STORE_KIND_FAAST)), "store");
  adapt::v1::GetStoreRequest get;
  get.set_tenant("t\xff");
  get.set_store("faast");
  adapt::v1::StoreInfo info;
  ExpectNotUtf8(stub().GetStore(TokenContext("").get(), get, &info), "tenant");
  adapt::v1::StoreSpec spec = Spec(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("vec\xe2\x82");  // truncated sequence
  ExpectNotUtf8(Create("bad", spec), "spec.encoder");
}

TEST_F(InputValidationTest, BadMessageLaterInAStreamCommitsNothing) {
  adapt::v1::AdaptRequest good;
  good.set_tenant("t");
  good.set_store("faast");
  *good.add_examples() = Vec({1, 0, 0, 0}, "a");
  adapt::v1::AdaptRequest bad = good;
  bad.mutable_examples(0)->set_label("\xfe");
  auto context = TokenContext("");
  adapt::v1::AdaptResponse response;
  auto writer = stub().Adapt(context.get(), &response);
  writer->Write(good);
  writer->Write(bad);
  writer->WritesDone();
  ExpectNotUtf8(writer->Finish(), "examples[0].label");
  // TearDown checks that the first message was not applied either.
}

TEST_F(InputValidationTest, TooManyLabels) {
  // The faast store takes at most 3 labels and holds "a" and "b".
  const grpc::Status status = Adapt("faast", {Vec({1, 0, 0, 0}, "c"), Vec({0, 0, 1, 0}, "d")});
  EXPECT_NE(status.error_code(), grpc::StatusCode::OK);
  EXPECT_NE(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_TRUE(absl::StartsWith(status.error_message(), "spec.faast.max_labels: "))
      << status.error_message();
}

TEST_F(InputValidationTest, OutOfRangeParametersOfEachKind) {
  struct Case {
    adapt::v1::StoreKind kind;
    std::function<void(adapt::v1::StoreSpec*)> set;
    std::string field;
  };
  using S = adapt::v1::StoreSpec;
  const adapt::v1::StoreKind faast = adapt::v1::STORE_KIND_FAAST,
                             falcon = adapt::v1::STORE_KIND_FALCON,
                             fwpkm = adapt::v1::STORE_KIND_FWPKM;
  const std::vector<Case> cases = {
      {faast, [](S* s) { s->mutable_faast()->set_rcond(-0.5); }, "spec.faast.rcond"},
      {faast, [](S* s) { s->mutable_faast()->set_ridge(-1); }, "spec.faast.ridge"},
      {faast, [](S* s) { s->mutable_faast()->set_decay(1.5); }, "spec.faast.decay"},
      {faast, [](S* s) { s->mutable_faast()->set_alpha(kNaN); }, "spec.faast.alpha"},
      {faast, [](S* s) { s->mutable_faast()->set_max_labels(0); }, "spec.faast.max_labels"},
      {falcon, [](S* s) { s->mutable_falcon()->add_beta(2.5); }, "spec.falcon.beta"},
      {falcon, [](S* s) { s->mutable_falcon()->add_beta(0); }, "spec.falcon.beta"},
      {falcon, [](S* s) { s->mutable_falcon()->set_lambda(-1); }, "spec.falcon.lambda"},
      {falcon, [](S* s) { s->mutable_falcon()->set_lambda(kInf); }, "spec.falcon.lambda"},
      {falcon, [](S* s) { s->mutable_falcon()->set_eps(-1); }, "spec.falcon.eps"},
      {falcon, [](S* s) { s->mutable_falcon()->set_eps_gamma(2); }, "spec.falcon.eps_gamma"},
      {falcon,
       [](S* s) {
         s->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_3);
         s->mutable_falcon()->set_window(0);
       },
       "spec.falcon.window"},
      {falcon,
       [](S* s) {
         s->mutable_falcon()->set_variant(static_cast<adapt::v1::FalconParams::Variant>(99));
       },
       "spec.falcon.variant"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_sub_keys(1); }, "spec.fwpkm.sub_keys"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_sub_keys(5000); }, "spec.fwpkm.sub_keys"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_top_k(0); }, "spec.fwpkm.top_k"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_top_k(65); }, "spec.fwpkm.top_k"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_chunk(0); }, "spec.fwpkm.chunk"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_value_lr(3); }, "spec.fwpkm.value_lr"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_addressing_lr(101); }, "spec.fwpkm.addressing_lr"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_idw_eps(0); }, "spec.fwpkm.idw_eps"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_key_dim(3); }, "spec.fwpkm.key_dim"},
      {fwpkm, [](S* s) { s->mutable_fwpkm()->set_max_labels(0); }, "spec.fwpkm.max_labels"},
  };
  for (const Case& c : cases) {
    adapt::v1::StoreSpec spec = Spec(c.kind);
    c.set(&spec);
    ExpectInvalid(Create("bad", spec), c.field);
  }
  // Output specs: a vector output without a dimension.
  adapt::v1::StoreSpec spec = Spec(falcon);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  EXPECT_EQ(Create("bad", spec).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Predict parameters.
  EXPECT_EQ(Predict("falcon", Vec({1, 0, 0, 0}, "").input(), 1000000).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace adaptd::testing
