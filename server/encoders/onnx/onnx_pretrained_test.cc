// A real pretrained model through the onnx encoder: PaddleOCR's text-direction classifier
// ch_ppocr_mobile_v2.0_cls_infer.onnx from the PyPI wheel rapidocr-onnxruntime 1.4.4, which
// .ci/dev unpacks (the wheel pinned by SHA-256) to ADAPTD_RAPIDOCR_CLS_MODEL; it is not in the
// repository. Text-line PNGs through the encoder against the Python onnxruntime run on numpy's
// preprocessing of Pillow's decode (testdata/onnx/pretrained_reference.json, written by
// make_pretrained_testdata.py; relative error <= 1e-5) in batches cut at 1, 2 and 64, and a
// faast store on the encoder inside the engine predicting as a store on the reference rows.
#include <filesystem>
#include <fstream>

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/core/engine.h"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/onnx/onnx_engine_test_util.h"
#include "server/encoders/onnx/onnx_test_util.h"
#include "server/encoders/test_util.h"

namespace adaptd {
namespace {

nlohmann::json Reference() {
  std::ifstream in(onnx_test::Data("pretrained_reference.json"));
  return nlohmann::json::parse(in);
}

adapt::v1::EncoderConfig ClassifierConfig(const nlohmann::json& reference, uint32_t max_batch) {
  adapt::v1::EncoderConfig config;
  config.set_name("direction");
  config.set_type("onnx");
  config.set_input("image");
  config.set_model_path(ADAPTD_RAPIDOCR_CLS_MODEL);
  config.set_max_batch(max_batch);
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(reference["config"].dump(),
                                                          config.mutable_image())
                  .ok());
  return config;
}

std::vector<adapt::v1::Input> Images(const nlohmann::json& reference) {
  std::vector<adapt::v1::Input> inputs;
  for (const auto& file : reference["images"]) {
    inputs.emplace_back().set_image(testing::ReadTestData("onnx/" + file.get<std::string>()));
  }
  return inputs;
}

class OnnxPretrainedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    onnx_test::UseTestRuntime();
    // The model .ci/dev unpacks; a missing or other file fails here, saying which.
    ASSERT_TRUE(std::filesystem::exists(ADAPTD_RAPIDOCR_CLS_MODEL))
        << ADAPTD_RAPIDOCR_CLS_MODEL << " is missing: bash .ci/dev build unpacks it from the "
        << "PyPI wheel rapidocr-onnxruntime 1.4.4";
    ASSERT_EQ(std::filesystem::file_size(ADAPTD_RAPIDOCR_CLS_MODEL),
              reference_["bytes"].get<uint64_t>())
        << "not the model of rapidocr-onnxruntime 1.4.4 (SHA-256 " << reference_["sha256"] << ")";
  }
  const nlohmann::json reference_ = Reference();
};

TEST_F(OnnxPretrainedTest, TextLinesThroughTheEncoderEqualThePythonRuntime) {
  const auto want = reference_["outputs"].get<std::vector<std::vector<float>>>();
  ASSERT_EQ(want.size(), 6u);
  for (uint32_t max_batch : {1u, 2u, 64u}) {
    SCOPED_TRACE(::testing::Message() << "max_batch " << max_batch);
    auto encoder = OnnxEncoder::Create(ClassifierConfig(reference_, max_batch), "encoders[0]");
    ASSERT_TRUE(encoder.ok()) << encoder.status();
    const adapt::v1::EncoderInfo& info = (*encoder)->info();
    EXPECT_EQ(info.input_kind(), "image");
    EXPECT_EQ(info.dim(), 2u);
    ASSERT_EQ(info.input_tensors_size(), 1);
    EXPECT_EQ(info.input_tensors(0).name(), reference_["input"]);
    EXPECT_EQ(std::vector<int64_t>(info.input_tensors(0).shape().begin(),
                                   info.input_tensors(0).shape().end()),
              (std::vector<int64_t>{-1, 3, -1, -1}));
    EXPECT_EQ(info.output_tensors(0).name(), reference_["output"]);
    const std::vector<adapt::v1::Input> images = Images(reference_);
    absl::StatusOr<EncodedBatch> got =
        (*encoder)->Encode(testing::Pointers(images), 0, 8192, testing::ExamplesNamer());
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->rows, 6);
    for (size_t r = 0; r < want.size(); ++r) {
      for (size_t j = 0; j < 2; ++j) {
        const float w = want[r][j], g = got->keys[r * 2 + j];
        EXPECT_LE(std::abs(g - w), 1e-5 * std::max(1.0f, std::abs(w))) << r << "," << j;
      }
    }
    // The classifier reads the upright lines as 0 degrees and the turned ones as 180.
    for (size_t r = 0; r < 4; ++r) EXPECT_EQ(got->keys[r * 2] > 0.5f, r % 2 == 0) << r;
  }
}

TEST_F(OnnxPretrainedTest, AFaastStoreOnTheEncoderPredictsAsOnTheReferenceRows) {
  auto backend = kernels::MakeCpuBackend(1);
  auto engine = onnx_test::EngineBeside("onnx_pretrained_engine", ClassifierConfig(reference_, 64),
                                        backend.get());
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->CreateStore(onnx_test::FaastStore("lines", "direction")).ok());
  ASSERT_TRUE((*engine)->CreateStore(onnx_test::FaastStore("reference", "identity")).ok());
  const std::vector<adapt::v1::Input> images = Images(reference_);
  std::vector<adapt::v1::Input> rows(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    for (float v : reference_["outputs"][i].get<std::vector<float>>())
      rows[i].mutable_vector()->add_values(v);
  }
  const std::vector<std::string> labels = {"upright", "turned",  "upright",
                                           "turned",  "upright", "turned"};
  ASSERT_TRUE(onnx_test::AdaptAndCompile(**engine, "lines", images, labels).ok());
  ASSERT_TRUE(onnx_test::AdaptAndCompile(**engine, "reference", rows, labels).ok());
  auto got = onnx_test::PredictOn(**engine, "lines", images, 2);
  auto want = onnx_test::PredictOn(**engine, "reference", rows, 2);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->predictions_size(), 6);
  onnx_test::ExpectSameLabels(*got, *want);
  // The store learned the direction: the upright and turned lines of 4:1 are told apart.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got->predictions(i).labels(0).label(), labels[i]) << i;
}

}  // namespace
}  // namespace adaptd
