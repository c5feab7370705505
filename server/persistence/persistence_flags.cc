#include "server/persistence/persistence_flags.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/config/defaults.h"

namespace adaptd {
namespace {

void AddDurableLogFlags(CLI::App& app, PersistenceFlags* flags) {
  app.add_option("--etcd-endpoints", flags->etcd_endpoints,
                 "Keep the durable log in etcd at these client URLs (comma-separated, "
                 "http:// or https://), states and large payloads in --snapshot-store, instead "
                 "of the data directory's log (docs/DURABLE_LOG.md) [default: off]");
  app.add_option("--etcd-prefix", flags->etcd_prefix,
                 absl::StrCat("The prefix of every key this deployment writes in etcd [default ",
                              defaults::kEtcdPrefix, "]"));
  app.add_option("--etcd-ca", flags->etcd_ca, "The CA file of etcd's certificates (https)");
  app.add_option("--etcd-cert", flags->etcd_cert,
                 "This server's certificate file, when etcd asks for one");
  app.add_option("--etcd-key", flags->etcd_key, "The key file of --etcd-cert");
  app.add_option("--etcd-lease-ttl", flags->etcd_lease_ttl,
                 absl::StrCat("Seconds of the lease this server holds its claim in etcd under "
                              "[default ",
                              defaults::kEtcdLeaseTtlSeconds, "]"))
      ->check(CLI::Range(1, 3600));
  app.add_option("--etcd-quota-bytes", flags->etcd_quota_bytes,
                 absl::StrCat("etcd's --quota-backend-bytes as its members run with it: past 80% "
                              "of it writes are refused and snapshots trim the log [default ",
                              defaults::kEtcdQuotaBytes, "]"))
      ->check(CLI::PositiveNumber);
  app.add_option("--snapshot-store", flags->snapshot_store,
                 "Object storage for states and large log payloads, s3://BUCKET/PREFIX "
                 "(required with --etcd-endpoints)");
  app.add_option("--s3-endpoint", flags->s3_endpoint,
                 "The S3 service, http(s)://HOST:PORT [default: AWS's regional endpoint]");
  app.add_option("--s3-region", flags->s3_region,
                 absl::StrCat("The S3 region [default ", defaults::kS3Region, "]"));
  app.add_option("--s3-credentials-file", flags->s3_credentials_file,
                 "An AWS shared credentials file [default: the environment's AWS_ACCESS_KEY_ID, "
                 "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN]");
  app.add_option("--s3-ca", flags->s3_ca, "The CA bundle for an https S3 endpoint");
}

void ApplyDurableLogFlags(const PersistenceFlags& flags, adapt::v1::ServerConfig* config) {
  const bool any = !flags.etcd_endpoints.empty() || !flags.etcd_prefix.empty() ||
                   !flags.etcd_ca.empty() || !flags.etcd_cert.empty() || !flags.etcd_key.empty() ||
                   flags.etcd_lease_ttl.has_value() || flags.etcd_quota_bytes.has_value() ||
                   !flags.snapshot_store.empty() || !flags.s3_endpoint.empty() ||
                   !flags.s3_region.empty() || !flags.s3_credentials_file.empty() ||
                   !flags.s3_ca.empty();
  if (!any) return;
  adapt::v1::DurableLogConfig* log = config->mutable_durable_log();
  if (!flags.etcd_endpoints.empty()) {
    log->clear_etcd_endpoints();
    for (absl::string_view url : absl::StrSplit(flags.etcd_endpoints, ',', absl::SkipEmpty())) {
      log->add_etcd_endpoints(std::string(absl::StripAsciiWhitespace(url)));
    }
  }
  const auto set = [](const std::string& value, std::string* field) {
    if (!value.empty()) *field = value;
  };
  set(flags.etcd_prefix, log->mutable_etcd_prefix());
  set(flags.etcd_ca, log->mutable_etcd_ca_file());
  set(flags.etcd_cert, log->mutable_etcd_cert_file());
  set(flags.etcd_key, log->mutable_etcd_key_file());
  if (flags.etcd_lease_ttl.has_value()) log->set_lease_ttl_seconds(*flags.etcd_lease_ttl);
  if (flags.etcd_quota_bytes.has_value()) log->set_etcd_quota_bytes(*flags.etcd_quota_bytes);
  set(flags.snapshot_store, log->mutable_snapshot_store());
  set(flags.s3_endpoint, log->mutable_s3_endpoint());
  set(flags.s3_region, log->mutable_s3_region());
  set(flags.s3_credentials_file, log->mutable_s3_credentials_file());
  set(flags.s3_ca, log->mutable_s3_ca_file());
}

}  // namespace

void AddPersistenceFlags(CLI::App& app, PersistenceFlags* flags) {
  app.add_option("--fsync", flags->fsync,
                 absl::StrCat("on: acknowledge writes once their log record is fsynced; off: skip "
                              "fsync (UNSAFE: a power loss may lose acknowledged writes; "
                              "benchmarks only) [default ",
                              defaults::kLogFsync ? "on" : "off", "]"))
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--snapshot-log-bytes", flags->snapshot_log_bytes,
                 absl::StrCat("Checkpoint (write every store changed since its last checkpoint "
                              "to the state database, drop the log it covers) once the log "
                              "segment reaches this size [default ",
                              defaults::kSnapshotLogBytes, "]"));
  app.add_option("--max-example-ids", flags->max_example_ids,
                 absl::StrCat("Example ids each store remembers for idempotent resends; 0 turns "
                              "the check off [default ",
                              defaults::kMaxExampleIds, "]"));
  app.add_option("--state-map-bytes", flags->state_map_bytes,
                 absl::StrCat("The largest the state database may grow, for its states "
                              "(data_dir/state) and its catalog (data_dir/state/catalog) each: "
                              "address space, not disk [default ",
                              defaults::kStateMapBytes, "]"))
      ->check(CLI::PositiveNumber);
  AddDurableLogFlags(app, flags);
  app.add_option("--memory-budget-bytes", flags->memory_budget_bytes,
                 absl::StrCat("The memory loaded stores may hold; past it the least recently "
                              "used stores are evicted to the state database and loaded again "
                              "on their next call; 0 is unlimited [default ",
                              defaults::kMemoryBudgetBytes, "]"));
}

void ApplyPersistenceFlags(const PersistenceFlags& flags, adapt::v1::ServerConfig* config) {
  if (!flags.fsync.empty()) config->set_log_fsync(flags.fsync == "on");
  if (flags.snapshot_log_bytes.has_value() && *flags.snapshot_log_bytes > 0) {
    config->set_snapshot_log_bytes(*flags.snapshot_log_bytes);
  }
  if (flags.max_example_ids.has_value()) config->set_max_example_ids(*flags.max_example_ids);
  if (flags.state_map_bytes.has_value()) config->set_state_map_bytes(*flags.state_map_bytes);
  if (flags.memory_budget_bytes.has_value()) {
    config->set_memory_budget_bytes(*flags.memory_budget_bytes);
  }
  ApplyDurableLogFlags(flags, config);
}

}  // namespace adaptd
