#include "server/core/remembered_predictions.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

adapt::v1::FeedbackWindow Window(uint32_t count, uint32_t max_age_s = 0) {
  adapt::v1::FeedbackWindow window;
  window.set_count(count);
  window.set_max_age_s(max_age_s);
  return window;
}

RememberedPrediction Served(float x, absl::Time at, std::string label = "a") {
  RememberedPrediction p;
  p.served = at;
  p.key = {x, 1.0f - x};
  p.label = std::move(label);
  return p;
}

TEST(PredictionIdTest, FormatsAndParsesBack) {
  const PredictionId id{0x8000000000001f3aULL, 0x5c1e0d77a0b3e211ULL, 42};
  const std::string text = FormatPredictionId(id);
  EXPECT_EQ(text, "p1.8000000000001f3a.5c1e0d77a0b3e211.42");
  auto parsed = ParsePredictionId(text, "items[0].prediction_id");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->incarnation, id.incarnation);
  EXPECT_EQ(parsed->nonce, id.nonce);
  EXPECT_EQ(parsed->sequence, 42u);
}

TEST(PredictionIdTest, MalformedIdsAreInvalidArgumentNamingTheField) {
  for (const char* bad :
       {"", "p1", "p2.8000000000001f3a.5c1e0d77a0b3e211.42", "p1.8000000000001f3a.5c1e0d77.42",
        "p1.8000000000001F3A.5c1e0d77a0b3e211.42", "p1.8000000000001f3a.5c1e0d77a0b3e211.",
        "p1.8000000000001f3a.5c1e0d77a0b3e211.0", "p1.8000000000001f3a.5c1e0d77a0b3e211.4x",
        "p1.8000000000001f3a.5c1e0d77a0b3e211.42.1", "p1.8000000000001f3a.5c1e0d77a0b3e211.-4"}) {
    auto parsed = ParsePredictionId(bad, "items[3].prediction_id");
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find("items[3].prediction_id"), std::string::npos);
  }
}

TEST(RememberedPredictionsTest, FindsWhatItRemembered) {
  RememberedPredictions ring(7, Window(4), /*nonce=*/99);
  const absl::Time now = absl::Now();
  const std::string id = ring.Remember(Served(0.25f, now, "billing"));
  auto parsed = ParsePredictionId(id, "id");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->incarnation, 7u);
  EXPECT_EQ(parsed->nonce, 99u);
  auto found = ring.Find(*parsed, now, "id");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->label, "billing");
  EXPECT_EQ(found->key, (std::vector<float>{0.25f, 0.75f}));
  EXPECT_EQ(ring.size(), 1u);
  EXPECT_GT(ring.bytes(), 2 * sizeof(float));
}

TEST(RememberedPredictionsTest, ShedDropsTheOldestFirstAndNamesThePressure) {
  int64_t heard = 0;
  RememberedPredictions ring(7, Window(100), 99, [&](int64_t delta) { heard += delta; });
  const absl::Time now = absl::Now();
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(ring.Remember(Served(i, now)));
  EXPECT_EQ(heard, static_cast<int64_t>(ring.bytes()));
  const uint64_t one = ring.bytes() / 10;  // every entry holds as much
  EXPECT_EQ(ring.Shed(1), one);            // one entry frees at least a byte
  EXPECT_EQ(ring.size(), 9u);
  EXPECT_EQ(heard, static_cast<int64_t>(ring.bytes()));
  auto dropped = ring.Find(*ParsePredictionId(ids[0], "id"), now, "items[0].prediction_id");
  ASSERT_EQ(dropped.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(dropped.status().message().find("dropped under memory pressure"), std::string::npos)
      << dropped.status();
  EXPECT_NE(dropped.status().message().find("feedback window keeps its last 100"),
            std::string::npos);
  EXPECT_TRUE(ring.Find(*ParsePredictionId(ids[1], "id"), now, "id").ok());
  EXPECT_EQ(ring.Shed(3 * one), 3 * one);
  EXPECT_EQ(ring.size(), 6u);
  EXPECT_EQ(ring.Shed(UINT64_MAX), 6 * one);
  EXPECT_EQ(ring.size(), 0u);
  EXPECT_EQ(ring.bytes(), 0u);
  EXPECT_EQ(heard, 0);
  EXPECT_EQ(ring.shed(), 10u);
  EXPECT_EQ(ring.Shed(1), 0u);
}

TEST(RememberedPredictionsTest, TheHookHearsTheBytesGoWithTheRing) {
  int64_t heard = 0;
  {
    RememberedPredictions ring(7, Window(100), 99, [&](int64_t delta) { heard += delta; });
    for (int i = 0; i < 5; ++i) ring.Remember(Served(i, absl::Now()));
    EXPECT_GT(heard, 0);
  }
  EXPECT_EQ(heard, 0);
}

TEST(RememberedPredictionsTest, TheDropsHookHearsEachDropByItsReason) {
  RememberedDrops heard;
  RememberedPredictions ring(7, Window(3, 60), 99, nullptr, [&](const RememberedDrops& drops) {
    EXPECT_TRUE(drops.any());
    heard.window += drops.window;
    heard.age += drops.age;
    heard.pressure += drops.pressure;
  });
  const absl::Time start = absl::Now();
  for (int i = 0; i < 5; ++i) ring.Remember(Served(0.1f * i, start));
  EXPECT_EQ(heard.window, 2u);  // a count of 3: the fourth and fifth pushed the first two out
  EXPECT_EQ(heard.age, 0u);
  ring.Remember(Served(0.9f, start + absl::Seconds(70)));  // the three left are too old
  EXPECT_EQ(heard.age, 3u);
  EXPECT_EQ(heard.window, 2u);
  ring.Remember(Served(0.8f, start + absl::Seconds(71)));
  const uint64_t two = ring.bytes();
  EXPECT_EQ(ring.Shed(1), two / 2);  // one entry is enough: the oldest goes
  EXPECT_EQ(heard.pressure, 1u);
  EXPECT_EQ(heard.window + heard.age + heard.pressure + ring.size(), 7u);
}

TEST(RememberedPredictionsTest, CountsTheServedFiguresItIsGiven) {
  RememberedPredictions ring(7, Window(3), 99);
  EXPECT_EQ(ring.served().evaluated, 0u);
  ring.CountServed(5, 3);
  ring.CountServed(2, 2);
  EXPECT_EQ(ring.served().evaluated, 7u);
  EXPECT_EQ(ring.served().correct, 5u);
}

TEST(RememberedPredictionsTest, IdsAreNeverServedTwiceAcrossStoresOfOneServer) {
  RememberedPredictions a(1, Window(1000), 5);
  RememberedPredictions b(1, Window(1000), 5);  // the same incarnation and nonce
  std::set<std::string> ids;
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(ids.insert(a.Remember(Served(0.1f, absl::Now()))).second);
    EXPECT_TRUE(ids.insert(b.Remember(Served(0.2f, absl::Now()))).second);
  }
  // b's ids are not a's predictions.
  auto id = ParsePredictionId(*ids.begin(), "id");
  ASSERT_TRUE(id.ok());
  EXPECT_NE(a.Find(*id, absl::Now(), "id").ok(), b.Find(*id, absl::Now(), "id").ok());
}

TEST(RememberedPredictionsTest, KeepsTheNewestCountAndNamesTheWindowForTheRest) {
  RememberedPredictions ring(7, Window(3), 99);
  const absl::Time now = absl::Now();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(ring.Remember(Served(0.1f * i, now)));
  EXPECT_EQ(ring.size(), 3u);
  for (int i = 0; i < 5; ++i) {
    auto found = ring.Find(*ParsePredictionId(ids[i], "id"), now, "items[1].prediction_id");
    if (i >= 2) {
      EXPECT_TRUE(found.ok()) << i << ": " << found.status();
      continue;
    }
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(found.status().message().find("items[1].prediction_id"), std::string::npos);
    EXPECT_NE(found.status().message().find("feedback window keeps its last 3 predictions"),
              std::string::npos)
        << found.status();
  }
}

TEST(RememberedPredictionsTest, ForgetsWhatIsOlderThanTheAge) {
  RememberedPredictions ring(7, Window(10, 60), 99);
  const absl::Time start = absl::Now();
  const std::string old_id = ring.Remember(Served(0.1f, start));
  const std::string new_id = ring.Remember(Served(0.2f, start + absl::Seconds(50)));
  const absl::Time later = start + absl::Seconds(70);
  auto old_found = ring.Find(*ParsePredictionId(old_id, "id"), later, "id");
  EXPECT_EQ(old_found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(old_found.status().message().find("older than the window"), std::string::npos);
  EXPECT_NE(old_found.status().message().find("1m"), std::string::npos) << old_found.status();
  EXPECT_TRUE(ring.Find(*ParsePredictionId(new_id, "id"), later, "id").ok());
  // The next push drops the expired one.
  ring.Remember(Served(0.3f, later));
  EXPECT_EQ(ring.size(), 2u);
}

TEST(RememberedPredictionsTest, AnotherIncarnationOrProcessIsNotFound) {
  RememberedPredictions ring(7, Window(10), 99);
  const std::string id = ring.Remember(Served(0.1f, absl::Now()));
  PredictionId other = *ParsePredictionId(id, "id");
  other.nonce = 100;
  auto restarted = ring.Find(other, absl::Now(), "id");
  EXPECT_EQ(restarted.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(restarted.status().message().find("before the server restarted"), std::string::npos);
  other = *ParsePredictionId(id, "id");
  other.incarnation = 8;
  EXPECT_EQ(ring.Find(other, absl::Now(), "id").status().code(), absl::StatusCode::kNotFound);
}

TEST(FeedbackWindowTest, ChecksTheSpec) {
  adapt::v1::StoreSpec spec;
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  EXPECT_TRUE(CheckFeedbackWindow(spec).ok());
  *spec.mutable_feedback() = Window(kMaxFeedbackWindow, kMaxFeedbackAgeSeconds);
  EXPECT_TRUE(CheckFeedbackWindow(spec).ok());
  *spec.mutable_feedback() = Window(kMaxFeedbackWindow + 1);
  EXPECT_NE(CheckFeedbackWindow(spec).message().find("spec.feedback.count"), std::string::npos);
  *spec.mutable_feedback() = Window(10, kMaxFeedbackAgeSeconds + 1);
  EXPECT_NE(CheckFeedbackWindow(spec).message().find("spec.feedback.max_age_s"), std::string::npos);
  *spec.mutable_feedback() = Window(10);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_NEXT);
  EXPECT_EQ(CheckFeedbackWindow(spec).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
