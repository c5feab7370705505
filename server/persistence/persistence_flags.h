// adaptd's durability flags: declared on the CLI11 app by AddPersistenceFlags and applied over
// the config (flags win) by ApplyPersistenceFlags. docs/DURABILITY.md explains each.
#ifndef ADAPTD_SERVER_PERSISTENCE_PERSISTENCE_FLAGS_H_
#define ADAPTD_SERVER_PERSISTENCE_PERSISTENCE_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "adapt/v1/config.pb.h"

namespace adaptd {

struct PersistenceFlags {
  std::string fsync;  // "on", "off" or empty (config decides)
  std::optional<uint64_t> snapshot_log_bytes;
  std::optional<uint32_t> max_example_ids;
  std::optional<uint64_t> state_map_bytes;
  std::optional<uint64_t> memory_budget_bytes;
  // The durable log (docs/DURABLE_LOG.md): empty strings leave the config's values.
  std::string etcd_endpoints;  // comma-separated
  std::string etcd_prefix;
  std::string etcd_ca, etcd_cert, etcd_key;
  std::optional<uint32_t> etcd_lease_ttl;
  std::optional<uint64_t> etcd_quota_bytes;
  std::string snapshot_store;
  std::string s3_endpoint, s3_region, s3_credentials_file, s3_ca;
};

void AddPersistenceFlags(CLI::App& app, PersistenceFlags* flags);
void ApplyPersistenceFlags(const PersistenceFlags& flags, adapt::v1::ServerConfig* config);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_PERSISTENCE_FLAGS_H_
