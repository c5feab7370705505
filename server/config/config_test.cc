#include "server/config/config.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace adaptd {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigTest, DefaultIsValid) {
  const auto config = DefaultConfig();
  EXPECT_TRUE(ValidateConfig(config).ok());
  EXPECT_EQ(config.listen(), "127.0.0.1:50051");
  EXPECT_EQ(config.metrics_listen(), "127.0.0.1:9464");
  EXPECT_EQ(config.http_listen(), "");  // no HTTP listener unless asked for
  EXPECT_EQ(config.data_dir(), "./adaptd-data");
  EXPECT_EQ(config.encoders(0).name(), "identity");
}

TEST(ConfigTest, ParsesJsonAndTextAndMergesOverDefault) {
  auto json = ParseConfigFile(WriteTemp("c.json", R"({"listen": "0.0.0.0:7000",
      "encoders": [{"name": "e", "type": "identity", "dim": 4}]})"));
  ASSERT_TRUE(json.ok()) << json.status();
  auto merged = MergeConfig(DefaultConfig(), *json);
  EXPECT_EQ(merged.listen(), "0.0.0.0:7000");
  EXPECT_EQ(merged.data_dir(), "./adaptd-data");
  ASSERT_EQ(merged.encoders_size(), 1);
  EXPECT_EQ(merged.encoders(0).dim(), 4u);

  auto text = ParseConfigFile(WriteTemp("c.textproto", "data_dir: \"/tmp/x\"\nmax_dim: 16\n"));
  ASSERT_TRUE(text.ok()) << text.status();
  merged = MergeConfig(DefaultConfig(), *text);
  EXPECT_EQ(merged.data_dir(), "/tmp/x");
  EXPECT_EQ(merged.max_dim(), 16u);
  EXPECT_EQ(merged.encoders_size(), 3);
}

TEST(ConfigTest, ReportsParseErrorsWithPosition) {
  auto bad = ParseConfigFile(WriteTemp("bad.textproto", "listen: \"a:1\"\nno_such_field: 3\n"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status();
  EXPECT_FALSE(ParseConfigFile(WriteTemp("bad.json", "{\"listen\": 5,")).ok());
  EXPECT_EQ(ParseConfigFile("/nonexistent/adaptd.json").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ConfigTest, ValidationNamesTheField) {
  auto config = DefaultConfig();
  config.set_listen("nonsense");
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 7), "listen:");
  config = DefaultConfig();
  config.set_metrics_listen("h:99999");
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 15), "metrics_listen:");
  config = DefaultConfig();
  config.set_http_listen("localhost");
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 12), "http_listen:");
  config.set_http_listen("127.0.0.1:0");
  EXPECT_TRUE(ValidateConfig(config).ok());
  config = DefaultConfig();
  config.set_max_message_bytes(10);
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 18), "max_message_bytes:");
  config = DefaultConfig();
  config.set_max_call_bytes(4095);
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 15), "max_call_bytes:");
  config.set_max_call_bytes(4096);
  EXPECT_TRUE(ValidateConfig(config).ok());
  config = DefaultConfig();
  config.set_backend_threads(1025);
  EXPECT_EQ(ValidateConfig(config).message().substr(0, 16), "backend_threads:");
  config = DefaultConfig();
  config.clear_encoders();
  EXPECT_FALSE(ValidateConfig(config).ok());
}

// The static member list's settings, removed: refused naming their replacement, in a file too.
TEST(ConfigTest, TheStaticMemberListAndHandOffIntervalAreRefusedNamingTheirReplacement) {
  auto config = DefaultConfig();
  EXPECT_FALSE(config.has_cluster());  // a single server
  auto file = ParseConfigFile(WriteTemp("cluster.json", R"({"cluster": {"self": "b",
      "members": [{"name": "a", "address": "10.0.0.1:50051"},
                  {"name": "b", "address": "10.0.0.2:50051"}]}})"));
  ASSERT_TRUE(file.ok()) << file.status();
  config = MergeConfig(config, *file);
  EXPECT_EQ(ValidateConfig(config).message(), RemovedClusterMembers("cluster.members"));
  EXPECT_NE(RemovedClusterMembers("x").find("--advertise-address"), std::string::npos);
  EXPECT_NE(RemovedClusterMembers("x").find("adaptctl cluster migrate"), std::string::npos);
  config.mutable_cluster()->clear_members();
  config.mutable_cluster()->set_handoff_interval_ms(500);
  EXPECT_EQ(ValidateConfig(config).message(),
            RemovedHandoffInterval("cluster.handoff_interval_ms"));
  EXPECT_NE(RemovedHandoffInterval("x").find("--usage-interval-ms"), std::string::npos);
}

// A config file's cluster replaces the one before it, whole.
TEST(ConfigTest, AClusterReplacesTheOneBeforeItWhole) {
  adapt::v1::ServerConfig base = DefaultConfig();
  base.mutable_cluster()->set_self("a");
  base.mutable_cluster()->set_settle_seconds(30);
  adapt::v1::ServerConfig over;
  over.mutable_cluster()->set_self("b");
  const adapt::v1::ServerConfig merged = MergeConfig(base, over);
  EXPECT_EQ(merged.cluster().self(), "b");
  EXPECT_EQ(merged.cluster().settle_seconds(), 0u);
}

// A cluster on etcd: a `cluster` over a durable log in etcd.
TEST(ConfigTest, AClusterOnEtcdNeedsTheDurableLogAndAnAddressTheOthersReach) {
  auto config = DefaultConfig();
  config.mutable_cluster()->set_self("m0");
  EXPECT_FALSE(IsEtcdCluster(config));
  EXPECT_TRUE(absl::StartsWith(ValidateConfig(config).message(),
                               "cluster: a cluster needs a durable log in etcd"))
      << ValidateConfig(config);
  config.mutable_durable_log()->add_etcd_endpoints("http://127.0.0.1:2379");
  config.mutable_durable_log()->set_snapshot_store("s3://bucket/prefix");
  EXPECT_TRUE(IsEtcdCluster(config));
  EXPECT_TRUE(absl::StartsWith(ValidateConfig(config).message(),
                               "cluster.advertise_address: "
                               "required in a cluster"))
      << ValidateConfig(config);
  config.mutable_cluster()->set_advertise_address("m0.adaptd:50051");
  EXPECT_TRUE(ValidateConfig(config).ok()) << ValidateConfig(config);
  absl::StatusOr<cluster::Membership> self = ClusterMembership(config);
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_EQ(self->self().address, "m0.adaptd:50051");
  EXPECT_EQ(self->members().size(), 1u);

  auto bad = config;
  bad.mutable_cluster()->set_advertise_address("0.0.0.0:50051");
  EXPECT_TRUE(absl::StartsWith(ValidateConfig(bad).message(),
                               "cluster.advertise_address: '0.0.0.0:50051' is not an address"))
      << ValidateConfig(bad);
  bad = config;
  bad.mutable_cluster()->set_advertise_address("m0.adaptd");
  EXPECT_TRUE(absl::StartsWith(ValidateConfig(bad).message(), "cluster.advertise_address: "))
      << ValidateConfig(bad);
  bad = config;
  bad.mutable_cluster()->set_self("M 0");
  EXPECT_TRUE(absl::StartsWith(ValidateConfig(bad).message(), "cluster.self: "))
      << ValidateConfig(bad);
  bad = config;
  bad.mutable_cluster()->set_restart_grace_seconds(3601);
  EXPECT_EQ(ValidateConfig(bad).message(), "cluster.restart_grace_seconds: at most 3600, got 3601");
  bad = config;
  bad.mutable_cluster()->set_settle_seconds(4000);
  EXPECT_EQ(ValidateConfig(bad).message(), "cluster.settle_seconds: at most 3600, got 4000");
  bad = config;
  bad.mutable_cluster()->set_usage_interval_ms(3600001);
  EXPECT_EQ(ValidateConfig(bad).message(),
            "cluster.usage_interval_ms: at most 3600000 (an hour), got 3600001");
}

}  // namespace
}  // namespace adaptd
