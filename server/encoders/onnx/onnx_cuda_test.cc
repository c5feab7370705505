// The onnx encoder on ONNX Runtime's CUDA execution provider (label `gpu`): the onnxruntime-gpu
// wheel's library, named by ADAPTD_ONNXRUNTIME_GPU_LIBRARY (its provider libraries beside it,
// CUDA and cuDNN where it finds them). Skipped without that library; skipped without a usable
// device unless ADAPTD_REQUIRE_CUDA=1 (kernels/cuda/check_on_gpu.sh), which makes that a failure.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/onnx/onnx_test_util.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {
namespace {

bool CudaRequired() {
  const char* value = std::getenv("ADAPTD_REQUIRE_CUDA");
  return value != nullptr && std::string(value) == "1";
}

std::string GpuLibrary() {
  const char* value = std::getenv("ADAPTD_ONNXRUNTIME_GPU_LIBRARY");
  return value == nullptr ? "" : value;
}

class OnnxCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The library is a download of its own (the onnxruntime-gpu wheel): without it the test
    // skips even where a device is required.
    if (GpuLibrary().empty()) {
      GTEST_SKIP() << "ADAPTD_ONNXRUNTIME_GPU_LIBRARY names no onnxruntime-gpu library";
    }
    absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load(GpuLibrary());
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    runtime_ = *runtime;
    absl::StatusOr<const ort::CudaApi*> cuda = runtime_->Cuda();
    ASSERT_TRUE(cuda.ok()) << cuda.status();
  }

  const OrtRuntime* runtime_ = nullptr;
};

TEST_F(OnnxCudaTest, TheModelRunsOnTheDeviceAsThePythonRuntimeOnTheCpu) {
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(runtime_, onnx_test::Data("linear.onnx"), {.cuda_device = 0});
  if (!model.ok()) {
    // No usable device (no GPU, a driver too old, CUDA or cuDNN not found).
    EXPECT_FALSE(CudaRequired()) << model.status();
    GTEST_SKIP() << model.status();
  }
  const nlohmann::json want = onnx_test::Reference()["linear.onnx"];
  for (const nlohmann::json& run : want["runs"]) {
    const std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
    absl::StatusOr<OrtFloatTensor> out =
        (*model)->Run("features", run["input"]["shape"], values, "embedding");
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> expected = run["output"]["values"].get<std::vector<float>>();
    ASSERT_EQ(out->values.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(out->values[i], expected[i], 1e-4 * std::max(1.0f, std::abs(expected[i])));
    }
  }
}

TEST_F(OnnxCudaTest, TheEncoderOnTheDeviceKeepsTheCpuFingerprint) {
  const adapt::v1::EncoderConfig config = onnx_test::OnnxConfig("proj", "linear.onnx");
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> gpu =
      OnnxEncoder::Create(config, "encoders[0]", {.library = GpuLibrary(), .device = "cuda"});
  if (!gpu.ok()) {
    EXPECT_FALSE(CudaRequired()) << gpu.status();
    GTEST_SKIP() << gpu.status();
  }
  EXPECT_EQ((*gpu)->cuda_device(), 0);
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> cpu =
      OnnxEncoder::Create(config, "encoders[0]", {.library = GpuLibrary(), .device = "cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->cuda_device(), -1);
  EXPECT_EQ((*gpu)->fingerprint(), (*cpu)->fingerprint());
}

}  // namespace
}  // namespace adaptd
