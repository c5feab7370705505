// OnnxEncoder with image inputs: PNGs through the encoder against the Python onnxruntime run on
// numpy's preprocessing of Pillow's decode (testdata/onnx/image_reference.json, written by
// make_image_testdata.py; relative error <= 1e-5), refusals of models and settings that do not
// fit at start, of bad images naming the example, and a faast store on the encoder inside the
// engine predicting as a store on the reference keys does.
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
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

using onnx_test::Data;
using ::testing::HasSubstr;

std::string Bytes(const std::string& file) { return testing::ReadTestData("onnx/" + file); }

nlohmann::json Cases() {
  std::ifstream in(Data("image_reference.json"));
  return nlohmann::json::parse(in)["cases"];
}

adapt::v1::EncoderConfig ImageConfig(const std::string& model, const nlohmann::json& image) {
  adapt::v1::EncoderConfig config = onnx_test::OnnxConfig("pics", model);
  config.set_input("image");
  if (!image.is_null()) {
    EXPECT_TRUE(
        google::protobuf::util::JsonStringToMessage(image.dump(), config.mutable_image()).ok())
        << image.dump();
  }
  return config;
}

std::vector<adapt::v1::Input> Images(const std::vector<std::string>& files) {
  std::vector<adapt::v1::Input> inputs(files.size());
  for (size_t i = 0; i < files.size(); ++i) inputs[i].set_image(Bytes(files[i]));
  return inputs;
}

absl::StatusOr<EncodedBatch> Encode(const Encoder& encoder,
                                    const std::vector<adapt::v1::Input>& inputs) {
  return encoder.Encode(testing::Pointers(inputs), 0, 8192, testing::ExamplesNamer());
}

class OnnxImageTest : public ::testing::Test {
 protected:
  void SetUp() override { onnx_test::UseTestRuntime(); }
  static absl::Status Refusal(const std::string& model, const nlohmann::json& image) {
    return OnnxEncoder::Create(ImageConfig(model, image), "encoders[0]").status();
  }
};

TEST_F(OnnxImageTest, PngsThroughTheEncoderEqualThePythonRuntime) {
  const nlohmann::json cases = Cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const nlohmann::json& c : cases) {
    SCOPED_TRACE(c["config"].dump());
    auto encoder = OnnxEncoder::Create(ImageConfig(c["model"], c["config"]), "encoders[0]");
    ASSERT_TRUE(encoder.ok()) << encoder.status();
    EXPECT_EQ((*encoder)->info().input_kind(), "image");
    const auto want = c["output"].get<std::vector<std::vector<float>>>();
    EXPECT_EQ((*encoder)->dim(), static_cast<int64_t>(want[0].size()));
    absl::StatusOr<EncodedBatch> got = Encode(**encoder, Images(c["images"]));
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->rows, static_cast<int64_t>(want.size()));
    for (size_t r = 0; r < want.size(); ++r) {
      for (size_t j = 0; j < want[r].size(); ++j) {
        const float w = want[r][j], g = got->keys[r * want[r].size() + j];
        EXPECT_LE(std::abs(g - w), 1e-5 * std::max(1.0f, std::abs(w))) << r << "," << j;
      }
    }
  }
}

TEST_F(OnnxImageTest, BadImagesAreRefusedNamingTheExample) {
  auto encoder = OnnxEncoder::Create(
      ImageConfig("image.onnx", {{"max_side", 20}, {"crop_width", 8}, {"crop_height", 8}}),
      "encoders[0]");
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  std::vector<adapt::v1::Input> inputs = Images({"gray.png", "alpha.png"});
  ASSERT_TRUE(Encode(**encoder, inputs).ok());
  const std::string png = Bytes("gray.png");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {png.substr(0, png.size() / 2), "examples[1].input.image: PNG: "},
      {"GIF89a....", "examples[1].input.image: not a PNG or JPEG image"},
      {Bytes("photo.png"), "examples[1].input.image: PNG: 23x17 has a side over the limit of 20"},
      {"", "examples[1].input.image: empty image"},
  };
  for (const auto& [bytes, message] : bad) {
    inputs[1].set_image(bytes);
    absl::Status s = Encode(**encoder, inputs).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(s.message(), HasSubstr(message));
  }
  inputs[1].mutable_vector()->add_values(1);
  EXPECT_EQ(Encode(**encoder, inputs).status().message(),
            "examples[1].input: encoder 'pics' takes an image (PNG or JPEG bytes), got a vector");
  // 10x12 resized to a shorter side of 6 is 6x7: smaller than the 8x8 crop.
  auto shrink = OnnxEncoder::Create(
      ImageConfig("image.onnx", {{"resize_shorter", 6}, {"crop_width", 8}, {"crop_height", 8}}),
      "encoders[0]");
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_THAT(Encode(**shrink, Images({"gray.png"})).status().message(),
              HasSubstr("examples[0].input.image: the image is 6x7 after its resize, smaller than "
                        "the crop 8x8"));
}

TEST_F(OnnxImageTest, ModelsAndSettingsThatDoNotFitFailTheStart) {
  EXPECT_THAT(Refusal("image.onnx", {{"crop_width", 9}, {"crop_height", 9}}).message(),
              HasSubstr("encoders[0].image: images end at 9x9 (width x height); the model takes "
                        "8x8"));
  EXPECT_THAT(Refusal("image.onnx", {{"layout", "nhwc"}}).message(),
              HasSubstr("input tensor 'pixels' is element type 1 of shape [?, 3, 8, 8]; the image "
                        "input (layout nhwc) needs float32 [batch, height, width, 3]"));
  EXPECT_THAT(Refusal("image.onnx", {{"resize_shorter", 8}}).message(),
              HasSubstr("encoders[0].image.resize_shorter: without a crop images end at varying "
                        "sizes"));
  EXPECT_THAT(Refusal("image_nhwc.onnx", {{"layout", "nhwc"}}).message(),
              HasSubstr("the model's height and width are not both fixed (?x?)"));
  EXPECT_THAT(Refusal("image.onnx", {{"channel_order", "rbg"}}).message(),
              HasSubstr("encoders[0].image.channel_order: 'rbg'"));
  EXPECT_THAT(Refusal("image.onnx", {{"resize_filter", "bicubic"}}).message(),
              HasSubstr("'bicubic' is not a filter the encoder has (\"bilinear\")"));
  EXPECT_THAT(Refusal("image.onnx", {{"std", {1, 0, 1}}}).message(),
              HasSubstr("encoders[0].image.std[1]: 0 is not a non-zero finite number"));
  EXPECT_THAT(Refusal("image.onnx", {{"mean", {1, 2}}}).message(),
              HasSubstr("encoders[0].image.mean: 2 values; give 3 (R, G, B) or none"));
  EXPECT_THAT(Refusal("linear.onnx", {}).message(),
              HasSubstr("input tensor 'features' is element type 1 of shape [?, 4]"));
}

TEST_F(OnnxImageTest, TheFingerprintFollowsThePreprocessingNotTheLimits) {
  auto fingerprint = [](const nlohmann::json& image) {
    auto encoder = OnnxEncoder::Create(ImageConfig("image.onnx", image), "encoders[0]");
    EXPECT_TRUE(encoder.ok()) << encoder.status();
    return encoder.ok() ? (*encoder)->fingerprint() : "";
  };
  const std::string base = fingerprint({});
  EXPECT_EQ(fingerprint({{"max_side", 100}, {"max_pixels", 1000}}), base);
  EXPECT_NE(fingerprint({{"mean", {0.5, 0.5, 0.5}}}), base);
  EXPECT_NE(fingerprint({{"channel_order", "bgr"}}), base);
  EXPECT_NE(fingerprint({{"scale", 1.0}}), base);
  EXPECT_NE(fingerprint({{"resize_shorter", 10}, {"crop_width", 8}, {"crop_height", 8}}), base);
}

TEST_F(OnnxImageTest, AFaastStoreOnTheEncoderPredictsAsOnTheReferenceKeys) {
  using onnx_test::AdaptAndCompile;
  const nlohmann::json c = Cases()[0];
  auto backend = kernels::MakeCpuBackend(1);
  auto engine = onnx_test::EngineBeside("onnx_image_engine", ImageConfig(c["model"], c["config"]),
                                        backend.get());
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->CreateStore(onnx_test::FaastStore("pics", "pics")).ok());
  ASSERT_TRUE((*engine)->CreateStore(onnx_test::FaastStore("reference", "identity")).ok());
  const std::vector<adapt::v1::Input> images = Images(c["images"]);
  std::vector<adapt::v1::Input> keys(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    for (float v : c["output"][i].get<std::vector<float>>())
      keys[i].mutable_vector()->add_values(v);
  }
  const std::vector<std::string> labels = {"photo", "alpha", "gray"};
  ASSERT_TRUE(AdaptAndCompile(**engine, "pics", images, labels).ok());
  ASSERT_TRUE(AdaptAndCompile(**engine, "reference", keys, labels).ok());

  std::vector<adapt::v1::Input> bad = images;
  bad[2].set_image("not an image");
  absl::Status refused = AdaptAndCompile(**engine, "pics", bad, labels);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("examples[2].input.image: not a PNG or JPEG image"));
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("pics");
  EXPECT_EQ((*engine)->GetStore(get)->examples(), 3u);

  auto predict = [&](const std::string& store, const std::vector<adapt::v1::Input>& inputs) {
    adapt::v1::PredictRequest request;
    request.set_tenant("acme");
    request.set_store(store);
    request.set_top_k(3);
    for (const auto& input : inputs) *request.add_inputs() = input;
    return (*engine)->Predict(request);
  };
  auto got = predict("pics", images);
  auto want = predict("reference", keys);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(got->predictions(i).labels_size(), want->predictions(i).labels_size());
    EXPECT_EQ(got->predictions(i).labels(0).label(), labels[i]);
    for (int k = 0; k < got->predictions(i).labels_size(); ++k) {
      EXPECT_EQ(got->predictions(i).labels(k).label(), want->predictions(i).labels(k).label());
      EXPECT_NEAR(got->predictions(i).labels(k).score(), want->predictions(i).labels(k).score(),
                  1e-4);
    }
  }
}

}  // namespace
}  // namespace adaptd
