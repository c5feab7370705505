// The engine under a memory budget (docs/RESIDENCY.md): a budget needs a data directory, a
// store larger than the whole budget is refused naming it, stores evicted right after their
// writes (written to the state database first) lose nothing, in memory or on restart, and an
// evicted store with a read-out stays warm: it answers predicts alike from its read-out, a
// write loads it whole, and a read of a cold one loads only the read-out.
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/stores/store_kind.h"

namespace adaptd {
namespace {

class EngineResidencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/engine-residency-" + std::to_string(std::random_device()());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  absl::Status Start(uint64_t budget, const std::string& data_dir) {
    engine_.reset();
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(data_dir);
    config.set_memory_budget_bytes(budget);
    auto engine = Engine::Create(config, backend_.get(), nullptr);
    if (!engine.ok()) return engine.status();
    engine_ = *std::move(engine);
    return absl::OkStatus();
  }
  absl::StatusOr<adapt::v1::StoreInfo> Create(const std::string& name, uint32_t dim,
                                              adapt::v1::StoreKind kind) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store(name);
    create.mutable_spec()->set_kind(kind);
    create.mutable_spec()->set_dim(dim);
    if (kind == adapt::v1::STORE_KIND_FALCON) {
      create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    }
    if (kind == adapt::v1::STORE_KIND_FAAST) {
      // No automatic compiles: one in flight holds its store, so the budget would take a more
      // recently used store instead, and these tests check which store goes.
      create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
      create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
    }
    return engine_->CreateStore(create);
  }
  absl::Status Adapt(const std::string& name, int n, int seed) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = 0; i < n; ++i) {
      adapt::v1::Example* e = examples.Add();
      e->set_id(absl::StrCat(name, "-", seed, "-", i));
      e->set_label(i % 2 ? "odd" : "even");
      for (int j = 0; j < 8; ++j) e->mutable_input()->mutable_vector()->add_values(seed + i + j);
    }
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    if (absl::Status added = session->Add("t", name, examples); !added.ok()) return added;
    return session->Finish().status();
  }
  absl::Status Compile(const std::string& name) {
    adapt::v1::CompileRequest compile;
    compile.set_tenant("t");
    compile.set_store(name);
    absl::Notification compiled;
    absl::Status status;
    engine_->Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      status = r.status();
      compiled.Notify();
    });
    compiled.WaitForNotification();
    return status;
  }
  adapt::v1::PredictRequest Request(const std::string& name) {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store(name);
    request.set_top_k(2);
    for (int i = 0; i < 5; ++i) {
      auto* values = request.add_inputs()->mutable_vector();
      for (int j = 0; j < 8; ++j) values->add_values(static_cast<float>((i * 7 + j * 3) % 11) - 5);
    }
    return request;
  }
  // Waits (bounded) until `name` is in `tier`.
  bool WaitForTier(const std::string& name, adapt::v1::Tier tier) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (Info(name).tier() != tier && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    return Info(name).tier() == tier;
  }
  adapt::v1::StoreInfo Info(const std::string& name) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant("t");
    get.set_store(name);
    return engine_->GetStore(get).value();
  }

  std::string dir_;
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineResidencyTest, ABudgetNeedsADataDirectory) {
  const absl::Status started = Start(1 << 20, "");
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument) << started;
  EXPECT_EQ(started.message().rfind("memory_budget_bytes: ", 0), 0u) << started;
}

TEST_F(EngineResidencyTest, AStoreLargerThanTheWholeBudgetIsRefused) {
  ASSERT_TRUE(Start(64, dir_).ok());
  auto created = Create("big", 256, adapt::v1::STORE_KIND_FAAST);  // more than 64 bytes
  EXPECT_EQ(created.status().code(), absl::StatusCode::kResourceExhausted) << created.status();
  EXPECT_EQ(created.status().message().rfind("memory_budget_bytes: the store holds ", 0), 0u)
      << created.status();
  adapt::v1::ListStoresRequest list;
  list.set_tenant("t");
  EXPECT_EQ(engine_->ListStores(list)->stores_size(), 0);
}

TEST_F(EngineResidencyTest, StoresEvictedRightAfterTheirWritesLoseNothing) {
  ASSERT_TRUE(Start(0, dir_).ok());
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(Create(name, 8, adapt::v1::STORE_KIND_FALCON).ok());
    ASSERT_TRUE(Adapt(name, 3, 0).ok());  // both labels: the stores' size from now on
  }
  // (Their remembered ids grow with every write below; they count in the budget's total but
  // not in the refusal of a store larger than the budget.)
  const uint64_t each = std::max(Info("a").memory_bytes(), Info("b").memory_bytes());
  uint64_t expected = 3;
  // Room for one store and a half: one of the two is evicted after nearly every write.
  ASSERT_TRUE(Start(each + each / 2, dir_).ok());
  int cold_after_write = 0;
  for (int round = 1; round <= 10; ++round) {
    for (const char* name : {"a", "b"}) {
      ASSERT_TRUE(Adapt(name, 3, round).ok()) << name << " round " << round;
    }
    expected += 3;
    // Bounded wait for the older of the two ("a") to be evicted (warm), with its write.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (Info("a").tier() == adapt::v1::TIER_HOT && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    if (Info("a").tier() != adapt::v1::TIER_HOT) ++cold_after_write;
    EXPECT_EQ(Info("a").examples(), expected);
    EXPECT_EQ(Info("b").examples(), expected);
  }
  EXPECT_GT(cold_after_write, 0);
  engine_.reset();  // no checkpoint on the way down
  ASSERT_TRUE(Start(each + each / 2, dir_).ok());
  EXPECT_EQ(Info("a").examples(), expected);
  EXPECT_EQ(Info("b").examples(), expected);
  // Resends are recognised after loads: every id is remembered.
  EXPECT_TRUE(Adapt("a", 3, 10).ok());
  EXPECT_EQ(Info("a").examples(), expected);
}

TEST_F(EngineResidencyTest, AnEvictedStoreWithAReadoutStaysWarmAndAnswersAlike) {
  ASSERT_TRUE(Start(0, dir_).ok());
  ASSERT_TRUE(Create("fa", 8, adapt::v1::STORE_KIND_FAAST).ok());
  ASSERT_TRUE(Create("fl", 8, adapt::v1::STORE_KIND_FALCON).ok());
  for (const char* name : {"fa", "fl"}) ASSERT_TRUE(Adapt(name, 6, 1).ok());
  ASSERT_TRUE(Compile("fa").ok());
  std::map<std::string, adapt::v1::PredictResponse> hot, hot_batch;
  for (const char* name : {"fa", "fl"}) {
    hot[name] = engine_->Predict(Request(name)).value();
    const adapt::v1::PredictRequest request = Request(name);
    hot_batch[name] = engine_->PredictBatch({&request})[0].value();
  }
  const adapt::v1::StoreInfo whole = Info("fa");

  // A budget of one byte evicts every store it can: each keeps only its read-out. (A graceful
  // stop checkpoints, so the restart loads nothing.)
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(Start(1, dir_).ok());
  for (const char* name : {"fa", "fl"}) {
    EXPECT_EQ(Info(name).tier(), adapt::v1::TIER_COLD) << name;  // start-up is lazy
    auto read = engine_->Predict(Request(name));
    ASSERT_TRUE(read.ok()) << read.status();
    const adapt::v1::StoreInfo info = Info(name);
    ASSERT_TRUE(info.tier() == adapt::v1::TIER_WARM || info.tier() == adapt::v1::TIER_COLD)
        << name << ": a read loads the read-out alone, never the whole store";
    const adapt::v1::PredictRequest request = Request(name);
    // The grouped path computes from the same float read-out: equal, bit for bit.
    auto batch = engine_->PredictBatch({&request})[0];
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->SerializeAsString(), hot_batch[name].SerializeAsString()) << name;
    // Predict: the same labels as when hot, the scores up to float rounding.
    ASSERT_EQ(read->predictions_size(), hot[name].predictions_size());
    for (int i = 0; i < read->predictions_size(); ++i) {
      const auto& got = read->predictions(i);
      const auto& want = hot[name].predictions(i);
      ASSERT_EQ(got.labels_size(), want.labels_size());
      for (int k = 0; k < got.labels_size(); ++k) {
        EXPECT_EQ(got.labels(k).label(), want.labels(k).label()) << name << " row " << i;
        EXPECT_NEAR(got.labels(k).score(), want.labels(k).score(),
                    1e-5 * (1 + std::abs(want.labels(k).score())));
      }
    }
  }
  // A warm store holds a fraction of the whole and shows what it was.
  ASSERT_TRUE(engine_->Predict(Request("fa")).ok());
  adapt::v1::StoreInfo warm = Info("fa");
  if (warm.tier() == adapt::v1::TIER_WARM) {
    EXPECT_LT(warm.memory_bytes(), whole.memory_bytes());
    EXPECT_GT(warm.memory_bytes(), 0u);
  }
  EXPECT_EQ(warm.examples(), whole.examples());
  EXPECT_EQ(warm.version(), whole.version());
  // The budget takes warm stores on to cold.
  EXPECT_TRUE(WaitForTier("fa", adapt::v1::TIER_COLD));

  // Room for the larger store whole and half the other: a write to a warm store loads it
  // whole, then the older one goes warm again, and nothing is lost.
  ASSERT_TRUE(Start(0, dir_).ok());
  for (const char* name : {"fa", "fl"}) ASSERT_TRUE(Adapt(name, 4, 2).ok());
  const uint64_t fa = Info("fa").memory_bytes(), fl = Info("fl").memory_bytes();
  ASSERT_TRUE(engine_->Flush().ok());
  ASSERT_TRUE(Start(std::max(fa, fl) + std::min(fa, fl) / 2, dir_).ok());
  for (const char* name : {"fa", "fl"}) ASSERT_TRUE(engine_->Predict(Request(name)).ok());
  EXPECT_EQ(Info("fa").tier(), adapt::v1::TIER_WARM);
  ASSERT_TRUE(Adapt("fa", 1, 3).ok());
  EXPECT_EQ(Info("fa").tier(), adapt::v1::TIER_HOT);
  ASSERT_TRUE(Adapt("fl", 1, 3).ok());
  EXPECT_TRUE(WaitForTier("fa", adapt::v1::TIER_WARM));  // the least recently used
  EXPECT_EQ(Info("fa").examples(), 11u);
  EXPECT_EQ(Info("fl").examples(), 11u);
  ASSERT_TRUE(Start(0, dir_).ok());
  EXPECT_EQ(Info("fa").examples(), 11u);
  EXPECT_EQ(Info("fl").examples(), 11u);
}

TEST_F(EngineResidencyTest, AStoreWithoutAReadoutGoesFromHotToCold) {
  ASSERT_TRUE(Start(0, dir_).ok());
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("pk");
  adapt::v1::OutputSpec labels;
  labels.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  *create.mutable_spec() =
      SmallSpec(*StoreKinds::Global().Find(adapt::v1::STORE_KIND_FWPKM), 8, labels).value();
  auto created = engine_->CreateStore(create);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(Adapt("pk", 6, 1).ok());
  ASSERT_TRUE(Compile("pk").ok());
  ASSERT_TRUE(Start(1, dir_).ok());
  auto read = engine_->Predict(Request("pk"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_NE(Info("pk").tier(), adapt::v1::TIER_WARM);
  EXPECT_TRUE(WaitForTier("pk", adapt::v1::TIER_COLD));
}

TEST_F(EngineResidencyTest, RememberedExampleIdsCountInWhatAStoreHolds) {
  ASSERT_TRUE(Start(0, dir_).ok());
  for (const char* name : {"ids", "none"}) {
    ASSERT_TRUE(Create(name, 8, adapt::v1::STORE_KIND_FALCON).ok());
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = 0; i < 200; ++i) {
      adapt::v1::Example* e = examples.Add();
      if (std::string(name) == "ids") e->set_id(absl::StrCat("an-example-id-longer-than-sso-", i));
      e->set_label(i % 2 ? "odd" : "even");
      for (int j = 0; j < 8; ++j) e->mutable_input()->mutable_vector()->add_values(i + j);
    }
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add("t", name, examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  }
  // Two copies of each id (its order and its set), 30-odd bytes each beyond the strings.
  const uint64_t with = Info("ids").memory_bytes(), without = Info("none").memory_bytes();
  EXPECT_GE(with, without + 200 * 2 * (sizeof(std::string) + 30)) << with << " vs " << without;
}

TEST_F(EngineResidencyTest, APinnedStoreStaysLoadedAndItsPinSurvivesARestart) {
  ASSERT_TRUE(Start(0, dir_).ok());
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(Create(name, 8, adapt::v1::STORE_KIND_FALCON).ok());
    ASSERT_TRUE(Adapt(name, 3, 0).ok());
  }
  const uint64_t each = std::max(Info("a").memory_bytes(), Info("b").memory_bytes());
  ASSERT_TRUE(Start(each + each / 2, dir_).ok());
  adapt::v1::PinStoreRequest pin;
  pin.set_tenant("t");
  pin.set_store("a");
  pin.set_pinned(true);
  auto pinned = engine_->PinStore(pin);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_TRUE(pinned->spec().pinned());
  EXPECT_EQ(pinned->tier(), adapt::v1::TIER_HOT);
  // "a" is the older of the two after these writes, yet "b" is the one evicted.
  ASSERT_TRUE(Adapt("a", 3, 1).ok());
  ASSERT_TRUE(Adapt("b", 3, 1).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Info("b").tier() != adapt::v1::TIER_COLD && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(Info("b").tier(), adapt::v1::TIER_COLD);
  EXPECT_EQ(Info("a").tier(), adapt::v1::TIER_HOT);

  // Pinning "b" too would pin more than the budget.
  pin.set_store("b");
  auto refused = engine_->PinStore(pin);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("memory_budget_bytes"), std::string::npos)
      << refused.status();
  EXPECT_FALSE(Info("b").spec().pinned());

  engine_.reset();  // the pin is in the log, no checkpoint on the way down
  ASSERT_TRUE(Start(each + each / 2, dir_).ok());
  EXPECT_TRUE(Info("a").spec().pinned());
  EXPECT_FALSE(Info("b").spec().pinned());
  ASSERT_TRUE(engine_->Flush().ok());  // and in the catalog after a checkpoint
  ASSERT_TRUE(Start(0, dir_).ok());
  EXPECT_TRUE(Info("a").spec().pinned());
  pin.set_store("a");
  pin.set_pinned(false);
  ASSERT_TRUE(engine_->PinStore(pin).ok());
  EXPECT_FALSE(Info("a").spec().pinned());
}

TEST_F(EngineResidencyTest, PinningAnUnknownStoreIsNotFound) {
  ASSERT_TRUE(Start(0, dir_).ok());
  adapt::v1::PinStoreRequest pin;
  pin.set_tenant("t");
  pin.set_store("nope");
  pin.set_pinned(true);
  EXPECT_EQ(engine_->PinStore(pin).status().code(), absl::StatusCode::kNotFound);
  pin.set_store("");
  EXPECT_EQ(engine_->PinStore(pin).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
