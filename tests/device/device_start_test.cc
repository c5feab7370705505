// Choosing the compute backend at start-up (ServerConfig.device, adaptd --device): cuda where
// no usable device exists fails AdaptdServer::Start with FailedPrecondition and a one-line
// message; where a device exists (the GPU machine) the same config starts. A malformed name is
// rejected by the config validation.
#include <filesystem>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/config/config.h"
#include "server/rpc/server.h"

namespace adaptd {
namespace {

adapt::v1::ServerConfig ConfigWithDevice(const std::string& device) {
  std::random_device rd;
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_listen("127.0.0.1:0");
  config.set_metrics_listen("");
  config.set_data_dir(::testing::TempDir() + "/adaptd-device-" + std::to_string(rd()));
  config.set_device(device);
  return config;
}

TEST(DeviceStartTest, CudaStartsOnlyWhereADeviceIsUsable) {
  const adapt::v1::ServerConfig config = ConfigWithDevice("cuda");
  const bool usable = kernels::MakeCudaBackend(0).ok();
  auto server = AdaptdServer::Start(config);
  if (usable) {
    ASSERT_TRUE(server.ok()) << server.status();
    (*server)->Shutdown(absl::Seconds(1));
  } else {
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition) << server.status();
    const std::string message(server.status().message());
    EXPECT_EQ(message.rfind("device cuda: unavailable: ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
  }
  std::error_code ec;
  std::filesystem::remove_all(config.data_dir(), ec);
}

TEST(DeviceStartTest, CpuAndDefaultStart) {
  for (const std::string device : {"", "cpu"}) {
    const adapt::v1::ServerConfig config = ConfigWithDevice(device);
    auto server = AdaptdServer::Start(config);
    ASSERT_TRUE(server.ok()) << "device \"" << device << "\": " << server.status();
    (*server)->Shutdown(absl::Seconds(1));
    std::error_code ec;
    std::filesystem::remove_all(config.data_dir(), ec);
  }
}

TEST(DeviceStartTest, MalformedDeviceIsRejected) {
  for (const std::string device : {"tpu", "cuda:", "cuda:-1", "cuda:x", "CPU"}) {
    const absl::Status s = ValidateConfig(ConfigWithDevice(device));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << device << ": " << s;
    EXPECT_NE(s.message().find("device:"), std::string_view::npos) << s;
  }
  EXPECT_TRUE(ValidateConfig(ConfigWithDevice("cuda:3")).ok());
}

TEST(DeviceStartTest, MakeBackendNamesTheBackend) {
  auto cpu = kernels::MakeBackend("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_EQ(kernels::MakeBackend("gpu").status().code(), absl::StatusCode::kInvalidArgument);
  auto far = kernels::MakeBackend("cuda:1000");
  EXPECT_EQ(far.status().code(), absl::StatusCode::kFailedPrecondition) << far.status();
}

}  // namespace
}  // namespace adaptd
