// What adaptctl's commands share: the global options, TENANT/STORE arguments, the usage-error
// marker, the connection, the encoder lookup and the one-line JSON summary. Call from the main
// thread (summaries write to the process's stdout and stderr).
#ifndef ADAPTD_CLIENT_ADAPTCTL_CLI_COMMON_H_
#define ADAPTD_CLIENT_ADAPTCTL_CLI_COMMON_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "client/adaptctl/columns.h"
#include "client/adaptctl/proto_json.h"
#include "client/adaptctl/table.h"
#include "client/cpp/client.h"

namespace adaptctl {

struct GlobalOptions {
  std::string addr = "127.0.0.1:50051";
  std::string token;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  // Deadline of every call in seconds; 0 keeps the client's defaults (30 s unary, 300 s
  // streaming).
  double timeout_seconds = 0;
  // --no-route: every call to --addr, even in a cluster on etcd (where a store's calls go to
  // its holder by default; docs/CLIENTS.md).
  bool no_route = false;
};

// A command, ready to run once the whole command line is parsed.
using Action = std::function<absl::Status(const GlobalOptions&)>;

struct StoreRef {
  std::string tenant;
  std::string store;
};

// An error in the command line rather than in the data or on the server (exit code 2).
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// "TENANT/STORE"; anything else is a usage error.
absl::StatusOr<StoreRef> ParseStoreRef(absl::string_view text);

absl::StatusOr<std::unique_ptr<adaptd::Client>> ConnectClient(const GlobalOptions& options);

// Whether the store's encoder reads vectors or texts, from ListEncoders. An encoder the server
// does not list reads texts when the table has the text column, vectors otherwise.
absl::StatusOr<InputKind> EncoderInputKind(adaptd::Client& client, const adapt::v1::StoreSpec& spec,
                                           const Table& table, const ColumnOptions& columns);

// Writes `summary` on one line to stdout, or to stderr when stdout carries data.
void PrintSummary(const Json& summary, bool to_stderr = false);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_CLI_COMMON_H_
