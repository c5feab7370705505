// The scheduler behind the real gRPC server: a tenant flooding the server with far more
// predicts than its queue holds is refused with RESOURCE_EXHAUSTED, while another tenant's
// predicts keep being served; predicts batched from many stores answer like unbatched ones.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/test_server.h"

namespace adaptd::testing {
namespace {

constexpr int kDim = 16;

class SchedulerE2eTest : public ::testing::Test {
 protected:
  void Start(uint32_t max_batch_size) {
    std::random_device rd;
    data_dir_ = ::testing::TempDir() + "/adaptd-sched-" + std::to_string(rd());
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_listen("127.0.0.1:0");
    config.set_metrics_listen("");
    config.set_data_dir(data_dir_);
    config.set_worker_threads(2);
    config.set_tenant_queue_capacity(16);
    config.set_queue_capacity(1000);
    config.set_max_batch_size(max_batch_size);
    auto server = AdaptdServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = adapt::v1::Adaptation::NewStub(channel_);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }

  std::vector<float> Key(std::mt19937& rng) {
    std::normal_distribution<float> normal;
    std::vector<float> key(kDim);
    for (float& v : key) v = normal(rng);
    return key;
  }

  void FillStore(const std::string& tenant, const std::string& store, std::mt19937& rng) {
    ASSERT_TRUE(CreateStore(*stub_, tenant, store, FaastSpec()).ok());
    adapt::v1::AdaptRequest adapt;
    adapt.set_tenant(tenant);
    adapt.set_store(store);
    for (int i = 0; i < 24; ++i)
      *adapt.add_examples() = LabelExample(Key(rng), "l" + std::to_string(i % 4));
    adapt::v1::AdaptResponse response;
    ASSERT_TRUE(AdaptStream(*stub_, {adapt}, &response).ok());
    ASSERT_TRUE(Compile(*stub_, tenant, store).ok());
  }

  std::string data_dir_;
  std::unique_ptr<AdaptdServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
};

TEST_F(SchedulerE2eTest, FloodedServerStillServesAnotherTenant) {
  Start(/*max_batch_size=*/8);
  std::mt19937 rng(3);
  FillStore("flood", "s", rng);
  FillStore("victim", "s", rng);
  adapt::v1::PredictRequest flood;
  flood.set_tenant("flood");
  flood.set_store("s");
  for (int i = 0; i < 64; ++i) {
    auto key = Key(rng);
    auto* v = flood.add_inputs()->mutable_vector();
    for (float x : key) v->add_values(x);
  }

  // The flooder keeps 200 async predicts in flight (its queue holds 16) until the victim is done.
  std::atomic<bool> stop{false};
  std::atomic<int> flood_ok{0}, flood_exhausted{0}, flood_other{0};
  std::string exhausted_message;
  std::thread flooder([&] {
    grpc::CompletionQueue cq;
    struct Call {
      grpc::ClientContext context;
      adapt::v1::PredictResponse response;
      grpc::Status status;
      std::unique_ptr<grpc::ClientAsyncResponseReader<adapt::v1::PredictResponse>> reader;
    };
    auto issue = [&] {
      auto* call = new Call;
      call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      call->reader = stub_->AsyncPredict(&call->context, flood, &cq);
      call->reader->Finish(&call->response, &call->status, call);
    };
    int outstanding = 0;
    for (; outstanding < 200; ++outstanding) issue();
    void* tag;
    bool ok;
    while (outstanding > 0 && cq.Next(&tag, &ok)) {
      auto* call = static_cast<Call*>(tag);
      --outstanding;
      if (call->status.ok()) {
        ++flood_ok;
      } else if (call->status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        if (flood_exhausted++ == 0) exhausted_message = call->status.error_message();
      } else {
        ++flood_other;
      }
      delete call;
      if (!stop.load()) {
        issue();
        ++outstanding;
      }
    }
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  });

  // Wait (bounded) until the flood is being refused, so the victim's calls meet a full queue.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (flood_exhausted.load() == 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int victim_ok = 0;
  for (int i = 0; i < 20; ++i) {
    adapt::v1::PredictResponse response;
    grpc::Status status = Predict(*stub_, "victim", "s", {Key(rng)}, &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
    victim_ok += status.ok() && response.predictions_size() == 1;
  }
  stop = true;
  flooder.join();
  EXPECT_EQ(victim_ok, 20);
  EXPECT_GT(flood_exhausted.load(), 0);
  EXPECT_NE(exhausted_message.find("tenant 'flood'"), std::string::npos) << exhausted_message;
  EXPECT_NE(exhausted_message.find("16"), std::string::npos) << exhausted_message;
  EXPECT_GT(flood_ok.load(), 0);
  EXPECT_EQ(flood_other.load(), 0);
}

TEST_F(SchedulerE2eTest, ConcurrentPredictsOverManyStoresMatchSequentialOnes) {
  Start(/*max_batch_size=*/32);
  std::mt19937 rng(5);
  constexpr int kStores = 12;
  for (int s = 0; s < kStores; ++s)
    FillStore("t" + std::to_string(s % 3), "s" + std::to_string(s), rng);
  std::vector<std::vector<float>> keys;
  for (int i = 0; i < 4; ++i) keys.push_back(Key(rng));
  std::vector<adapt::v1::PredictResponse> expected(kStores);
  for (int s = 0; s < kStores; ++s) {
    ASSERT_TRUE(
        Predict(*stub_, "t" + std::to_string(s % 3), "s" + std::to_string(s), keys, &expected[s], 3)
            .ok());
  }
  std::vector<std::thread> clients;
  std::atomic<int> mismatches{0}, failures{0};
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 30; ++i) {
        const int s = (c + i) % kStores;
        adapt::v1::PredictResponse got;
        if (!Predict(*stub_, "t" + std::to_string(s % 3), "s" + std::to_string(s), keys, &got, 3)
                 .ok()) {
          ++failures;
          continue;
        }
        for (int r = 0; r < got.predictions_size(); ++r) {
          for (int j = 0; j < got.predictions(r).labels_size(); ++j) {
            const auto& a = got.predictions(r).labels(j);
            const auto& b = expected[s].predictions(r).labels(j);
            if (a.label() != b.label() ||
                std::abs(a.score() - b.score()) > 1e-5 * std::max(1.0f, std::abs(b.score()))) {
              ++mismatches;
            }
          }
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace adaptd::testing
