// EtcdDurability as the server's configuration says (ServerConfig.durable_log): the etcd
// client, the S3 object store, and the options, each with its defaults.
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/durability/etcd_durability.h"
#include "server/objstore/s3_object_store.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> ConnectConfiguredEtcd(
    const adapt::v1::DurableLogConfig& log) {
  etcd::EtcdOptions etcd_options;
  etcd_options.endpoints.assign(log.etcd_endpoints().begin(), log.etcd_endpoints().end());
  etcd_options.ca_file = log.etcd_ca_file();
  etcd_options.cert_file = log.etcd_cert_file();
  etcd_options.key_file = log.etcd_key_file();
  absl::StatusOr<std::unique_ptr<etcd::EtcdClient>> client =
      etcd::EtcdClient::Connect(std::move(etcd_options));
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("durable_log (etcd): ", client.status().message()));
  }
  return client;
}

absl::StatusOr<std::unique_ptr<EtcdDurability>> EtcdDurability::OpenConfigured(
    const adapt::v1::ServerConfig& config, kernels::Backend* backend,
    std::vector<RecoveredStore>* recovered, Options::Hooks hooks,
    std::shared_ptr<const ShardFences> shards) {
  const adapt::v1::DurableLogConfig& log = config.durable_log();
  ASSIGN_OR_RETURN(std::unique_ptr<etcd::EtcdClient> client, ConnectConfiguredEtcd(log));
  S3Options s3;
  s3.url = log.snapshot_store();
  s3.endpoint = log.s3_endpoint();
  s3.region = log.s3_region().empty() ? defaults::kS3Region : log.s3_region();
  s3.credentials_file = log.s3_credentials_file();
  s3.ca_file = log.s3_ca_file();
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = S3ObjectStore::Open(std::move(s3));
  if (!objects.ok()) {
    return absl::Status(objects.status().code(),
                        absl::StrCat("durable_log.snapshot_store: ", objects.status().message()));
  }
  Options options;
  options.prefix = log.etcd_prefix().empty() ? defaults::kEtcdPrefix : log.etcd_prefix();
  options.lease_ttl = absl::Seconds(log.lease_ttl_seconds() > 0 ? log.lease_ttl_seconds()
                                                                : defaults::kEtcdLeaseTtlSeconds);
  // A restarted server waits out its previous lease; anything longer is another server.
  options.claim_wait = options.lease_ttl * 3;
  options.etcd_quota_bytes = static_cast<int64_t>(
      log.etcd_quota_bytes() > 0 ? log.etcd_quota_bytes() : defaults::kEtcdQuotaBytes);
  char host[256] = {};
  (void)gethostname(host, sizeof(host) - 1);
  options.server_name = absl::StrCat(host, " pid ", getpid(), " listening on ", config.listen());
  if (config.has_max_example_ids()) options.max_ids_per_store = config.max_example_ids();
  // The data directory is only a cache of the stored states.
  if (!config.data_dir().empty()) options.cache_dir = config.data_dir() + "/cache";
  options.hooks = std::move(hooks);
  if (shards != nullptr) {
    // The same limits as the engine's, from the same config.
    ASSIGN_OR_RETURN(options.store_limits, TenantQuotas::Create(config));
  }
  options.shards = std::move(shards);
  return Open(std::move(client), std::shared_ptr<ObjectStore>(*std::move(objects)), backend,
              recovered, std::move(options));
}

}  // namespace adaptd
