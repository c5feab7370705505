// OnnxEncoder with vector inputs against the Python onnxruntime's answers for the same models
// and tensors (testdata/onnx/reference.json), and its refusals at start and on bad input.
#include "server/encoders/onnx/onnx_encoder.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/encoders/encoder_set.h"
#include "server/encoders/onnx/onnx_external_data.h"
#include "server/encoders/onnx/onnx_test_util.h"
#include "server/encoders/test_util.h"

namespace adaptd {
namespace {

using onnx_test::Data;
using onnx_test::OnnxConfig;
using ::testing::HasSubstr;
using ::testing::Not;

class OnnxEncoderTest : public onnx_test::EncoderTest {};

// Inputs of `n` floats each from the flat `values`.
std::vector<adapt::v1::Input> Vectors(const std::vector<float>& values, size_t n) {
  std::vector<adapt::v1::Input> inputs(values.size() / n);
  for (size_t i = 0; i < values.size(); ++i) {
    inputs[i / n].mutable_vector()->add_values(values[i]);
  }
  return inputs;
}

absl::StatusOr<EncodedBatch> Encode(const Encoder& encoder,
                                    const std::vector<adapt::v1::Input>& inputs) {
  std::vector<const adapt::v1::Input*> pointers;
  for (const auto& input : inputs) pointers.push_back(&input);
  return encoder.Encode(pointers, 0, 8192,
                        [](size_t i) { return "examples[" + std::to_string(i) + "].input"; });
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-5 * std::max(1.0f, std::abs(want[i]))) << i;
  }
}

TEST_F(OnnxEncoderTest, KeysAreThePythonRuntimesOutputsInAnyBatchCut) {
  const nlohmann::json run = onnx_test::Reference()["linear.onnx"]["runs"][1];
  const auto inputs = Vectors(run["input"]["values"].get<std::vector<float>>(), 4);
  const auto want = run["output"]["values"].get<std::vector<float>>();
  for (uint32_t max_batch : {0u, 1u, 2u, 64u}) {
    SCOPED_TRACE(max_batch);
    adapt::v1::EncoderConfig config = OnnxConfig("proj", "linear.onnx");
    if (max_batch > 0) config.set_max_batch(max_batch);
    config.set_threads(max_batch % 2 + 1);
    std::unique_ptr<OnnxEncoder> encoder = Make(config);
    ASSERT_NE(encoder, nullptr);
    EXPECT_EQ(encoder->info().type(), "onnx");
    EXPECT_EQ(encoder->info().input_kind(), "vector");
    EXPECT_EQ(encoder->dim(), 3);
    absl::StatusOr<EncodedBatch> keys = Encode(*encoder, inputs);
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_EQ(keys->rows, 5);
    EXPECT_EQ(keys->dim, 3);
    ExpectClose(keys->keys, want);
  }
}

TEST_F(OnnxEncoderTest, NormalizeScalesEachKeyToUnitLength) {
  const nlohmann::json run = onnx_test::Reference()["linear.onnx"]["runs"][1];
  const auto inputs = Vectors(run["input"]["values"].get<std::vector<float>>(), 4);
  std::vector<float> want = run["output"]["values"].get<std::vector<float>>();
  for (size_t r = 0; r < 5; ++r) {
    float* row = want.data() + 3 * r;
    const double norm = std::sqrt(row[0] * row[0] + row[1] * row[1] + row[2] * row[2]);
    for (int j = 0; j < 3; ++j) row[j] = static_cast<float>(row[j] / norm);
  }
  adapt::v1::EncoderConfig config = OnnxConfig("proj", "linear.onnx");
  config.set_normalize(true);
  std::unique_ptr<OnnxEncoder> encoder = Make(config);
  ASSERT_NE(encoder, nullptr);
  absl::StatusOr<EncodedBatch> keys = Encode(*encoder, inputs);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ExpectClose(keys->keys, want);
}

TEST_F(OnnxEncoderTest, AFixedBatchOfOneRunsItemByItem) {
  std::unique_ptr<OnnxEncoder> encoder = Make(OnnxConfig("relu", "fixed_batch.onnx"));
  ASSERT_NE(encoder, nullptr);
  const std::vector<float> values = {-1.5f, 0.25f, 2.0f, 0.0f, 1.0f,  -2.0f,
                                     3.0f,  0.5f,  0.1f, 0.2f, -0.3f, 4.0f};
  absl::StatusOr<EncodedBatch> keys = Encode(*encoder, Vectors(values, 4));
  ASSERT_TRUE(keys.ok()) << keys.status();
  std::vector<float> want;
  for (float v : values) want.push_back(v > 0 ? 2 * v : 0.0f);
  ExpectClose(keys->keys, want);
  // The reference's own run through the same model.
  const nlohmann::json run = onnx_test::Reference()["fixed_batch.onnx"]["runs"][0];
  keys = Encode(*encoder, Vectors(run["input"]["values"].get<std::vector<float>>(), 4));
  ASSERT_TRUE(keys.ok()) << keys.status();
  ExpectClose(keys->keys, run["output"]["values"].get<std::vector<float>>());
}

TEST_F(OnnxEncoderTest, AVectorOfTheWrongWidthIsInvalidArgumentNamingTheExample) {
  std::unique_ptr<OnnxEncoder> encoder = Make(OnnxConfig("proj", "linear.onnx"));
  ASSERT_NE(encoder, nullptr);
  std::vector<adapt::v1::Input> inputs = Vectors({1, 2, 3, 4, 5, 6, 7, 8}, 4);
  inputs[1].mutable_vector()->add_values(9);
  absl::StatusOr<EncodedBatch> keys = Encode(*encoder, inputs);
  EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(keys.status().message(),
            "examples[1].input.vector: 5 values; encoder 'proj' takes 4 (the model's input "
            "'features')");
  inputs[1].set_text("words");
  keys = Encode(*encoder, inputs);
  EXPECT_EQ(keys.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(keys.status().message(), HasSubstr("examples[1].input"));
  inputs[1] = Vectors({1, NAN, 3, 4}, 4)[0];
  keys = Encode(*encoder, inputs);
  EXPECT_EQ(keys.status().message(), "examples[1].input.vector.values[1]: not a finite number");
}

TEST_F(OnnxEncoderTest, AMissingCorruptOrMismatchedModelFailsNamingTheFileAndTensor) {
  adapt::v1::EncoderConfig config = OnnxConfig("proj", "missing.onnx");
  absl::Status s = Refusal(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("encoders[0].model_path: '" + Data("missing.onnx") + "'"));

  const std::string corrupt = ::testing::TempDir() + "/corrupt_model.onnx";
  std::ofstream(corrupt) << "not a model";
  config.set_model_path(corrupt);
  s = Refusal(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("encoders[0]: ONNX model '" + corrupt + "'"));

  config = OnnxConfig("proj", "linear.onnx");
  config.set_input_tensor("pixels");
  s = Refusal(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr(Data("linear.onnx")));
  EXPECT_THAT(s.message(), HasSubstr("no input tensor 'pixels' (inputs: features)"));
  config.clear_input_tensor();
  config.set_output_tensor("logits");
  s = Refusal(config);
  EXPECT_THAT(s.message(), HasSubstr("no output tensor 'logits' (outputs: embedding)"));
  config.clear_output_tensor();
  config.set_dim(8);
  s = Refusal(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("encoders[0].dim: 8 differs from the model's dimension 3"));
}

TEST_F(OnnxEncoderTest, SettingsAreCheckedByField) {
  adapt::v1::EncoderConfig config = OnnxConfig("proj", "linear.onnx");
  config.set_input("audio");
  absl::Status s = Refusal(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("encoders[0].input: 'audio'"));
  config.clear_input();
  EXPECT_THAT(Refusal(config).message(), HasSubstr("encoders[0].input: ''"));
  config = OnnxConfig("proj", "linear.onnx");
  config.set_max_batch(0);
  EXPECT_EQ(Refusal(config).message(), "encoders[0].max_batch: 0");
  config.clear_max_batch();
  config.clear_model_path();
  EXPECT_EQ(Refusal(config).message(), "encoders[0].model_path: empty");
}

TEST_F(OnnxEncoderTest, WithoutTheRuntimeTheStartRefusesInOneLine) {
  ::setenv(kOnnxRuntimeLibraryEnv, "/nonexistent/libonnxruntime.so.1", 1);
  absl::Status s = Refusal(OnnxConfig("proj", "linear.onnx"));
  onnx_test::UseTestRuntime();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("encoders[0] (onnx): ONNX Runtime's library "
                                     "'/nonexistent/libonnxruntime.so.1' could not be opened"));
  EXPECT_THAT(s.message(), HasSubstr("pip download onnxruntime"));
  EXPECT_THAT(s.message(), Not(HasSubstr("\n")));
}

// --device cuda on the CPU-only runtime of the tests: the start refuses in one line saying why;
// the encoder set hands the server's device to the encoder.
TEST_F(OnnxEncoderTest, OnACudaDeviceACpuOnlyRuntimeRefusesInOneLine) {
  const adapt::v1::EncoderConfig config = OnnxConfig("proj", "linear.onnx");
  for (const char* device : {"cuda", "cuda:1"}) {
    absl::Status s = OnnxEncoder::Create(config, "encoders[0]", {.device = device}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << device;
    EXPECT_THAT(s.message(), HasSubstr(std::string("encoders[0] (onnx): device ") + device +
                                       ": ONNX Runtime '"));
    EXPECT_THAT(s.message(), HasSubstr("is a CPU-only runtime (its execution providers: "));
    EXPECT_THAT(s.message(), HasSubstr("--device cuda needs the onnxruntime-gpu wheel's library"));
    EXPECT_THAT(s.message(), Not(HasSubstr("\n")));
  }
  absl::Status bad = OnnxEncoder::Create(config, "encoders[0]", {.device = "tpu"}).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("encoders[0] (onnx): device: \"tpu\""));
  for (const char* device : {"", "cpu"}) {
    absl::StatusOr<std::unique_ptr<OnnxEncoder>> cpu =
        OnnxEncoder::Create(config, "encoders[0]", {.device = device});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_EQ((*cpu)->cuda_device(), -1);
  }
  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  *configs.Add() = config;
  EncoderSetOptions options;
  options.device = "cuda";
  absl::StatusOr<std::unique_ptr<EncoderSet>> set = EncoderSet::Create(configs, nullptr, options);
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("encoders[0] (onnx): device cuda: "));
  adapt::v1::ServerConfig server;
  server.set_device("cuda:2");
  EXPECT_EQ(EncoderSetOptionsFromConfig(server).device, "cuda:2");
}

TEST_F(OnnxEncoderTest, TheFingerprintCoversTheModelAndSettingsNotThreadsOrBatch) {
  const adapt::v1::EncoderConfig base = OnnxConfig("proj", "linear.onnx");
  const std::string fingerprint = Make(base)->fingerprint();
  EXPECT_THAT(fingerprint, ::testing::StartsWith("onnx:"));
  adapt::v1::EncoderConfig same = base;
  same.set_threads(3);
  same.set_max_batch(7);
  same.set_input_tensor("features");  // the default, named
  same.set_name("other");
  const std::string copy = ::testing::TempDir() + "/linear_copy.onnx";
  std::filesystem::copy_file(Data("linear.onnx"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  same.set_model_path(copy);  // the file's bytes count, not its path
  EXPECT_EQ(Make(same)->fingerprint(), fingerprint);
  adapt::v1::EncoderConfig normalized = base;
  normalized.set_normalize(true);
  EXPECT_NE(Make(normalized)->fingerprint(), fingerprint);
  // Another model of the same width and dimension would differ too: its bytes differ.
  EXPECT_NE(Make(OnnxConfig("relu", "fixed_batch.onnx"))->fingerprint(), fingerprint);
}

// A model saved with ONNX external data (make_external_data.py: linear.onnx with W and b in
// files of their own): the files are found in its protobuf, it runs as linear.onnx, and their
// bytes are in the fingerprint.
TEST_F(OnnxEncoderTest, ExternalDataFilesAreReadIntoTheFingerprint) {
  absl::StatusOr<std::vector<std::string>> files =
      OnnxExternalDataFiles(Data("external/linear.onnx"));
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{"W", "b"}));
  absl::StatusOr<std::vector<std::string>> none = OnnxExternalDataFiles(Data("linear.onnx"));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  const std::string corrupt = ::testing::TempDir() + "/not_protobuf.onnx";
  std::ofstream(corrupt) << "\xff\xff\xff";
  EXPECT_THAT(OnnxExternalDataFiles(corrupt).status().message(),
              HasSubstr("not a well-formed ONNX protobuf"));

  // A copy of the model and its files elsewhere: the same fingerprint, and the same keys as
  // linear.onnx (its weights are the same).
  const std::filesystem::path copy = std::filesystem::path(::testing::TempDir()) / "external";
  std::filesystem::remove_all(copy);
  std::filesystem::copy(Data("external"), copy);
  adapt::v1::EncoderConfig config = OnnxConfig("proj", "external/linear.onnx");
  std::unique_ptr<OnnxEncoder> original = Make(config);
  ASSERT_NE(original, nullptr);
  config.set_model_path((copy / "linear.onnx").string());
  std::unique_ptr<OnnxEncoder> copied = Make(config);
  ASSERT_NE(copied, nullptr);
  EXPECT_EQ(copied->fingerprint(), original->fingerprint());
  std::unique_ptr<OnnxEncoder> inside = Make(OnnxConfig("proj", "linear.onnx"));
  EXPECT_NE(inside->fingerprint(), original->fingerprint());  // other model bytes
  const nlohmann::json run = onnx_test::Reference()["linear.onnx"]["runs"][1];
  std::vector<adapt::v1::Input> inputs;
  const std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
  for (size_t r = 0; r < values.size() / 4; ++r) {
    inputs.push_back(adaptd::testing::Vector({values.begin() + r * 4, values.begin() + r * 4 + 4}));
  }
  absl::StatusOr<EncodedBatch> keys =
      copied->Encode(adaptd::testing::Pointers(inputs), 3, 3, adaptd::testing::ExamplesNamer());
  ASSERT_TRUE(keys.ok()) << keys.status();
  const std::vector<float> want = run["output"]["values"].get<std::vector<float>>();
  ASSERT_EQ(keys->keys.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(keys->keys[i], want[i], 1e-5) << i;

  // Another value in one data file changes the fingerprint; a missing one refuses the start.
  {
    std::fstream b((copy / "b").string(), std::ios::in | std::ios::out | std::ios::binary);
    b.seekp(0);
    b.put('\x11');
  }
  config.set_model_path((copy / "linear.onnx").string());
  std::unique_ptr<OnnxEncoder> changed = Make(config);
  ASSERT_NE(changed, nullptr);
  EXPECT_NE(changed->fingerprint(), original->fingerprint());
  std::filesystem::remove(copy / "W");
  absl::Status missing = Refusal(config);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.message(), HasSubstr("encoders[0]: "));
  EXPECT_THAT(missing.message(), HasSubstr("linear.onnx"));
}

TEST_F(OnnxEncoderTest, TheEncoderSetBuildsIt) {
  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  *configs.Add() = OnnxConfig("proj", "linear.onnx");
  absl::StatusOr<std::unique_ptr<EncoderSet>> set = EncoderSet::Create(configs);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_NE((*set)->Find("proj"), nullptr);
  EXPECT_EQ((*set)->List().encoders(0).type(), "onnx");
  EXPECT_EQ((*set)->List().encoders(0).dim(), 3u);
}

}  // namespace
}  // namespace adaptd
