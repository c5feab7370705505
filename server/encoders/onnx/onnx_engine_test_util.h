// Test helpers of the onnx tests that run a store on an onnx encoder inside the engine: a faast
// store's creation for tenant "acme", its adapt and compile calls, an engine with the identity
// encoder beside the one tested, and its predictions.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"
#include "server/core/engine.h"

namespace adaptd::onnx_test {

// A faast store `name` of tenant "acme" on `encoder`, compiled only when asked.
inline adapt::v1::CreateStoreRequest FaastStore(const std::string& name,
                                                const std::string& encoder) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("acme");
  create.set_store(name);
  auto* spec = create.mutable_spec();
  spec->set_kind(adapt::v1::STORE_KIND_FAAST);
  spec->set_encoder(encoder);
  spec->mutable_faast()->set_ridge(0.1);
  spec->mutable_faast()->set_auto_compile_every(0);
  spec->mutable_faast()->set_auto_compile_delay_ms(0);
  return create;
}

// Adapts acme's `store` on `examples` in one write.
inline absl::Status Adapt(Engine& engine, const std::string& store,
                          const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples) {
  auto session = engine.StartWrite(TxnKind::kAdapt);
  if (absl::Status s = session->Add("acme", store, examples); !s.ok()) return s;
  return session->Finish().status();
}

// Compiles acme's `store` and waits for it.
inline absl::Status Compile(Engine& engine, const std::string& store) {
  adapt::v1::CompileRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  std::promise<absl::Status> done;
  engine.Compile(request,
                 [&](absl::StatusOr<adapt::v1::CompileResponse> r) { done.set_value(r.status()); });
  return done.get_future().get();
}

// Adapts acme's `store` on `inputs` labelled `labels`, then compiles it.
inline absl::Status AdaptAndCompile(Engine& engine, const std::string& store,
                                    const std::vector<adapt::v1::Input>& inputs,
                                    const std::vector<std::string>& labels) {
  google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
  for (size_t i = 0; i < inputs.size(); ++i) {
    adapt::v1::Example* x = examples.Add();
    *x->mutable_input() = inputs[i];
    x->set_label(labels[i]);
  }
  if (absl::Status s = Adapt(engine, store, examples); !s.ok()) return s;
  return Compile(engine, store);
}

// An engine over a fresh data dir under the test's temporary one, with the encoders
// "identity" (for a store on the reference keys) and `encoder`.
inline absl::StatusOr<std::unique_ptr<Engine>> EngineBeside(const std::string& name,
                                                            const adapt::v1::EncoderConfig& encoder,
                                                            kernels::Backend* backend) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  adapt::v1::ServerConfig config;
  config.set_data_dir(dir);
  config.add_encoders()->set_name("identity");
  config.mutable_encoders(0)->set_type("identity");
  *config.add_encoders() = encoder;
  return Engine::Create(config, backend, nullptr);
}

// acme's `store` predicting `inputs` (top_k labels).
inline absl::StatusOr<adapt::v1::PredictResponse> PredictOn(
    const Engine& engine, const std::string& store, const std::vector<adapt::v1::Input>& inputs,
    uint32_t top_k) {
  adapt::v1::PredictRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  request.set_top_k(top_k);
  for (const auto& input : inputs) *request.add_inputs() = input;
  return engine.Predict(request);
}

// The same labels in the same order per prediction, with scores within 1e-4.
inline void ExpectSameLabels(const adapt::v1::PredictResponse& got,
                             const adapt::v1::PredictResponse& want) {
  ASSERT_EQ(got.predictions_size(), want.predictions_size());
  for (int i = 0; i < got.predictions_size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(got.predictions(i).labels_size(), want.predictions(i).labels_size());
    for (int k = 0; k < got.predictions(i).labels_size(); ++k) {
      EXPECT_EQ(got.predictions(i).labels(k).label(), want.predictions(i).labels(k).label());
      EXPECT_NEAR(got.predictions(i).labels(k).score(), want.predictions(i).labels(k).score(),
                  1e-4);
    }
  }
}

}  // namespace adaptd::onnx_test

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_ENGINE_TEST_UTIL_H_
