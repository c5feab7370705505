#include "server/persistence/persistence_flags.h"

#include "absl/strings/str_cat.h"
#include "server/config/defaults.h"

namespace adaptd {

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
}

}  // namespace adaptd
