// Engine::PredictBatch against Engine::Predict, request by request, over many stores of
// every kind (grouped read-outs and stores that predict alone) and over bad requests.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"

namespace adaptd {
namespace {

constexpr int kDim = 24;

class EngineBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    adapt::v1::ServerConfig config = DefaultConfig();
    data_dir_ = ::testing::TempDir() + "/engine-batch-" + std::to_string(std::random_device()());
    config.set_data_dir(data_dir_);
    auto engine = Engine::Create(config, backend_.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  adapt::v1::Input RandomInput() {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    adapt::v1::Input input;
    for (int j = 0; j < kDim; ++j) input.mutable_vector()->add_values(normal(rng_));
    return input;
  }

  // Creates tenant/store of `kind`, adapts `examples` random examples and compiles faast ones.
  void Fill(const std::string& tenant, const std::string& store, adapt::v1::StoreKind kind,
            bool labels, adapt::v1::FalconParams::KeyNorm norm = {}) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(tenant);
    create.set_store(store);
    create.mutable_spec()->set_kind(kind);
    create.mutable_spec()->set_dim(kDim);
    if (labels) {
      create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    } else {
      create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
      create.mutable_spec()->mutable_output()->set_dim(5);
    }
    if (kind == adapt::v1::STORE_KIND_FALCON) {
      create.mutable_spec()->mutable_falcon()->set_key_norm(norm);
      create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    }
    if (kind == adapt::v1::STORE_KIND_FAAST) {
      // Only the explicit compile below publishes, so both predicts read the same version.
      create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
      create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
    }
    auto info = engine_->CreateStore(create);
    ASSERT_TRUE(info.ok()) << info.status();
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    std::uniform_int_distribution<int> label(0, 6);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int i = 0; i < 40; ++i) {
      adapt::v1::Example* e = examples.Add();
      *e->mutable_input() = RandomInput();
      if (labels) {
        e->set_label(absl::StrCat("label", label(rng_)));
      } else {
        for (int j = 0; j < 5; ++j) e->mutable_vector()->add_values(normal(rng_));
      }
    }
    ASSERT_TRUE(session->Add(tenant, store, examples).ok());
    auto done = session->Finish();
    ASSERT_TRUE(done.ok()) << done.status();
    if (kind != adapt::v1::STORE_KIND_FALCON) {  // faast: publishes; fwpkm: nothing queued
      adapt::v1::CompileRequest compile;
      compile.set_tenant(tenant);
      compile.set_store(store);
      absl::Notification compiled;
      absl::Status status;
      engine_->Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
        status = r.status();
        compiled.Notify();
      });
      compiled.WaitForNotification();
      ASSERT_TRUE(status.ok()) << status;
    }
  }

  adapt::v1::PredictRequest Request(const std::string& tenant, const std::string& store, int inputs,
                                    int top_k) {
    adapt::v1::PredictRequest r;
    r.set_tenant(tenant);
    r.set_store(store);
    r.set_top_k(top_k);
    for (int i = 0; i < inputs; ++i) *r.add_inputs() = RandomInput();
    return r;
  }

  void TearDown() override {
    engine_.reset();
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }

  std::string data_dir_;
  std::mt19937 rng_{7};
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Engine> engine_;
};

void ExpectSame(const absl::StatusOr<adapt::v1::PredictResponse>& batched,
                const absl::StatusOr<adapt::v1::PredictResponse>& alone, const std::string& what) {
  ASSERT_EQ(batched.status().code(), alone.status().code())
      << what << ": " << batched.status() << " vs " << alone.status();
  EXPECT_EQ(batched.status().message(), alone.status().message()) << what;
  if (!alone.ok()) return;
  EXPECT_EQ(batched->version(), alone->version()) << what;
  ASSERT_EQ(batched->predictions_size(), alone->predictions_size()) << what;
  for (int r = 0; r < alone->predictions_size(); ++r) {
    const auto& b = batched->predictions(r);
    const auto& a = alone->predictions(r);
    ASSERT_EQ(b.labels_size(), a.labels_size()) << what;
    for (int j = 0; j < a.labels_size(); ++j) {
      EXPECT_EQ(b.labels(j).label(), a.labels(j).label()) << what << " row " << r << " rank " << j;
      EXPECT_NEAR(b.labels(j).score(), a.labels(j).score(),
                  1e-5 * std::max(1.0f, std::fabs(a.labels(j).score())))
          << what;
    }
    ASSERT_EQ(b.vector_size(), a.vector_size()) << what;
    for (int j = 0; j < a.vector_size(); ++j) {
      EXPECT_NEAR(b.vector(j), a.vector(j), 1e-5 * std::max(1.0f, std::fabs(a.vector(j)))) << what;
    }
    EXPECT_EQ(b.confidence(), a.confidence()) << what;
  }
}

TEST_F(EngineBatchTest, EqualsPredictRequestByRequest) {
  std::vector<std::pair<std::string, std::string>> stores;
  for (int i = 0; i < 30; ++i) {
    const std::string tenant = absl::StrCat("t", i % 7);
    const std::string name = absl::StrCat("faast", i);
    Fill(tenant, name, adapt::v1::STORE_KIND_FAAST, /*labels=*/i % 5 != 0);
    stores.emplace_back(tenant, name);
  }
  for (int i = 0; i < 8; ++i) {
    const std::string name = absl::StrCat("falcon", i);
    Fill("t1", name, adapt::v1::STORE_KIND_FALCON, /*labels=*/i % 3 != 0,
         i % 2 ? adapt::v1::FalconParams::KEY_NORM_L2 : adapt::v1::FalconParams::KEY_NORM_NONE);
    stores.emplace_back("t1", name);
  }
  for (int i = 0; i < 4; ++i) {
    const std::string name = absl::StrCat("fwpkm", i);
    Fill("t2", name, adapt::v1::STORE_KIND_FWPKM, /*labels=*/false);
    stores.emplace_back("t2", name);
  }
  std::vector<adapt::v1::PredictRequest> requests;
  std::uniform_int_distribution<int> rows(1, 6), topk(0, 9);
  for (int round = 0; round < 3; ++round) {
    for (const auto& [tenant, store] : stores) {
      requests.push_back(Request(tenant, store, rows(rng_), topk(rng_)));
    }
  }
  // Bad requests among good ones: each must get its own error.
  requests.push_back(Request("t0", "missing", 2, 1));
  requests.push_back(Request("t0", "faast0", 0, 1));
  auto wrong_dim = Request("t0", "faast0", 1, 1);
  wrong_dim.mutable_inputs(0)->mutable_vector()->add_values(1.0f);
  requests.push_back(wrong_dim);
  auto nan_input = Request("t1", "faast1", 2, 1);
  nan_input.mutable_inputs(1)->mutable_vector()->set_values(3, std::nanf(""));
  requests.push_back(nan_input);
  requests.push_back(Request("t1", "faast1", 1, 20000));
  std::shuffle(requests.begin(), requests.end(), rng_);

  std::vector<const adapt::v1::PredictRequest*> pointers;
  for (const auto& r : requests) pointers.push_back(&r);
  const auto batched = engine_->PredictBatch(pointers);
  ASSERT_EQ(batched.size(), requests.size());
  int ok = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    ExpectSame(batched[i], engine_->Predict(requests[i]),
               absl::StrCat(requests[i].tenant(), "/", requests[i].store()));
    ok += batched[i].ok();
  }
  EXPECT_GE(ok, static_cast<int>(3 * stores.size()));
}

TEST_F(EngineBatchTest, StoreBeforeAnyCompileAnswersLikePredict) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("empty");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  create.mutable_spec()->set_dim(kDim);
  ASSERT_TRUE(engine_->CreateStore(create).ok());
  const auto r = Request("t", "empty", 2, 1);
  const auto batched = engine_->PredictBatch({&r, &r});
  ASSERT_EQ(batched.size(), 2u);
  ExpectSame(batched[0], engine_->Predict(r), "empty");
  EXPECT_EQ(batched[1].status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace adaptd
