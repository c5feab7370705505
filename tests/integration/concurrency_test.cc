// Many threads adapting, compiling and predicting at once. Every example's target has equal
// entries in all M columns, so every version that is ever published has identical output
// columns: a reader that saw a half-published version would see unequal entries.
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/test_server.h"

namespace adaptd::testing {
namespace {

constexpr int kDim = 16;
constexpr int kOutputs = 8;

TEST(ConcurrencyTest, ReadersNeverSeeAHalfPublishedVersion) {
  TestServer server;
  auto& stub = server.stub();
  adapt::v1::StoreSpec spec = FaastSpec("vector:" + std::to_string(kOutputs));
  spec.mutable_faast()->set_auto_compile_every(64);
  ASSERT_TRUE(CreateStore(stub, "t", "busy", spec).ok());

  std::atomic<bool> stop{false};
  std::atomic<int> adapts{0}, compiles{0}, predicts{0}, failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w);
      std::normal_distribution<float> n;
      for (int round = 0; round < 25; ++round) {
        adapt::v1::AdaptRequest m;
        m.set_tenant("t");
        m.set_store("busy");
        for (int i = 0; i < 16; ++i) {
          std::vector<float> key(kDim);
          for (auto& v : key) v = n(rng);
          *m.add_examples() = VectorExample(key, std::vector<float>(kOutputs, n(rng)));
        }
        adapt::v1::AdaptResponse r;
        if (AdaptStream(stub, {m}, &r).ok())
          ++adapts;
        else
          ++failures;
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop) {
      if (Compile(stub, "t", "busy").ok()) ++compiles;
    }
  });
  for (int reader = 0; reader < 3; ++reader) {
    threads.emplace_back([&, reader] {
      std::mt19937_64 rng(100 + reader);
      std::normal_distribution<float> n;
      uint64_t last_version = 0;
      while (!stop) {
        std::vector<float> key(kDim);
        for (auto& v : key) v = n(rng);
        adapt::v1::PredictResponse p;
        grpc::Status status = Predict(stub, "t", "busy", {key}, &p);
        if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) continue;
        if (!status.ok()) {
          ++failures;
          continue;
        }
        ++predicts;
        EXPECT_GE(p.version(), last_version) << "versions went backwards";
        last_version = p.version();
        const auto& v = p.predictions(0).vector();
        for (int j = 1; j < kOutputs; ++j) {
          EXPECT_NEAR(v[j], v[0], 1e-4f * (1 + std::abs(v[0]))) << "torn version " << p.version();
        }
      }
    });
  }
  for (int w = 0; w < 3; ++w) threads[w].join();
  // Writers can finish before any version is published; keep compiling and reading until the
  // readers have checked a few versions (bounded).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (predicts.load() < 30 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  for (size_t i = 3; i < threads.size(); ++i) threads[i].join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(adapts.load(), 75);
  EXPECT_GT(compiles.load(), 0);
  EXPECT_GT(predicts.load(), 0);
  const adapt::v1::StoreInfo info = GetStore(stub, "t", "busy");
  EXPECT_EQ(info.examples(), 75u * 16u);
}

}  // namespace
}  // namespace adaptd::testing
