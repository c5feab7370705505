// Test helpers of the onnx encoder tests: the models of testdata/onnx, their reference
// answers from the Python onnxruntime, and the runtime .ci/dev fetches, named to OnnxEncoder
// through ADAPTD_ONNXRUNTIME_LIBRARY (set by the test binaries' CMake).
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEST_UTIL_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEST_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "adapt/v1/config.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/onnx/ort_runtime.h"

namespace adaptd::onnx_test {

inline std::string Data(const std::string& file) {
  return std::string(ADAPTD_ENCODERS_TESTDATA) + "/onnx/" + file;
}

inline nlohmann::json Reference() {
  std::ifstream in(Data("reference.json"));
  return nlohmann::json::parse(in);
}

// Resident pages of this process, in bytes.
inline int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Points OnnxEncoder (which loads the runtime by the environment) at the test's library.
inline void UseTestRuntime() { ::setenv(kOnnxRuntimeLibraryEnv, ADAPTD_ONNXRUNTIME_LIBRARY, 1); }

inline adapt::v1::EncoderConfig OnnxConfig(const std::string& name, const std::string& file) {
  adapt::v1::EncoderConfig config;
  config.set_name(name);
  config.set_type("onnx");
  config.set_input("vector");
  config.set_model_path(Data(file));
  return config;
}

// The encoder of `config` as entry encoders[0]; null (and a test failure) when refused.
inline std::unique_ptr<OnnxEncoder> MakeEncoder(const adapt::v1::EncoderConfig& config) {
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> encoder = OnnxEncoder::Create(config, "encoders[0]");
  EXPECT_TRUE(encoder.ok()) << encoder.status();
  return encoder.ok() ? *std::move(encoder) : nullptr;
}

// Why `config` is refused as entry encoders[0] (OK when it is not).
inline absl::Status Refusal(const adapt::v1::EncoderConfig& config) {
  return OnnxEncoder::Create(config, "encoders[0]").status();
}

// A fixture whose tests load the test's runtime and build or refuse encoders.
class EncoderTest : public ::testing::Test {
 protected:
  void SetUp() override { UseTestRuntime(); }
  static std::unique_ptr<OnnxEncoder> Make(const adapt::v1::EncoderConfig& config) {
    return MakeEncoder(config);
  }
  static absl::Status Refusal(const adapt::v1::EncoderConfig& config) {
    return onnx_test::Refusal(config);
  }
};

}  // namespace adaptd::onnx_test

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEST_UTIL_H_
