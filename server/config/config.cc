#include "server/config/config.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/device_name.h"
#include "server/base/status_macros.h"
#include "server/config/defaults.h"

namespace adaptd {
namespace {

constexpr uint64_t kMinMessageBytes = 4096;
constexpr uint64_t kMaxMessageBytes = (1ull << 31) - 1;
constexpr uint32_t kMaxDimLimit = 65536;

absl::Status ValidateDurableLog(const adapt::v1::DurableLogConfig& log) {
  if (log.etcd_endpoints().empty()) {
    return absl::InvalidArgumentError(
        "durable_log.etcd_endpoints: at least one etcd client URL is required (--etcd-endpoints)");
  }
  for (const std::string& url : log.etcd_endpoints()) {
    if (url.empty() || absl::StrContains(url, ' ')) {
      return absl::InvalidArgumentError(
          absl::StrCat("durable_log.etcd_endpoints: '", url, "' is not a URL"));
    }
  }
  if (!absl::StartsWith(log.snapshot_store(), "s3://") || log.snapshot_store().size() <= 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "durable_log.snapshot_store: required with etcd, as s3://BUCKET/PREFIX (--snapshot-store)",
        log.snapshot_store().empty() ? "" : absl::StrCat(", got '", log.snapshot_store(), "'")));
  }
  if (log.lease_ttl_seconds() > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("durable_log.lease_ttl_seconds: at most 3600, got ", log.lease_ttl_seconds()));
  }
  if (log.etcd_cert_file().empty() != log.etcd_key_file().empty()) {
    return absl::InvalidArgumentError(
        "durable_log.etcd_cert_file: a certificate and its key go together (--etcd-cert and "
        "--etcd-key)");
  }
  return absl::OkStatus();
}

// Collects the first text-format parse error with its position.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error.empty())
      error = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ", message);
  }
  std::string error;
};

absl::Status ValidateAddress(const std::string& field, const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected HOST:PORT, got \"", address, "\""));
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": port must be a number from 0 to 65535, got \"", address, "\""));
  }
  return absl::OkStatus();
}

absl::Status ValidateEtcdCluster(const adapt::v1::ClusterConfig& cluster) {
  const std::string& address = cluster.advertise_address();
  const absl::string_view host = absl::string_view(address).substr(0, address.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.advertise_address: '", address,
                     "' is not an address the other members can reach: give this member's "
                     "name or IP and its gRPC port (--advertise-address)"));
  }
  if (cluster.restart_grace_seconds() > 3600) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.restart_grace_seconds: at most 3600, got ", cluster.restart_grace_seconds()));
  }
  if (cluster.settle_seconds() > 3600) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.settle_seconds: at most 3600, got ", cluster.settle_seconds()));
  }
  if (cluster.usage_interval_ms() > 3600000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.usage_interval_ms: at most 3600000 (an hour), got ", cluster.usage_interval_ms()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RemovedClusterMembers(absl::string_view field) {
  return absl::StrCat(
      field,
      ": removed with the static member list; a cluster's members register in etcd: give "
      "--etcd-endpoints, --snapshot-store, --cluster-self and --advertise-address "
      "(docs/CLUSTER_ETCD.md), and load a static cluster's data directories with `adaptctl "
      "cluster migrate` (docs/CLUSTER.md)");
}

std::string RemovedHandoffInterval(absl::string_view field) {
  return absl::StrCat(field,
                      ": removed with the static cluster's hand-off; the members exchange "
                      "tenants' usage every cluster.usage_interval_ms (--usage-interval-ms)");
}

adapt::v1::ServerConfig DefaultConfig() {
  adapt::v1::ServerConfig config;
  config.set_listen(defaults::kListen);
  config.set_metrics_listen(defaults::kMetricsListen);
  config.set_data_dir(defaults::kDataDir);
  config.set_max_message_bytes(defaults::kMaxMessageBytes);
  config.set_max_call_bytes(defaults::kMaxCallBytes);
  config.set_worker_threads(defaults::kWorkerThreads);
  config.set_compile_threads(defaults::kCompileThreads);
  config.set_max_dim(defaults::kMaxDim);
  auto* identity = config.add_encoders();
  identity->set_name("identity");
  identity->set_type("identity");
  auto* normalized = config.add_encoders();
  normalized->set_name("identity_l2");
  normalized->set_type("identity");
  normalized->set_normalize(true);
  // Text: hashed word and character n-grams. 1024 buckets keep a faast store's d×d float64
  // statistics at 8 MiB; a config may ask for more (docs/ENCODERS.md).
  auto* text = config.add_encoders();
  text->set_name("text");
  text->set_type("hashed_ngrams");
  text->set_dim(defaults::kTextEncoderDim);
  return config;
}

absl::StatusOr<adapt::v1::ServerConfig> ParseConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("config file ", path, ": cannot be read"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  adapt::v1::ServerConfig config;
  const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(text);
  if (absl::EndsWith(path, ".json") || absl::StartsWith(trimmed, "{")) {
    const auto status = google::protobuf::util::JsonStringToMessage(text, &config);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", path, " (JSON): ", std::string(status.message())));
    }
    return config;
  }
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, " (text format): ", errors.error));
  }
  return config;
}

adapt::v1::ServerConfig MergeConfig(const adapt::v1::ServerConfig& base,
                                    const adapt::v1::ServerConfig& override) {
  adapt::v1::ServerConfig merged = base;
  if (override.encoders_size() > 0) merged.clear_encoders();
  if (override.has_cluster()) merged.clear_cluster();  // the file's cluster replaces, whole
  merged.MergeFrom(override);
  return merged;
}

absl::Status ValidateConfig(const adapt::v1::ServerConfig& config) {
  if (auto s = ValidateAddress("listen", config.listen()); !s.ok()) return s;
  if (!config.metrics_listen().empty()) {
    if (auto s = ValidateAddress("metrics_listen", config.metrics_listen()); !s.ok()) return s;
  }
  if (!config.http_listen().empty()) {
    if (auto s = ValidateAddress("http_listen", config.http_listen()); !s.ok()) return s;
  }
  if (config.data_dir().empty()) return absl::InvalidArgumentError("data_dir: required");
  if (config.max_message_bytes() < kMinMessageBytes ||
      config.max_message_bytes() > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes: must be in [",
                                                   kMinMessageBytes, ", ", kMaxMessageBytes,
                                                   "], got ", config.max_message_bytes()));
  }
  if (config.max_call_bytes() < kMinMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_call_bytes: must be at least ", kMinMessageBytes, ", got ", config.max_call_bytes()));
  }
  if (config.max_dim() == 0 || config.max_dim() > kMaxDimLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_dim: must be in [1, ", kMaxDimLimit, "], got ", config.max_dim()));
  }
  if (config.worker_threads() > 1024 || config.compile_threads() > 256) {
    return absl::InvalidArgumentError(
        "worker_threads/compile_threads: at most 1024 workers and 256 compile threads");
  }
  if (config.backend_threads() > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("backend_threads: at most 1024, got ", config.backend_threads()));
  }
  if (config.metrics_top_tenants() > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics_top_tenants: at most 1000, got ", config.metrics_top_tenants()));
  }
  if (auto device = kernels::ParseDeviceName(config.device()); !device.ok()) {
    return device.status();
  }
  if (config.encoders().empty()) {
    return absl::InvalidArgumentError("encoders: at least one encoder is required");
  }
  if (config.has_durable_log()) RETURN_IF_ERROR(ValidateDurableLog(config.durable_log()));
  if (config.has_cluster()) {
    if (!config.cluster().members().empty()) {
      return absl::InvalidArgumentError(RemovedClusterMembers("cluster.members"));
    }
    if (config.cluster().handoff_interval_ms() != 0) {
      return absl::InvalidArgumentError(RemovedHandoffInterval("cluster.handoff_interval_ms"));
    }
    if (absl::StatusOr<cluster::Membership> m = ClusterMembership(config); !m.ok()) {
      return m.status();
    }
    if (config.tokens_size() > 0 && config.cluster().member_token_file().empty()) {
      return absl::InvalidArgumentError(
          "cluster.member_token_file: required when tokens are configured (the members present "
          "it in their own calls to each other; docs/CLUSTER_ETCD.md)");
    }
    return ValidateEtcdCluster(config.cluster());
  }
  return absl::OkStatus();
}

bool IsEtcdCluster(const adapt::v1::ServerConfig& config) {
  return config.has_cluster() && config.has_durable_log();
}

absl::StatusOr<cluster::Membership> ClusterMembership(const adapt::v1::ServerConfig& config) {
  if (!config.has_durable_log()) {
    return absl::InvalidArgumentError(
        "cluster: a cluster needs a durable log in etcd (--etcd-endpoints, --snapshot-store) "
        "and cluster.advertise_address (--advertise-address): docs/CLUSTER_ETCD.md");
  }
  if (config.cluster().advertise_address().empty()) {
    return absl::InvalidArgumentError(
        "cluster.advertise_address: required in a cluster: the HOST:PORT at which clients and "
        "the other members reach this member (--advertise-address)");
  }
  absl::StatusOr<cluster::Membership> self = cluster::Membership::Create(
      config.cluster().self(), {{config.cluster().self(), config.cluster().advertise_address()}});
  if (self.ok()) return self;
  // The checks name the member list's fields; here they are these two.
  return absl::InvalidArgumentError(absl::StrReplaceAll(
      self.status().message(), {{"cluster.members[0].address", "cluster.advertise_address"},
                                {"cluster.members[0].name", "cluster.self"}}));
}

}  // namespace adaptd
