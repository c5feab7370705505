// An in-process adaptd on 127.0.0.1:0 with a stub connected to it, and small builders for
// requests, shared by the integration tests.
#ifndef ADAPTD_TESTS_INTEGRATION_TEST_SERVER_H_
#define ADAPTD_TESTS_INTEGRATION_TEST_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "adapt/v1/adapt.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/config/config.h"
#include "server/rpc/server.h"

namespace adaptd::testing {

class TestServer {
 public:
  explicit TestServer(uint64_t max_message_bytes = 4 << 20);
  ~TestServer();

  adapt::v1::Adaptation::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  std::string data_dir_;
  std::unique_ptr<AdaptdServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
};

// A client context with a 30 s deadline.
std::unique_ptr<grpc::ClientContext> Context();

adapt::v1::StoreSpec FaastSpec(const std::string& output = "labels", double ridge = 0);

adapt::v1::Example LabelExample(const std::vector<float>& key, const std::string& label);
adapt::v1::Example VectorExample(const std::vector<float>& key, const std::vector<float>& target);

// Sends `messages` as one Adapt stream.
grpc::Status AdaptStream(adapt::v1::Adaptation::Stub& stub,
                         const std::vector<adapt::v1::AdaptRequest>& messages,
                         adapt::v1::AdaptResponse* response);

grpc::Status CreateStore(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                         const std::string& store, const adapt::v1::StoreSpec& spec);
grpc::Status Compile(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                     const std::string& store, adapt::v1::CompileResponse* response = nullptr);
grpc::Status Predict(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                     const std::string& store, const std::vector<std::vector<float>>& keys,
                     adapt::v1::PredictResponse* response, uint32_t top_k = 1);
adapt::v1::StoreInfo GetStore(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                              const std::string& store);

}  // namespace adaptd::testing

#endif  // ADAPTD_TESTS_INTEGRATION_TEST_SERVER_H_
