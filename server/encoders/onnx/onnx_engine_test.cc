// A store on an onnx encoder inside the engine: it adapts and predicts on the model's keys (a
// faast store's predictions equal those of an identity store fed the reference keys the Python
// onnxruntime computed), refuses a vector of the wrong width naming the example with the store
// unchanged, and stops once the model file changed.
#include <filesystem>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/core/engine.h"
#include "server/encoders/onnx/onnx_engine_test_util.h"
#include "server/encoders/onnx/onnx_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::Example;
using google::protobuf::RepeatedPtrField;
using onnx_test::Adapt;
using onnx_test::Compile;
using onnx_test::FaastStore;

adapt::v1::ServerConfig Config(const std::string& data_dir, const std::string& model) {
  adapt::v1::ServerConfig config;
  config.set_data_dir(data_dir);
  auto* identity = config.add_encoders();
  identity->set_name("identity");
  identity->set_type("identity");
  *config.add_encoders() = onnx_test::OnnxConfig("proj", "linear.onnx");
  config.mutable_encoders(1)->set_model_path(model);
  return config;
}

// Rows of `values` (n floats each) labelled by `labels`.
RepeatedPtrField<Example> Examples(const std::vector<float>& values, size_t n,
                                   const std::vector<std::string>& labels) {
  RepeatedPtrField<Example> out;
  for (size_t r = 0; r < labels.size(); ++r) {
    Example* x = out.Add();
    for (size_t j = 0; j < n; ++j)
      x->mutable_input()->mutable_vector()->add_values(values[r * n + j]);
    x->set_label(labels[r]);
  }
  return out;
}

absl::StatusOr<adapt::v1::PredictResponse> Predict(Engine& engine, const std::string& store,
                                                   const std::vector<float>& values, size_t n) {
  adapt::v1::PredictRequest request;
  request.set_tenant("acme");
  request.set_store(store);
  request.set_top_k(3);
  for (const Example& x : Examples(values, n, std::vector<std::string>(values.size() / n, "")))
    *request.add_inputs() = x.input();
  return engine.Predict(request);
}

TEST(OnnxEngineTest, AStoreOnTheEncoderAdaptsAndPredictsOnTheModelsKeys) {
  onnx_test::UseTestRuntime();
  const std::string dir = ::testing::TempDir() + "/onnx_engine";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model = dir + "/model.onnx";
  std::filesystem::copy_file(onnx_test::Data("linear.onnx"), model);
  auto backend = kernels::MakeCpuBackend(1);
  const nlohmann::json run = onnx_test::Reference()["linear.onnx"]["runs"][1];
  const auto inputs = run["input"]["values"].get<std::vector<float>>();
  const auto keys = run["output"]["values"].get<std::vector<float>>();
  const std::vector<std::string> labels = {"a", "b", "a", "c", "b"};
  {
    auto engine = Engine::Create(Config(dir + "/data", model), backend.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    ASSERT_TRUE((*engine)->CreateStore(FaastStore("onnx", "proj")).ok());
    ASSERT_TRUE((*engine)->CreateStore(FaastStore("reference", "identity")).ok());
    ASSERT_TRUE(Adapt(**engine, "onnx", Examples(inputs, 4, labels)).ok());
    ASSERT_TRUE(Adapt(**engine, "reference", Examples(keys, 3, labels)).ok());
    ASSERT_TRUE(Compile(**engine, "onnx").ok());
    ASSERT_TRUE(Compile(**engine, "reference").ok());

    auto bad = Examples({1, 2, 3, 4, 5, 6, 7}, 4, {"a"});
    bad.Add()->mutable_input()->mutable_vector()->add_values(1);
    *bad[0].mutable_input() = Examples(inputs, 4, {"a"})[0].input();
    bad[1].set_label("a");
    absl::Status s = Adapt(**engine, "onnx", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "examples[1].input.vector: 1 values; encoder 'proj' takes 4 (the model's input "
              "'features')");

    auto onnx = Predict(**engine, "onnx", inputs, 4);
    auto reference = Predict(**engine, "reference", keys, 3);
    ASSERT_TRUE(onnx.ok()) << onnx.status();
    ASSERT_TRUE(reference.ok()) << reference.status();
    ASSERT_EQ(onnx->predictions_size(), 5);
    for (int i = 0; i < 5; ++i) {
      SCOPED_TRACE(i);
      const auto& got = onnx->predictions(i);
      const auto& want = reference->predictions(i);
      ASSERT_EQ(got.labels_size(), want.labels_size());
      for (int k = 0; k < got.labels_size(); ++k) {
        EXPECT_EQ(got.labels(k).label(), want.labels(k).label());
        EXPECT_NEAR(got.labels(k).score(), want.labels(k).score(), 1e-4);
      }
    }
    adapt::v1::GetStoreRequest get;
    get.set_tenant("acme");
    get.set_store("onnx");
    EXPECT_EQ((*engine)->GetStore(get)->examples(), 5u);
  }
  // Another model file at the same path: the store refuses to run on it.
  std::filesystem::copy_file(onnx_test::Data("fixed_batch.onnx"), model,
                             std::filesystem::copy_options::overwrite_existing);
  auto engine = Engine::Create(Config(dir + "/data", model), backend.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  auto stopped =
      Predict(**engine, "onnx", std::vector<float>(inputs.begin(), inputs.begin() + 4), 4);
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kFailedPrecondition) << stopped.status();
}

}  // namespace
}  // namespace adaptd
