// End to end in the engine: a faast label store over the sentence_bert encoder learns intents
// from a few example texts and classifies paraphrases it has not seen.
#include <future>

#include "gtest/gtest.h"
#include "server/core/engine.h"
#include "server/encoders/bert/minilm_dir.h"

namespace adaptd {
namespace {

TEST(SentenceBertEngineTest, TextStoreAdaptsCompilesAndPredicts) {
  ADAPTD_REQUIRE_MINILM(model_dir);
  auto backend = kernels::MakeCpuBackend();
  adapt::v1::ServerConfig config;
  auto* encoder = config.add_encoders();
  encoder->set_name("minilm");
  encoder->set_type("sentence_bert");
  encoder->set_model_path(model_dir);
  auto engine = Engine::Create(config, backend.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();

  const auto encoders = (*engine)->ListEncoders();
  ASSERT_EQ(encoders.encoders_size(), 1);
  EXPECT_EQ(encoders.encoders(0).dim(), 384u);
  EXPECT_EQ(encoders.encoders(0).input_kind(), "text");

  adapt::v1::CreateStoreRequest create;
  create.set_tenant("acme");
  create.set_store("intents");
  auto* spec = create.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FAAST);
  spec->set_encoder("minilm");
  spec->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec->mutable_faast()->set_ridge(0.1);
  spec->mutable_faast()->set_auto_compile_every(0);
  spec->mutable_faast()->set_auto_compile_delay_ms(0);
  auto created = (*engine)->CreateStore(create);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->spec().dim(), 384u);

  const std::vector<std::pair<std::string, std::string>> examples = {
      {"How do I reset my password?", "account"},
      {"I cannot log in to my account", "account"},
      {"Change the e-mail address on my profile", "account"},
      {"Where is my parcel?", "shipping"},
      {"My order has not arrived yet", "shipping"},
      {"How long does delivery take?", "shipping"},
      {"I want my money back", "refund"},
      {"Can I return this item for a refund?", "refund"},
      {"The product was broken, please reimburse me", "refund"},
  };
  google::protobuf::RepeatedPtrField<adapt::v1::Example> batch;
  for (const auto& [text, label] : examples) {
    auto* e = batch.Add();
    e->mutable_input()->set_text(text);
    e->set_label(label);
  }
  auto session = (*engine)->StartWrite(TxnKind::kAdapt);
  ASSERT_TRUE(session->Add("acme", "intents", batch).ok());
  auto adapted = session->Finish();
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  EXPECT_EQ(adapted->accepted(), examples.size());

  adapt::v1::CompileRequest compile;
  compile.set_tenant("acme");
  compile.set_store("intents");
  std::promise<absl::StatusOr<adapt::v1::CompileResponse>> compiled;
  (*engine)->Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
    compiled.set_value(std::move(r));
  });
  auto future = compiled.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::minutes(5)), std::future_status::ready);
  ASSERT_TRUE(future.get().ok());

  adapt::v1::PredictRequest predict;
  predict.set_tenant("acme");
  predict.set_store("intents");
  const std::vector<std::pair<std::string, std::string>> queries = {
      {"I forgot my password", "account"},
      {"When will my package be delivered?", "shipping"},
      {"Please refund my purchase", "refund"},
  };
  for (const auto& [text, label] : queries) predict.add_inputs()->set_text(text);
  auto predicted = (*engine)->Predict(predict);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  ASSERT_EQ(predicted->predictions_size(), 3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_GE(predicted->predictions(i).labels_size(), 1);
    EXPECT_EQ(predicted->predictions(i).labels(0).label(), queries[i].second) << queries[i].first;
  }

  // A vector input is refused by a text store, naming the field; the store is unchanged.
  adapt::v1::PredictRequest bad;
  bad.set_tenant("acme");
  bad.set_store("intents");
  bad.add_inputs()->mutable_vector()->add_values(1.0f);
  auto refused = (*engine)->Predict(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("inputs[0]"), std::string::npos) << refused.status();
}

TEST(SentenceBertEngineTest, StartUpFailsOnABrokenModelDirectory) {
  auto backend = kernels::MakeCpuBackend();
  adapt::v1::ServerConfig config;
  auto* encoder = config.add_encoders();
  encoder->set_name("minilm");
  encoder->set_type("sentence_bert");
  encoder->set_model_path("/nonexistent/all-MiniLM-L6-v2");
  auto engine = Engine::Create(config, backend.get(), nullptr);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find(
                "encoders[0].model_path: /nonexistent/all-MiniLM-L6-v2 is not a directory"),
            std::string::npos)
      << engine.status();
}

}  // namespace
}  // namespace adaptd
