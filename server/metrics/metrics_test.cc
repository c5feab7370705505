#include "server/metrics/metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace adaptd {
namespace {

std::string Scrape(const Metrics& m) {
  return prometheus::TextSerializer().Serialize(m.collectable()->Collect());
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(Metrics, EveryFamilyUsesTheAdaptdPrefixAndConventionalSuffixes) {
  Metrics m;
  for (const auto& family : m.collectable()->Collect()) {
    EXPECT_EQ(family.name.rfind("adaptd_", 0), 0u) << family.name;
    if (family.type == prometheus::MetricType::Counter) {
      EXPECT_EQ(family.name.substr(family.name.size() - 6), "_total") << family.name;
    }
  }
}

TEST(Metrics, EvictedTenantSeriesAreRemovedAndLaterTrafficIsOther) {
  Metrics m(TenantPolicy{{"vip"}, 1});
  m.RecordPredict("vip", "faast", 3);
  m.RecordPredict("a", "faast", 2);
  m.RecordPredict("b", "faast", 1);
  std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, R"(adaptd_tenant_predictions_total{kind="faast",tenant="vip"} 3)"));
  EXPECT_TRUE(Has(text, R"(adaptd_tenant_predictions_total{kind="faast",tenant="a"} 2)"));
  EXPECT_TRUE(Has(text, R"(adaptd_tenant_predictions_total{kind="faast",tenant="other"} 1)"));

  m.RecordPredict("b", "faast", 10);  // 11 > 2 × 2: b takes a's slot
  text = Scrape(m);
  EXPECT_FALSE(Has(text, R"(tenant="a")")) << text;
  EXPECT_TRUE(Has(text, R"(adaptd_tenant_predictions_total{kind="faast",tenant="b"} 10)"));
  m.RecordAdapt("a", "faast", "labels", 4, 4, 3, 1);
  text = Scrape(m);
  EXPECT_TRUE(Has(text, R"(adaptd_tenant_examples_ingested_total{kind="faast",tenant="other"} 4)"));
  EXPECT_TRUE(Has(
      text, R"(adaptd_prequential_correct_total{kind="faast",output="labels",tenant="other"} 3)"));
}

TEST(Metrics, MemoryIsSummedOverLiveStoresByKind) {
  Metrics m;
  auto s1 = std::make_shared<int>(1);
  auto s2 = std::make_shared<int>(2);
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  info.set_memory_bytes(1000);
  m.ObserveStore(s1, info);
  info.set_memory_bytes(24);
  m.ObserveStore(s2, info);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 1024)"));
  info.set_memory_bytes(100);
  m.RefreshStore(s1.get(), info);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 124)"));
  s2.reset();
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 100)"));
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="fwpkm"} 0)"));
}

// Warm stores count by what their warm form holds, from their tier moves.
TEST(Metrics, MemoryCountsWarmStoresByTheirMoves) {
  Metrics m;
  auto hot = std::make_shared<int>(1);
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  info.set_memory_bytes(1000);
  m.ObserveStore(hot, info);
  m.MoveStore("faast", adapt::v1::TIER_UNSPECIFIED, adapt::v1::TIER_COLD);
  m.MoveStore("faast", adapt::v1::TIER_COLD, adapt::v1::TIER_WARM, 30);
  m.MoveStore("faast", adapt::v1::TIER_UNSPECIFIED, adapt::v1::TIER_WARM, 7);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 1037)"));
  m.MoveStore("faast", adapt::v1::TIER_WARM, adapt::v1::TIER_HOT, 30);  // now counted hot
  m.MoveStore("faast", adapt::v1::TIER_HOT, adapt::v1::TIER_COLD);  // a hot store's move: no bytes
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 1007)"));
  m.MoveStore("faast", adapt::v1::TIER_WARM, adapt::v1::TIER_UNSPECIFIED, 7);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 1000)"));
}

TEST(Metrics, KindAggregatesExistOnlyWhileAStoreReportsThem) {
  Metrics m;
  auto owner = std::make_shared<int>(0);
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FWPKM);
  info.mutable_fwpkm()->set_slots(256);
  info.mutable_fwpkm()->set_slots_used(64);
  info.mutable_fwpkm()->set_addressing_entropy(2.5);
  m.ObserveStore(owner, info);
  std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, "adaptd_fwpkm_slots 256"));
  EXPECT_TRUE(Has(text, "adaptd_fwpkm_slots_used 64"));
  EXPECT_TRUE(Has(text, R"(adaptd_fwpkm_addressing_entropy_nats{aggregate="min"} 2.5)"));
  EXPECT_FALSE(Has(text, "adaptd_falcon_residual_norm{"));
  owner.reset();
  EXPECT_FALSE(Has(Scrape(m), "adaptd_fwpkm_slots "));
}

TEST(Metrics, EntriesOfDeadStoresDoNotPileUpWithoutScrapes) {
  Metrics m;
  adapt::v1::StoreInfo info;
  info.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  auto kept = std::make_shared<int>(0);
  m.ObserveStore(kept, info);
  // Many stores created and dropped, nobody scraping: the entries stay bounded.
  for (int i = 0; i < 10000; ++i) {
    auto churned = std::make_shared<int>(i);
    m.ObserveStore(churned, info);
  }
  EXPECT_LE(m.observed_stores(), 128u);
  // A deleted store's entry goes at once; the live one stays.
  auto deleted = std::make_shared<int>(1);
  m.ObserveStore(deleted, info);
  const size_t before = m.observed_stores();
  m.ForgetStore(deleted.get());
  EXPECT_EQ(m.observed_stores(), before - 1);
  info.set_memory_bytes(5);
  m.RefreshStore(kept.get(), info);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_memory_bytes{kind="faast"} 5)"));
  EXPECT_EQ(m.observed_stores(), 1u);  // the scrape swept the rest
}

TEST(Metrics, RequestsAreCountedByTransport) {
  Metrics m;
  m.RecordRequest("Predict", "OK", "grpc", 0.001);
  m.RecordRequest("Predict", "OK", "http", 0.002);
  m.RecordRequest("Predict", "OK", "http", 0.003);
  m.RecordRequest("GetStore", "NOT_FOUND", "http", 0.001);
  const std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, R"(adaptd_requests_total{code="OK",method="Predict",transport="grpc"} 1)"))
      << text;
  EXPECT_TRUE(Has(text, R"(adaptd_requests_total{code="OK",method="Predict",transport="http"} 2)"));
  EXPECT_TRUE(
      Has(text, R"(adaptd_requests_total{code="NOT_FOUND",method="GetStore",transport="http"} 1)"));
  EXPECT_TRUE(
      Has(text, R"(adaptd_request_duration_seconds_count{method="Predict",transport="http"} 2)"));
  EXPECT_TRUE(
      Has(text, R"(adaptd_request_duration_seconds_count{method="Predict",transport="grpc"} 1)"));
}

TEST(Metrics, TruncatedTextsAreCountedByEncoder) {
  Metrics m;
  m.RecordTruncatedTexts("minilm", 0);
  EXPECT_TRUE(Has(Scrape(m), R"(adaptd_encoder_truncated_texts_total{encoder="minilm"} 0)"));
  m.RecordTruncatedTexts("minilm", 3);
  m.RecordTruncatedTexts("minilm", 2);
  m.RecordTruncatedTexts("other", 1);
  const std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, R"(adaptd_encoder_truncated_texts_total{encoder="minilm"} 5)")) << text;
  EXPECT_TRUE(Has(text, R"(adaptd_encoder_truncated_texts_total{encoder="other"} 1)")) << text;
}

TEST(Metrics, QueueDepthIsSampledAtScrape) {
  Metrics m;
  size_t depth = 7;
  m.SetQueueDepthSource([&depth] { return depth; });
  EXPECT_TRUE(Has(Scrape(m), "adaptd_queue_depth 7"));
  depth = 0;
  EXPECT_TRUE(Has(Scrape(m), "adaptd_queue_depth 0"));
  m.SetQueueDepthSource(nullptr);
}

TEST(Metrics, FaastCompileFiguresAndFsyncHistogram) {
  Metrics m;
  adapt::v1::FaastStats stats;
  stats.set_effective_rank(12);
  stats.set_cutoff(1e-6);
  stats.set_condition_number(40);
  adapt::v1::CompileResponse compiled;
  *compiled.mutable_faast() = stats;
  m.RecordCompileGauges(adapt::v1::STORE_KIND_FAAST, compiled);
  m.RecordLogFsync(0.002);
  const std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, "adaptd_faast_effective_rank 12"));
  EXPECT_TRUE(Has(text, "adaptd_faast_condition_number 40"));
  EXPECT_TRUE(Has(text, "adaptd_log_fsync_duration_seconds_count 1"));
}

}  // namespace
}  // namespace adaptd
