#include "tests/security/security_server.h"

#include <filesystem>
#include <random>

#include "gtest/gtest.h"

namespace adaptd::testing {

adapt::v1::ServerConfig TestConfig() {
  std::random_device rd;
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_listen("127.0.0.1:0");
  config.set_metrics_listen("");
  config.set_data_dir(::testing::TempDir() + "/adaptd-sec-" + std::to_string(rd()));
  config.set_worker_threads(2);
  return config;
}

SecurityServer::SecurityServer(adapt::v1::ServerConfig config) : data_dir_(config.data_dir()) {
  auto server = AdaptdServer::Start(config);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return;
  server_ = *std::move(server);
  stub_ = adapt::v1::Adaptation::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
}

SecurityServer::~SecurityServer() {
  if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
  std::error_code ec;
  std::filesystem::remove_all(data_dir_, ec);
}

std::unique_ptr<grpc::ClientContext> TokenContext(const std::string& token) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
  return context;
}

}  // namespace adaptd::testing
