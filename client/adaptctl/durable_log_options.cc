#include "client/adaptctl/durable_log_options.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/config/defaults.h"
#include "server/objstore/s3_object_store.h"

namespace adaptctl {

void AddDurableLogOptions(CLI::App& command, DurableLogOptions* options, bool bucket) {
  command
      .add_option("--etcd-endpoints", options->etcd_endpoints,
                  "etcd's client URLs, comma-separated, as the members' --etcd-endpoints")
      ->type_name("URL,...")
      ->required();
  command.add_option(
      "--etcd-prefix", options->etcd_prefix,
      absl::StrCat("The members' --etcd-prefix [default ", adaptd::defaults::kEtcdPrefix, "]"));
  command.add_option("--etcd-ca", options->etcd_ca, "CA file of etcd's certificates (https)")
      ->type_name("FILE");
  command.add_option("--etcd-cert", options->etcd_cert, "Client certificate for etcd")
      ->type_name("FILE");
  command.add_option("--etcd-key", options->etcd_key, "Key file of --etcd-cert")->type_name("FILE");
  if (!bucket) return;
  command
      .add_option("--snapshot-store", options->snapshot_store,
                  "The members' bucket and prefix, s3://BUCKET/PREFIX")
      ->required();
  command.add_option("--s3-endpoint", options->s3_endpoint,
                     "The S3 service, http(s)://HOST:PORT [default: AWS's regional endpoint]");
  command.add_option("--s3-region", options->s3_region,
                     absl::StrCat("S3 region [default ", adaptd::defaults::kS3Region, "]"));
  command
      .add_option("--s3-credentials-file", options->s3_credentials_file,
                  "AWS shared credentials file [default: AWS_ACCESS_KEY_ID, "
                  "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN from the environment]")
      ->type_name("FILE");
  command.add_option("--s3-ca", options->s3_ca, "CA bundle of an https --s3-endpoint")
      ->type_name("FILE");
}

std::string EtcdPrefix(const DurableLogOptions& options) {
  return options.etcd_prefix.empty() ? adaptd::defaults::kEtcdPrefix : options.etcd_prefix;
}

absl::StatusOr<std::unique_ptr<adaptd::etcd::EtcdClient>> ConnectEtcd(
    const DurableLogOptions& options) {
  adaptd::etcd::EtcdOptions etcd;
  for (absl::string_view url : absl::StrSplit(options.etcd_endpoints, ',', absl::SkipEmpty())) {
    etcd.endpoints.emplace_back(absl::StripAsciiWhitespace(url));
  }
  etcd.ca_file = options.etcd_ca;
  etcd.cert_file = options.etcd_cert;
  etcd.key_file = options.etcd_key;
  absl::StatusOr<std::unique_ptr<adaptd::etcd::EtcdClient>> client =
      adaptd::etcd::EtcdClient::Connect(std::move(etcd));
  if (!client.ok()) {
    return absl::Status(
        client.status().code(),
        absl::StrCat("etcd (--etcd-endpoints, --etcd-ca, --etcd-cert, --etcd-key): ",
                     client.status().message()));
  }
  return client;
}

absl::StatusOr<std::unique_ptr<adaptd::ObjectStore>> OpenBucket(const DurableLogOptions& options) {
  adaptd::S3Options s3;
  s3.url = options.snapshot_store;
  s3.endpoint = options.s3_endpoint;
  s3.region = options.s3_region.empty() ? adaptd::defaults::kS3Region : options.s3_region;
  s3.credentials_file = options.s3_credentials_file;
  s3.ca_file = options.s3_ca;
  absl::StatusOr<std::unique_ptr<adaptd::S3ObjectStore>> bucket =
      adaptd::S3ObjectStore::Open(std::move(s3));
  if (!bucket.ok()) {
    return absl::Status(
        bucket.status().code(),
        absl::StrCat("the bucket (--snapshot-store, --s3-*): ", bucket.status().message()));
  }
  return std::unique_ptr<adaptd::ObjectStore>(*std::move(bucket));
}

}  // namespace adaptctl
