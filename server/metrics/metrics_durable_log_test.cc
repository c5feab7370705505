// The durable log's series: present at zero on every server, moved by the calls
// EtcdDurability's hooks make, and the snapshot lag sampled from its source until cleared.
#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/metrics.h"

namespace adaptd {
namespace {

std::string ScrapeText(const Metrics& m) {
  return prometheus::TextSerializer().Serialize(m.collectable()->Collect());
}

TEST(DurableLogMetrics, EverySeriesExistsAtZeroWithoutTheDurableLog) {
  Metrics m;
  const std::string text = ScrapeText(m);
  for (const char* line : {
           "adaptd_durable_log_commit_duration_seconds_count 0",
           "adaptd_durable_log_committed_records_total 0",
           R"(adaptd_durable_log_objects_total{result="ok",what="payload"} 0)",
           R"(adaptd_durable_log_objects_total{result="error",what="readout"} 0)",
           R"(adaptd_durable_log_object_bytes_total{what="state"} 0)",
           "adaptd_durable_log_restores_total 0",
           "adaptd_durable_log_restore_duration_seconds_count 0",
           "adaptd_durable_log_fence_failures_total 0",
           R"(adaptd_durable_log_errors_total{service="etcd"} 0)",
           R"(adaptd_durable_log_errors_total{service="s3"} 0)",
           "adaptd_durable_log_snapshot_lag_seconds 0",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(DurableLogMetrics, TheHooksCallsMoveTheirSeries) {
  Metrics m;
  m.RecordDurableLogCommit(0.004, 3);
  m.RecordDurableLogCommit(0.2, 2);
  m.RecordDurableLogObject("payload", 70000, true);
  m.RecordDurableLogObject("state", 1000, true);
  m.RecordDurableLogObject("state", 500, false);  // counted, its bytes not
  m.RecordDurableLogRestore(1.5);
  m.RecordDurableLogFenceFailure();
  m.RecordDurableLogError("etcd");
  m.RecordDurableLogError("etcd");
  m.RecordDurableLogError("s3");
  const std::string text = ScrapeText(m);
  for (const char* line : {
           "adaptd_durable_log_commit_duration_seconds_count 2",
           R"(adaptd_durable_log_commit_duration_seconds_bucket{le="0.005"} 1)",
           R"(adaptd_durable_log_commit_duration_seconds_bucket{le="0.25"} 2)",
           "adaptd_durable_log_committed_records_total 5",
           R"(adaptd_durable_log_objects_total{result="ok",what="payload"} 1)",
           R"(adaptd_durable_log_objects_total{result="ok",what="state"} 1)",
           R"(adaptd_durable_log_objects_total{result="error",what="state"} 1)",
           R"(adaptd_durable_log_objects_total{result="ok",what="readout"} 0)",
           R"(adaptd_durable_log_object_bytes_total{what="payload"} 70000)",
           R"(adaptd_durable_log_object_bytes_total{what="state"} 1000)",
           "adaptd_durable_log_restores_total 1",
           "adaptd_durable_log_restore_duration_seconds_sum 1.5",
           "adaptd_durable_log_fence_failures_total 1",
           R"(adaptd_durable_log_errors_total{service="etcd"} 2)",
           R"(adaptd_durable_log_errors_total{service="s3"} 1)",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

TEST(DurableLogMetrics, SnapshotLagIsSampledUntilItsOwnerClearsIt) {
  Metrics m;
  int owner = 0, other = 0;
  double lag = 42;
  int calls = 0;
  m.SetSnapshotLagSource(&owner, [&] {
    ++calls;
    return lag;
  });
  EXPECT_NE(ScrapeText(m).find("adaptd_durable_log_snapshot_lag_seconds 42"), std::string::npos);
  lag = 3;
  EXPECT_NE(ScrapeText(m).find("adaptd_durable_log_snapshot_lag_seconds 3"), std::string::npos);
  m.ClearSnapshotLagSource(&other);  // not its source: still sampled
  EXPECT_NE(ScrapeText(m).find("adaptd_durable_log_snapshot_lag_seconds 3"), std::string::npos);
  EXPECT_EQ(calls, 3);
  m.ClearSnapshotLagSource(&owner);
  EXPECT_NE(ScrapeText(m).find("adaptd_durable_log_snapshot_lag_seconds 0"), std::string::npos);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace adaptd
