// Feedback on served predictions through the engine (docs/FEEDBACK.md), over a data
// directory: learning from prediction ids gives the same store as Adapt with the same
// examples; a resent call applies once, before and after a restart; forgotten, unknown and
// restarted-away ids are NOT_FOUND naming the window; bad input names its field; nothing
// half-applied.
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#include "server/metrics/metrics.h"

namespace adaptd {
namespace {

constexpr int kDim = 4;
const char* const kLabels[] = {"north", "south", "east"};

// A labelled stream: example i's input and true label.
adapt::v1::Input InputOf(int i) {
  adapt::v1::Input input;
  for (int j = 0; j < kDim; ++j) {
    input.mutable_vector()->add_values(static_cast<float>(((i * 7 + j * 3) % 11) - 5) +
                                       (j == i % kDim ? 4.0f : 0.0f));
  }
  return input;
}
std::string LabelOf(int i) { return kLabels[i % 3]; }

class EngineFeedbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    dir_ = ::testing::TempDir() + "/engine-feedback-" + std::to_string(std::random_device()());
    std::filesystem::remove_all(dir_);
    Start();
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A new Engine on the same directory, as after a crash.
  // `budget`: the memory budget, `quota`: every tenant's memory quota (0: none).
  void Start(uint64_t budget = 0, uint64_t quota = 0) {
    engine_.reset();
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(dir_);
    config.set_memory_budget_bytes(budget);
    if (quota > 0) config.mutable_default_quota()->set_max_memory_bytes(quota);
    auto engine = Engine::Create(config, backend_.get(), &metrics_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  absl::Status Create(const std::string& store, adapt::v1::StoreKind kind, uint32_t window,
                      adapt::v1::OutputSpec::Kind output = adapt::v1::OutputSpec::KIND_LABELS) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("t");
    create.set_store(store);
    adapt::v1::StoreSpec* spec = create.mutable_spec();
    spec->set_kind(kind);
    spec->set_dim(kDim);
    spec->mutable_output()->set_kind(output);
    if (output == adapt::v1::OutputSpec::KIND_VECTOR) spec->mutable_output()->set_dim(2);
    if (kind == adapt::v1::STORE_KIND_FALCON) {
      spec->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    }
    if (window > 0) spec->mutable_feedback()->set_count(window);
    return engine_->CreateStore(create).status();
  }

  absl::StatusOr<adapt::v1::PredictResponse> Predict(const std::string& store, int first, int n,
                                                     bool batched = false) {
    adapt::v1::PredictRequest request;
    request.set_tenant("t");
    request.set_store(store);
    for (int i = first; i < first + n; ++i) *request.add_inputs() = InputOf(i);
    if (!batched) return engine_->Predict(request);
    return engine_->PredictBatch({&request})[0];
  }

  absl::StatusOr<adapt::v1::AdaptResponse> Adapt(const std::string& store, int first, int n) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (int i = first; i < first + n; ++i) {
      adapt::v1::Example* e = examples.Add();
      *e->mutable_input() = InputOf(i);
      e->set_label(LabelOf(i));
    }
    auto session = engine_->StartWrite(TxnKind::kAdapt);
    if (absl::Status added = session->Add("t", store, examples); !added.ok()) return added;
    return session->Finish();
  }

  // Feedback naming `ids`, with example first+k's true label for ids[k].
  absl::StatusOr<adapt::v1::FeedbackResponse> Feedback(const std::string& store,
                                                       const std::vector<std::string>& ids,
                                                       int first) {
    adapt::v1::FeedbackRequest request;
    request.set_tenant("t");
    request.set_store(store);
    for (size_t k = 0; k < ids.size(); ++k) {
      adapt::v1::FeedbackItem* item = request.add_items();
      item->set_prediction_id(ids[k]);
      item->set_label(LabelOf(first + static_cast<int>(k)));
    }
    return engine_->Feedback(request);
  }

  // t/`store`, a falcon store with a feedback window of `window`, taught 6 examples: the ids
  // of its predictions of examples 0 … n-1.
  std::vector<std::string> ServedIds(const std::string& store, uint32_t window, int n) {
    EXPECT_TRUE(Create(store, adapt::v1::STORE_KIND_FALCON, window).ok());
    EXPECT_TRUE(Adapt(store, 100, 6).ok());
    auto predicted = Predict(store, 0, n);
    EXPECT_TRUE(predicted.ok()) << predicted.status();
    return predicted.ok() ? IdsOf(*predicted) : std::vector<std::string>(n);
  }

  static std::vector<std::string> IdsOf(const adapt::v1::PredictResponse& response) {
    std::vector<std::string> ids;
    for (const auto& p : response.predictions()) ids.push_back(p.prediction_id());
    return ids;
  }

  adapt::v1::StoreInfo Info(const std::string& store) {
    adapt::v1::GetStoreRequest request;
    request.set_tenant("t");
    request.set_store(store);
    auto info = engine_->GetStore(request);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : adapt::v1::StoreInfo();
  }

  // The store's statistics as GetStore describes them, less its name and what it remembers.
  adapt::v1::StoreInfo Statistics(const std::string& store) {
    adapt::v1::StoreInfo info = Info(store);
    info.clear_store();
    info.clear_memory_bytes();
    // What the server holds in memory of the served predictions, not the store's statistics.
    info.clear_served_evaluated();
    info.clear_served_correct();
    info.clear_remembered_bytes();
    if (info.has_faast()) info.mutable_faast()->clear_compile_seconds();
    return info;
  }

  void Compile(const std::string& store) {
    adapt::v1::CompileRequest request;
    request.set_tenant("t");
    request.set_store(store);
    absl::Notification done;
    engine_->Compile(request, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      done.Notify();
    });
    done.WaitForNotification();
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::string dir_;
  Metrics metrics_;  // outlives every engine_
  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineFeedbackTest, AStoreWithoutAWindowServesNoIds) {
  ASSERT_TRUE(Create("plain", adapt::v1::STORE_KIND_FALCON, 0).ok());
  ASSERT_TRUE(Adapt("plain", 100, 6).ok());
  auto predicted = Predict("plain", 0, 2);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  for (const auto& p : predicted->predictions()) EXPECT_TRUE(p.prediction_id().empty());
  auto refused = Feedback("plain", {"p1.0000000000000001.0000000000000002.3"}, 0);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("spec.feedback"), std::string::npos);
}

// The loop on a labelled stream: each round predicts (alternately through Predict and
// PredictBatch) and sends the true labels by prediction id; a twin store gets the same
// examples by Adapt. Their statistics and predictions end equal, for every kind.
TEST_F(EngineFeedbackTest, LearningFromIdsEqualsAdaptWithTheSameExamples) {
  for (adapt::v1::StoreKind kind :
       {adapt::v1::STORE_KIND_FALCON, adapt::v1::STORE_KIND_FAAST, adapt::v1::STORE_KIND_FWPKM}) {
    const std::string by_adapt = absl::StrCat("adapt", kind);
    const std::string by_feedback = absl::StrCat("feedback", kind);
    ASSERT_TRUE(Create(by_adapt, kind, 100).ok());
    ASSERT_TRUE(Create(by_feedback, kind, 100).ok());
    for (const std::string& store : {by_adapt, by_feedback}) {
      ASSERT_TRUE(Adapt(store, 100, 6).ok());
      if (kind == adapt::v1::STORE_KIND_FAAST) Compile(store);  // faast predicts once compiled
    }
    constexpr int kRound = 5;
    for (int round = 0; round < 6; ++round) {
      const int first = round * kRound;
      auto predicted = Predict(by_feedback, first, kRound, /*batched=*/round % 2 == 1);
      ASSERT_TRUE(predicted.ok()) << predicted.status();
      auto fed = Feedback(by_feedback, IdsOf(*predicted), first);
      ASSERT_TRUE(fed.ok()) << fed.status();
      EXPECT_EQ(fed->accepted(), static_cast<uint64_t>(kRound));
      EXPECT_EQ(fed->duplicates(), 0u);
      auto adapted = Adapt(by_adapt, first, kRound);
      ASSERT_TRUE(adapted.ok()) << adapted.status();
      EXPECT_EQ(fed->evaluated(), adapted->evaluated());
      EXPECT_EQ(fed->correct(), adapted->correct());
    }
    if (kind == adapt::v1::STORE_KIND_FAAST) {
      Compile(by_adapt);
      Compile(by_feedback);
    }
    EXPECT_EQ(Statistics(by_feedback).DebugString(), Statistics(by_adapt).DebugString());
    EXPECT_EQ(Info(by_feedback).examples(), Info(by_adapt).examples());
    auto a = Predict(by_adapt, 200, 8);
    auto b = Predict(by_feedback, 200, 8);
    ASSERT_TRUE(a.ok() && b.ok());
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(a->predictions(r).labels(0).label(), b->predictions(r).labels(0).label());
      EXPECT_EQ(a->predictions(r).labels(0).score(), b->predictions(r).labels(0).score());
    }
  }
}

TEST_F(EngineFeedbackTest, FeedbackWithoutALabelConfirmsTheServedOne) {
  ASSERT_TRUE(Create("s", adapt::v1::STORE_KIND_FALCON, 10).ok());
  ASSERT_TRUE(Adapt("s", 0, 6).ok());
  auto predicted = Predict("s", 10, 3);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  adapt::v1::FeedbackRequest request;
  request.set_tenant("t");
  request.set_store("s");
  for (const auto& p : predicted->predictions()) {
    request.add_items()->set_prediction_id(p.prediction_id());
  }
  auto fed = engine_->Feedback(request);
  ASSERT_TRUE(fed.ok()) << fed.status();
  EXPECT_EQ(fed->accepted(), 3u);
  EXPECT_EQ(fed->served_correct(), 3u);
  EXPECT_EQ(Info("s").examples(), 9u);
}

TEST_F(EngineFeedbackTest, AResentCallAppliesOnceBeforeAndAfterARestart) {
  const std::vector<std::string> ids = ServedIds("s", 10, 4);
  ASSERT_TRUE(Feedback("s", ids, 0).ok());
  const adapt::v1::StoreInfo after_once = Statistics("s");
  auto again = Feedback("s", ids, 0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->accepted(), 4u);
  EXPECT_EQ(again->duplicates(), 4u);
  EXPECT_EQ(Statistics("s").DebugString(), after_once.DebugString());
  Start();  // the remembered keys are gone; the applied ids are not
  auto after_restart = Feedback("s", ids, 0);
  ASSERT_TRUE(after_restart.ok()) << after_restart.status();
  EXPECT_EQ(after_restart->duplicates(), 4u);
  EXPECT_EQ(Statistics("s").DebugString(), after_once.DebugString());
}

TEST_F(EngineFeedbackTest, ARestartForgetsTheKeysButNothingAcknowledged) {
  const std::vector<std::string> ids = ServedIds("s", 10, 4);
  ASSERT_TRUE(Feedback("s", {ids[0], ids[1]}, 0).ok());
  const adapt::v1::StoreInfo acknowledged = Statistics("s");
  Start();
  EXPECT_EQ(Statistics("s").DebugString(), acknowledged.DebugString());
  auto lost = Feedback("s", {ids[2], ids[3]}, 2);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(lost.status().message().find("items[0].prediction_id"), std::string::npos);
  EXPECT_NE(lost.status().message().find("before the server restarted"), std::string::npos);
  EXPECT_NE(lost.status().message().find("feedback window"), std::string::npos);
  EXPECT_EQ(Statistics("s").DebugString(), acknowledged.DebugString());
}

TEST_F(EngineFeedbackTest, IdsPastTheWindowAreNotFoundAndNothingIsHalfApplied) {
  const std::vector<std::string> ids = ServedIds("s", 2, 3);
  const adapt::v1::StoreInfo before = Statistics("s");
  // ids[0] was pushed out by the two after it; ids[1] and ids[2] alone would apply.
  auto refused = Feedback("s", {ids[1], ids[2], ids[0]}, 1);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(refused.status().message().find("items[2].prediction_id"), std::string::npos);
  EXPECT_NE(refused.status().message().find("feedback window keeps its last 2 predictions"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(Statistics("s").DebugString(), before.DebugString());
  // Unknown: a well-formed id of this store that it never served.
  std::string unknown = ids[2];
  unknown.back() = unknown.back() == '9' ? '8' : '9';
  unknown += "0000";
  EXPECT_EQ(Feedback("s", {unknown}, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Statistics("s").DebugString(), before.DebugString());
}

TEST_F(EngineFeedbackTest, BadInputNamesItsFieldAndChangesNothing) {
  ASSERT_TRUE(Create("s", adapt::v1::STORE_KIND_FALCON, 10).ok());
  ASSERT_TRUE(
      Create("v", adapt::v1::STORE_KIND_FAAST, 10, adapt::v1::OutputSpec::KIND_VECTOR).ok());
  ASSERT_TRUE(Adapt("s", 100, 6).ok());
  auto predicted = Predict("s", 0, 2);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  const std::string id = predicted->predictions(0).prediction_id();
  const adapt::v1::StoreInfo before = Statistics("s");
  struct Case {
    std::string store;
    std::function<void(adapt::v1::FeedbackRequest*)> edit;
    absl::StatusCode code;
    std::string names;
  };
  const std::vector<Case> cases = {
      {"s", [](auto* r) { r->clear_items(); }, absl::StatusCode::kInvalidArgument, "items: 1 to"},
      {"s", [](auto* r) { r->mutable_items(0)->set_prediction_id("nope"); },
       absl::StatusCode::kInvalidArgument, "items[0].prediction_id"},
      {"s", [&](auto* r) { r->add_items()->set_prediction_id(id); },
       absl::StatusCode::kInvalidArgument, "items[1].prediction_id: repeats items[0]"},
      {"s", [](auto* r) { r->mutable_items(0)->set_label(""); }, absl::StatusCode::kInvalidArgument,
       "items[0].label: empty"},
      {"s", [](auto* r) { r->mutable_items(0)->mutable_vector()->add_values(1); },
       absl::StatusCode::kInvalidArgument, "items[0].vector: a label store takes a label"},
      {"v", [](auto* r) { r->mutable_items(0)->set_label("x"); },
       absl::StatusCode::kInvalidArgument, "items[0].label: a vector:2 store takes a vector"},
      {"v", [](auto* r) { r->mutable_items(0)->mutable_vector()->add_values(1); },
       absl::StatusCode::kInvalidArgument, "items[0].vector: 1 values, expected 2"},
      {"missing", [](auto*) {}, absl::StatusCode::kNotFound, "missing"},
      {"", [](auto*) {}, absl::StatusCode::kInvalidArgument, "store: required"},
  };
  for (const Case& c : cases) {
    adapt::v1::FeedbackRequest request;
    request.set_tenant("t");
    request.set_store(c.store);
    adapt::v1::FeedbackItem* item = request.add_items();
    item->set_prediction_id(id);
    item->set_label("north");
    c.edit(&request);
    auto result = engine_->Feedback(request);
    EXPECT_EQ(result.status().code(), c.code) << c.names << ": " << result.status();
    EXPECT_NE(result.status().message().find(c.names), std::string::npos) << result.status();
  }
  EXPECT_EQ(Statistics("s").DebugString(), before.DebugString());
  EXPECT_EQ(Info("v").examples(), 0u);
}

TEST_F(EngineFeedbackTest, TheWindowIsCheckedAtCreation) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("t");
  create.set_store("w");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
  create.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
  create.mutable_spec()->set_dim(kDim);
  create.mutable_spec()->mutable_feedback()->set_count(kMaxFeedbackWindow + 1);
  auto refused = engine_->CreateStore(create);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("spec.feedback.count"), std::string::npos);
  create.mutable_spec()->mutable_feedback()->set_count(5);
  create.mutable_spec()->mutable_feedback()->set_max_age_s(60);
  auto created = engine_->CreateStore(create);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->spec().feedback().count(), 5u);
  Start();
  EXPECT_EQ(Info("w").spec().feedback().max_age_s(), 60u);
}

TEST_F(EngineFeedbackTest, UnderTheBudgetFullWindowsAreTrimmedBeforeAnyStoreIsEvicted) {
  Start(/*budget=*/256 << 10);
  // "quiet" is used first, so it is the least recently used store when the budget is passed.
  ServedIds("quiet", 100, 3);
  std::vector<std::string> noisy = ServedIds("noisy", 100000, 3);
  // 3,000 remembered predictions of ~110 bytes each: more than the whole budget.
  for (int call = 0; call < 30; ++call) {
    auto predicted = Predict("noisy", call * 100, 100);
    ASSERT_TRUE(predicted.ok()) << predicted.status();
    for (const std::string& id : IdsOf(*predicted)) noisy.push_back(id);
  }
  // The residency thread drops the oldest remembered predictions (bounded wait): once the
  // ring holds less than the budget it has dropped some, its oldest first. Waiting on the
  // ring rather than on a feedback call, which would apply noisy[0] if it came first.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Info("noisy").remembered_bytes() >= (256u << 10) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const absl::Status dropped = Feedback("noisy", {noisy[0]}, 0).status();
  ASSERT_EQ(dropped.code(), absl::StatusCode::kNotFound) << dropped;
  EXPECT_NE(dropped.message().find("dropped under memory pressure"), std::string::npos) << dropped;
  EXPECT_NE(dropped.message().find("feedback window keeps its last 100000"), std::string::npos);
  // No store was evicted for them (the least recently used stores' remembered predictions go
  // first, "quiet"'s too), and the newest predictions are still remembered.
  EXPECT_EQ(Info("quiet").tier(), adapt::v1::TIER_HOT);
  EXPECT_EQ(Info("noisy").tier(), adapt::v1::TIER_HOT);
  EXPECT_TRUE(Feedback("noisy", {noisy.back()}, 0).ok());
}

TEST_F(EngineFeedbackTest, ATenantAtItsQuotaDropsItsRememberedPredictionsBeforeAWriteIsRefused) {
  Start(/*budget=*/0, /*quota=*/64 << 10);
  std::vector<std::string> ids = ServedIds("s", 100000, 3);
  ASSERT_LT(Info("s").memory_bytes(), 32u << 10);
  // 1,000 remembered predictions of ~110 bytes: the store and they pass the quota.
  for (int call = 0; call < 10; ++call) {
    auto predicted = Predict("s", call * 100, 100);
    ASSERT_TRUE(predicted.ok()) << predicted.status();  // predictions are never refused
    for (const std::string& id : IdsOf(*predicted)) ids.push_back(id);
  }
  // The write passes: the tenant's own oldest remembered predictions went first.
  auto adapted = Adapt("s", 200, 3);
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  auto dropped = Feedback("s", {ids[0]}, 0);
  ASSERT_EQ(dropped.status().code(), absl::StatusCode::kNotFound) << dropped.status();
  EXPECT_NE(dropped.status().message().find("dropped under memory pressure"), std::string::npos);
  EXPECT_TRUE(Feedback("s", {ids.back()}, 0).ok());
}

TEST_F(EngineFeedbackTest, ServedAccuracyMetricsMoveAsFeedbackArrives) {
  const auto scrape = [this] {
    return prometheus::TextSerializer().Serialize(metrics_.collectable()->Collect());
  };
  const std::vector<std::string> ids = ServedIds("s", 100, 4);
  std::string text = scrape();
  EXPECT_EQ(text.find("adaptd_served_predictions_evaluated_total{"), std::string::npos);
  auto applied = Feedback("s", {ids[0], ids[1], ids[2]}, 0);
  ASSERT_TRUE(applied.ok()) << applied.status();
  auto resent = Feedback("s", {ids[0]}, 0);
  ASSERT_TRUE(resent.ok()) << resent.status();
  text = scrape();
  const auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  };
  has(R"(adaptd_feedback_items_total{kind="falcon",result="applied",tenant="t"} 3)");
  has(R"(adaptd_feedback_items_total{kind="falcon",result="duplicate",tenant="t"} 1)");
  has(R"(adaptd_served_predictions_evaluated_total{kind="falcon",tenant="t"} 3)");
  has(absl::StrCat(R"(adaptd_served_predictions_correct_total{kind="falcon",tenant="t"} )",
                   applied->served_correct(), "\n"));
  const size_t delay =
      text.find(R"(adaptd_feedback_delay_seconds_total{kind="falcon",tenant="t"} )");
  ASSERT_NE(delay, std::string::npos) << text;
  EXPECT_NE(text.substr(delay + 62, 2), "0\n") << text.substr(delay, 80);   // some time passed
  const size_t bytes = text.find("\nadaptd_remembered_prediction_bytes ");  // not # HELP's
  ASSERT_NE(bytes, std::string::npos) << text;
  EXPECT_GT(std::stod(text.substr(bytes + 36)), 4 * 4 * sizeof(float)) << text.substr(bytes, 60);
}

TEST_F(EngineFeedbackTest, StoreInfoShowsServedAccuracyAndTheRememberedBytes) {
  ASSERT_TRUE(Create("s", adapt::v1::STORE_KIND_FALCON, 100).ok());
  ASSERT_TRUE(Adapt("s", 100, 6).ok());
  const adapt::v1::StoreInfo before = Info("s");
  EXPECT_EQ(before.remembered_bytes(), 0u);
  auto predicted = Predict("s", 0, 4);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  const std::vector<std::string> ids = IdsOf(*predicted);
  const adapt::v1::StoreInfo served = Info("s");
  EXPECT_GT(served.remembered_bytes(), 4 * kDim * sizeof(float));
  EXPECT_EQ(served.memory_bytes(), before.memory_bytes() + served.remembered_bytes());
  EXPECT_EQ(served.served_evaluated(), 0u);
  auto applied = Feedback("s", {ids[0], ids[1], ids[2]}, 0);
  ASSERT_TRUE(applied.ok()) << applied.status();
  ASSERT_TRUE(Feedback("s", {ids[0]}, 0).ok());  // a resend is not evaluated again
  // ids[3] with a label no prediction serves: evaluated, never correct.
  adapt::v1::FeedbackRequest wrong;
  wrong.set_tenant("t");
  wrong.set_store("s");
  wrong.add_items()->set_prediction_id(ids[3]);
  wrong.mutable_items(0)->set_label("west");
  auto missed = engine_->Feedback(wrong);
  ASSERT_TRUE(missed.ok()) << missed.status();
  EXPECT_EQ(missed->served_correct(), 0u);
  const adapt::v1::StoreInfo after = Info("s");
  EXPECT_EQ(after.served_evaluated(), 4u);
  EXPECT_EQ(after.served_correct(), applied->served_correct());
  // Memory only, like the remembered predictions: a restart starts them again.
  Start();
  EXPECT_EQ(Info("s").served_evaluated(), 0u);
  EXPECT_EQ(Info("s").remembered_bytes(), 0u);
}

TEST_F(EngineFeedbackTest, RememberedBytesByTenantAndDropsByReasonAreCounted) {
  const auto scrape = [this] {
    return prometheus::TextSerializer().Serialize(metrics_.collectable()->Collect());
  };
  ServedIds("s", 2, 5);  // a window of 2: three pushed out
  std::string text = scrape();
  EXPECT_NE(
      text.find(R"(adaptd_remembered_predictions_dropped_total{reason="window",tenant="t"} 3)"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"(adaptd_remembered_predictions_dropped_total{reason="age")"),
            std::string::npos);
  EXPECT_NE(text.find(absl::StrCat(R"(adaptd_tenant_remembered_prediction_bytes{tenant="t"} )",
                                   Info("s").remembered_bytes(), "\n")),
            std::string::npos)
      << text;
  // A deleted store's remembered predictions leave the tenant's gauge.
  adapt::v1::DeleteStoreRequest request;
  request.set_tenant("t");
  request.set_store("s");
  ASSERT_TRUE(engine_->DeleteStore(request).ok());
  text = scrape();
  EXPECT_EQ(text.find(R"(adaptd_tenant_remembered_prediction_bytes{tenant="t"})"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace adaptd
