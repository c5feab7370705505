// Registration of adaptctl's subcommands on the CLI11 application. Each Add* function adds its
// subcommands; when one of them is parsed, its callback stores the command to run in *action.
// Call from the main thread only, before parsing.
#ifndef ADAPTD_CLIENT_ADAPTCTL_COMMANDS_H_
#define ADAPTD_CLIENT_ADAPTCTL_COMMANDS_H_

#include "CLI/CLI.hpp"
#include "client/adaptctl/cli_common.h"

namespace adaptctl {

// Accepts a number > 0 (an integer when `integer`), with a short message otherwise.
CLI::Validator Positive(bool integer);

// store create | get | list | delete
void AddStoreCommands(CLI::App& app, Action* action);
// adapt, forget
void AddAdaptCommands(CLI::App& app, Action* action);
// predict
void AddPredictCommand(CLI::App& app, Action* action);
// feedback
void AddFeedbackCommand(CLI::App& app, Action* action);
// compile, export, import, encoders, cluster status | drain
void AddOtherCommands(CLI::App& app, Action* action);
// cluster migrate (added to the `cluster` subcommand)
void AddMigrateCommand(CLI::App& cluster, Action* action);
// cluster backup-hold | check (added to the `cluster` subcommand)
void AddBackupCommands(CLI::App& cluster, Action* action);
// hash-token
void AddSecurityCommands(CLI::App& app, Action* action);
// bench (the load generator)
void AddBenchCommand(CLI::App& app, Action* action);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_COMMANDS_H_
