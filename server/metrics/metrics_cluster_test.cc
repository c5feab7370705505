// The cluster on etcd's series: present at zero on every server, moved by the calls
// EtcdCluster's hooks make, and the gauges sampled from the member's source until cleared.
#include <string>

#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/metrics.h"

namespace adaptd {
namespace {

std::string ScrapeText(const Metrics& m) {
  return prometheus::TextSerializer().Serialize(m.collectable()->Collect());
}

void ExpectLines(const std::string& text, std::initializer_list<const char*> lines) {
  for (const char* line : lines) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
}

TEST(ClusterMetrics, EverySeriesExistsAtZeroOutsideACluster) {
  Metrics m;
  ExpectLines(ScrapeText(m), {
                                 R"(adaptd_cluster_shards{state="held"} 0)",
                                 R"(adaptd_cluster_shards{state="adopted"} 0)",
                                 R"(adaptd_cluster_claims_total{reason="new"} 0)",
                                 R"(adaptd_cluster_claims_total{reason="restart"} 0)",
                                 R"(adaptd_cluster_claims_total{reason="failover"} 0)",
                                 R"(adaptd_cluster_claims_total{reason="move"} 0)",
                                 R"(adaptd_cluster_releases_total{reason="move"} 0)",
                                 R"(adaptd_cluster_releases_total{reason="drain"} 0)",
                                 R"(adaptd_cluster_releases_total{reason="lost"} 0)",
                                 "adaptd_cluster_restores_in_flight 0",
                                 "adaptd_cluster_restore_seconds_count 0",
                                 "adaptd_cluster_lease_age_seconds 0",
                                 "adaptd_cluster_lease_ttl_seconds 0",
                                 "adaptd_cluster_shards_without_holder 0",
                             });
}

TEST(ClusterMetrics, ClaimsReleasesAndRestoresCountByReason) {
  Metrics m;
  for (int i = 0; i < 3; ++i) m.RecordClusterClaim("new");
  m.RecordClusterClaim("failover");
  m.RecordClusterRelease("drain");
  m.RecordClusterRelease("drain");
  m.RecordClusterRelease("lost");
  m.RecordClusterRestore(0.02);
  m.RecordClusterRestore(3);
  ExpectLines(ScrapeText(m), {
                                 R"(adaptd_cluster_claims_total{reason="new"} 3)",
                                 R"(adaptd_cluster_claims_total{reason="failover"} 1)",
                                 R"(adaptd_cluster_claims_total{reason="move"} 0)",
                                 R"(adaptd_cluster_releases_total{reason="drain"} 2)",
                                 R"(adaptd_cluster_releases_total{reason="lost"} 1)",
                                 R"(adaptd_cluster_releases_total{reason="move"} 0)",
                                 "adaptd_cluster_restore_seconds_count 2",
                                 R"(adaptd_cluster_restore_seconds_bucket{le="0.025"} 1)",
                                 R"(adaptd_cluster_restore_seconds_bucket{le="5"} 2)",
                                 "adaptd_cluster_restore_seconds_sum 3.02",
                             });
}

TEST(ClusterMetrics, TheGaugesAreSampledUntilTheirOwnerClearsThem) {
  Metrics m;
  int owner = 0, other = 0;
  Metrics::ClusterSample sample{.shards_held = 7,
                                .shards_adopted = 5,
                                .restores_in_flight = 12,
                                .lease_age_seconds = 1.5,
                                .lease_ttl_seconds = 10,
                                .shards_without_holder = 3};
  int calls = 0;
  m.SetClusterSource(&owner, [&] {
    ++calls;
    return sample;
  });
  ExpectLines(ScrapeText(m), {
                                 R"(adaptd_cluster_shards{state="held"} 7)",
                                 R"(adaptd_cluster_shards{state="adopted"} 5)",
                                 "adaptd_cluster_restores_in_flight 12",
                                 "adaptd_cluster_lease_age_seconds 1.5",
                                 "adaptd_cluster_lease_ttl_seconds 10",
                                 "adaptd_cluster_shards_without_holder 3",
                             });
  sample.shards_adopted = 7;
  sample.restores_in_flight = 0;
  m.ClearClusterSource(&other);  // not its source: still sampled
  ExpectLines(ScrapeText(m), {
                                 R"(adaptd_cluster_shards{state="adopted"} 7)",
                                 "adaptd_cluster_restores_in_flight 0",
                             });
  EXPECT_EQ(calls, 2);
  m.ClearClusterSource(&owner);
  ExpectLines(ScrapeText(m), {
                                 R"(adaptd_cluster_shards{state="held"} 0)",
                                 "adaptd_cluster_lease_age_seconds 0",
                                 "adaptd_cluster_lease_ttl_seconds 0",
                                 "adaptd_cluster_shards_without_holder 0",
                             });
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace adaptd
