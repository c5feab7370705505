// adaptctl: the command-line client of adaptd. docs/DESIGN.md, "The command-line client
// adaptctl", is its contract: commands, options, file formats, summaries and exit codes.
#include <exception>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "client/adaptctl/cli_common.h"
#include "client/adaptctl/commands.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr char kFooter[] =
    "FILE: CSV with a header row, or JSON Lines when the name ends in .jsonl; - is stdin or\n"
    "stdout as CSV. For a vector encoder the features are every numeric column that is not the\n"
    "label, target, text or id column, in file order; an id column is sent as the example id\n"
    "and copied through to predictions.\n"
    "Every command prints a one-line JSON summary on stdout. Exit codes: 0 success, 1 failure\n"
    "(stderr: \"error: CODE: message\"), 2 usage error.";

void PrintError(const absl::Status& status) {
  std::cerr << "error: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
            << "\n";
}

int Run(int argc, char** argv) {
  CLI::App app("adaptctl: manage adaptd stores, stream examples into them and query them.",
               "adaptctl");
  // Global options may also follow the subcommand.
  app.fallthrough();
  app.require_subcommand(1);
  app.footer(kFooter);
  adaptctl::GlobalOptions globals;
  app.add_option("--addr", globals.addr, "Server address HOST:PORT")
      ->type_name("HOST:PORT")
      ->envname("ADAPTCTL_ADDR")
      ->capture_default_str();
  app.add_option("--token", globals.token,
                 "Bearer token, sent as `authorization: Bearer TOKEN` (env ADAPTCTL_TOKEN or "
                 "ADAPTD_TOKEN)")
      ->type_name("TOKEN")
      ->envname("ADAPTCTL_TOKEN");
  app.add_option("--tls-ca", globals.tls_ca,
                 "PEM file of the CA of the server's certificate; enables TLS")
      ->type_name("FILE");
  app.add_option("--tls-cert", globals.tls_cert,
                 "PEM client certificate, for a server that requires one (mutual TLS)")
      ->type_name("FILE");
  app.add_option("--tls-key", globals.tls_key, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--timeout", globals.timeout_seconds,
                 "Deadline of every call in SECONDS (default: 30 for unary calls, 300 for "
                 "streaming calls: adapt, forget, export, import)")
      ->type_name("SECONDS")
      ->check(adaptctl::Positive(/*integer=*/false));
  app.add_flag("--no-route", globals.no_route,
               "Send every call to --addr. By default, in a cluster on etcd, a store's calls go "
               "to the member holding it (by the cluster's route table), and --addr forwards "
               "only when that member cannot be reached");

  adaptctl::Action action;
  adaptctl::AddStoreCommands(app, &action);
  adaptctl::AddAdaptCommands(app, &action);
  adaptctl::AddOtherCommands(app, &action);
  adaptctl::AddPredictCommand(app, &action);
  adaptctl::AddFeedbackCommand(app, &action);
  adaptctl::AddSecurityCommands(app, &action);
  adaptctl::AddBenchCommand(app, &action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);
    PrintError(absl::InvalidArgumentError(error.what()));
    std::cerr << "Run with --help for more information.\n";
    return kExitUsage;
  }
  if (!action) {
    PrintError(absl::InvalidArgumentError("no command"));
    return kExitUsage;
  }
  const absl::Status status = action(globals);
  if (status.ok()) return 0;
  PrintError(status);
  return adaptctl::IsUsageError(status) ? kExitUsage : kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& exception) {
    PrintError(absl::InternalError(exception.what()));
    return kExitFailure;
  }
}
