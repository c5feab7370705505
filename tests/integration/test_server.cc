#include "tests/integration/test_server.h"

#include <filesystem>
#include <random>

#include "gtest/gtest.h"

namespace adaptd::testing {

TestServer::TestServer(uint64_t max_message_bytes) {
  std::random_device rd;
  data_dir_ = ::testing::TempDir() + "/adaptd-it-" + std::to_string(rd());
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_listen("127.0.0.1:0");
  config.set_metrics_listen("");
  config.set_data_dir(data_dir_);
  config.set_max_message_bytes(max_message_bytes);
  config.set_worker_threads(4);
  auto server = AdaptdServer::Start(config);
  EXPECT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  channel_ =
      grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args);
  stub_ = adapt::v1::Adaptation::NewStub(channel_);
}

TestServer::~TestServer() {
  server_->Shutdown(absl::Seconds(1));
  std::error_code ec;
  std::filesystem::remove_all(data_dir_, ec);
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return context;
}

adapt::v1::StoreSpec FaastSpec(const std::string& output, double ridge) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  if (output == "labels") {
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  } else {
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    spec.mutable_output()->set_dim(std::stoi(output.substr(output.find(':') + 1)));
  }
  auto* faast = spec.mutable_faast();
  if (ridge > 0) faast->set_ridge(ridge);
  faast->set_auto_compile_delay_ms(0);
  faast->set_auto_compile_every(0);
  return spec;
}

adapt::v1::Example LabelExample(const std::vector<float>& key, const std::string& label) {
  adapt::v1::Example e;
  for (float v : key) e.mutable_input()->mutable_vector()->add_values(v);
  e.set_label(label);
  return e;
}

adapt::v1::Example VectorExample(const std::vector<float>& key, const std::vector<float>& target) {
  adapt::v1::Example e;
  for (float v : key) e.mutable_input()->mutable_vector()->add_values(v);
  for (float v : target) e.mutable_vector()->add_values(v);
  return e;
}

grpc::Status AdaptStream(adapt::v1::Adaptation::Stub& stub,
                         const std::vector<adapt::v1::AdaptRequest>& messages,
                         adapt::v1::AdaptResponse* response) {
  auto context = Context();
  auto writer = stub.Adapt(context.get(), response);
  for (const auto& m : messages) {
    if (!writer->Write(m)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status CreateStore(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                         const std::string& store, const adapt::v1::StoreSpec& spec) {
  adapt::v1::CreateStoreRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  *request.mutable_spec() = spec;
  adapt::v1::StoreInfo info;
  return stub.CreateStore(Context().get(), request, &info);
}

grpc::Status Compile(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                     const std::string& store, adapt::v1::CompileResponse* response) {
  adapt::v1::CompileRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  adapt::v1::CompileResponse ignored;
  return stub.Compile(Context().get(), request, response ? response : &ignored);
}

grpc::Status Predict(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                     const std::string& store, const std::vector<std::vector<float>>& keys,
                     adapt::v1::PredictResponse* response, uint32_t top_k) {
  adapt::v1::PredictRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  request.set_top_k(top_k);
  for (const auto& key : keys) {
    auto* input = request.add_inputs();
    for (float v : key) input->mutable_vector()->add_values(v);
  }
  return stub.Predict(Context().get(), request, response);
}

adapt::v1::StoreInfo GetStore(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                              const std::string& store) {
  adapt::v1::GetStoreRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  adapt::v1::StoreInfo info;
  grpc::Status status = stub.GetStore(Context().get(), request, &info);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return info;
}

}  // namespace adaptd::testing
