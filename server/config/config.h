// The server configuration: the embedded default, config files (JSON or protobuf text format
// of adapt.v1.ServerConfig), and validation. Pure functions; thread-safe.
#ifndef ADAPTD_SERVER_CONFIG_CONFIG_H_
#define ADAPTD_SERVER_CONFIG_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/config.pb.h"
#include "server/cluster/membership.h"

namespace adaptd {

// The addresses, data directory, sizes and threads of server/config/defaults.h, and the
// encoders `identity` (vectors of any dimension), `identity_l2` (the same, L2-normalised) and
// `text` (hashed_ngrams, defaults::kTextEncoderDim dimensions).
adapt::v1::ServerConfig DefaultConfig();

// Parses a config file: JSON when the name ends in .json or the text starts with '{',
// protobuf text format otherwise. Errors name the file and the problem.
absl::StatusOr<adapt::v1::ServerConfig> ParseConfigFile(const std::string& path);

// `base` with every field that `override` sets replaced; a non-empty encoder list replaces
// the base list as a whole.
adapt::v1::ServerConfig MergeConfig(const adapt::v1::ServerConfig& base,
                                    const adapt::v1::ServerConfig& override);

// Checks addresses (HOST:PORT), sizes and the encoder list.
absl::Status ValidateConfig(const adapt::v1::ServerConfig& config);

// Whether the config makes this server a member of a cluster on etcd (docs/CLUSTER_ETCD.md):
// a `cluster` and a `durable_log` (ValidateConfig refuses a cluster without one).
bool IsEtcdCluster(const adapt::v1::ServerConfig& config);

// The refusals of the static member list's settings, removed: `field` (a flag or config
// field), why, and what replaces it.
std::string RemovedClusterMembers(absl::string_view field);
std::string RemovedHandoffInterval(absl::string_view field);

// The config's `cluster` as a checked membership (InvalidArgument naming the field): this
// member alone at its advertised address; the others register in etcd.
absl::StatusOr<cluster::Membership> ClusterMembership(const adapt::v1::ServerConfig& config);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CONFIG_CONFIG_H_
