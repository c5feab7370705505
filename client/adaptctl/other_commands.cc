// compile, export, import, encoders and cluster.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"
#include "client/adaptctl/settings.h"

namespace adaptctl {
namespace {

struct CompileOptions {
  std::string store_ref;
  std::vector<std::string> settings;
  bool refresh_base = false;
};

// TENANT/STORE and a FILE.
struct TransferOptions {
  std::string store_ref;
  std::string file;
};

absl::Status RunCompile(const CompileOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  adapt::v1::CompileRequest request;
  request.set_tenant(ref->tenant);
  request.set_store(ref->store);
  absl::Status settings = ApplyCompileSettings(options.settings, request);
  if (!settings.ok()) return UsageError(settings.message());
  request.set_refresh_base(options.refresh_base);
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::CompileResponse> response = (*client)->Compile(request);
  if (!response.ok()) return response.status();
  Json summary = {{"version", response->version()}};
  if (response->has_faast()) summary.update(MessageToJson(response->faast()));
  PrintSummary(summary);
  return absl::OkStatus();
}

absl::Status RunExport(const TransferOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<std::string> snapshot = (*client)->ExportStore(ref->tenant, ref->store);
  if (!snapshot.ok()) return snapshot.status();
  absl::Status written = WriteBytes(options.file, *snapshot);
  if (!written.ok()) return written;
  PrintSummary({{"tenant", ref->tenant}, {"store", ref->store}, {"bytes", snapshot->size()}},
               /*to_stderr=*/IsStdio(options.file));
  return absl::OkStatus();
}

absl::Status RunImport(const TransferOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<std::string> snapshot = ReadBytes(options.file);
  if (!snapshot.ok()) return snapshot.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::StoreInfo> info =
      (*client)->ImportStore(ref->tenant, ref->store, *snapshot);
  if (!info.ok()) return info.status();
  PrintSummary({{"tenant", info->tenant()},
                {"store", info->store()},
                {"bytes", snapshot->size()},
                {"version", info->version()},
                {"examples", info->examples()}});
  return absl::OkStatus();
}

// `encoders --table`: one aligned line per encoder instead of the JSON summary.
void PrintEncoderTable(const adapt::v1::ListEncodersResponse& encoders) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "TYPE", "INPUT", "DIM", "FINGERPRINT"}};
  for (const auto& e : encoders.encoders()) {
    rows.push_back({e.name(), e.type(), e.input_kind(),
                    e.dim() == 0 ? "any" : std::to_string(e.dim()), e.fingerprint()});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
  // Model encoders (onnx): the tensors the model takes and gives, one line each way.
  auto tensors = [](const auto& list) {
    std::string text;
    for (const adapt::v1::EncoderInfo::Tensor& t : list) {
      std::string shape;
      for (int64_t d : t.shape()) {
        shape += (shape.empty() ? "" : ", ") + (d < 0 ? std::string("?") : std::to_string(d));
      }
      text += (text.empty() ? "" : ", ") + t.name() + " " + t.element_type() + " [" + shape + "]";
    }
    return text;
  };
  for (const auto& e : encoders.encoders()) {
    if (e.input_tensors().empty() && e.output_tensors().empty()) continue;
    std::printf("%s inputs: %s\n", e.name().c_str(), tensors(e.input_tensors()).c_str());
    std::printf("%s outputs: %s\n", e.name().c_str(), tensors(e.output_tensors()).c_str());
    if (e.max_tokens() > 0) std::printf("%s max_tokens: %u\n", e.name().c_str(), e.max_tokens());
  }
}

absl::Status RunEncoders(bool table, const GlobalOptions& globals) {
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::ListEncodersResponse> encoders = (*client)->ListEncoders();
  if (!encoders.ok()) return encoders.status();
  if (table) {
    PrintEncoderTable(*encoders);
  } else {
    PrintSummary(MessageToJson(*encoders));
  }
  return absl::OkStatus();
}

void AddCompile(CLI::App& app, Action* action) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App* compile =
      app.add_subcommand("compile", "faast: solve the statistics and publish a new version");
  compile->add_option("store", options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  compile
      ->add_option("--set", options->settings,
                   "KEY=VALUE: a FaastParams override for this and later compiles (rcond, "
                   "alpha, ridge); repeatable")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  compile->add_flag("--refresh-base", options->refresh_base,
                    "A store with a base: copy the base's current read-out first, then solve "
                    "against it");
  compile->callback([options, action] {
    *action = [options](const GlobalOptions& globals) { return RunCompile(*options, globals); };
  });
}

void AddTransfer(CLI::App& app, Action* action) {
  auto export_options = std::make_shared<TransferOptions>();
  CLI::App* export_command =
      app.add_subcommand("export", "Write a store's snapshot to a file (- for stdout)");
  export_command->add_option("store", export_options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  export_command->add_option("--output", export_options->file, "Snapshot file")
      ->type_name("FILE")
      ->required();
  export_command->callback([export_options, action] {
    *action = [export_options](const GlobalOptions& globals) {
      return RunExport(*export_options, globals);
    };
  });

  auto import_options = std::make_shared<TransferOptions>();
  CLI::App* import_command = app.add_subcommand(
      "import", "Create a store from a snapshot file (- for stdin); the store must not exist");
  import_command->add_option("store", import_options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  import_command->add_option("--input", import_options->file, "Snapshot file")
      ->type_name("FILE")
      ->required();
  import_command->callback([import_options, action] {
    *action = [import_options](const GlobalOptions& globals) {
      return RunImport(*import_options, globals);
    };
  });
}

// `cluster status` and `cluster drain`: the response as JSON, with the stores per member.
Json ClusterJson(const adapt::v1::ClusterStatusResponse& status) {
  Json out = MessageToJson(status);
  Json per_member = Json::object();
  for (const adapt::v1::MemberStatus& m : status.members()) {
    per_member[m.name()] = m.error().empty() ? Json(m.stores()) : Json(nullptr);
  }
  out["stores_per_member"] = std::move(per_member);
  return out;
}

struct DrainOptions {
  std::string member;
  bool undo = false;
  bool no_wait = false;
};

absl::Status RunClusterStatus(const GlobalOptions& globals) {
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::ClusterStatusResponse> status = (*client)->ClusterStatus();
  if (!status.ok()) return status.status();
  PrintSummary(ClusterJson(*status));
  return absl::OkStatus();
}

absl::Status RunClusterDrain(const DrainOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  // Waiting for the moves may take long: --timeout, or ten minutes.
  const absl::Duration timeout =
      globals.timeout_seconds > 0 ? absl::Seconds(globals.timeout_seconds) : absl::Minutes(10);
  absl::StatusOr<adapt::v1::DrainMemberResponse> response =
      (*client)->DrainMember(options.member, options.undo, !options.no_wait, timeout);
  if (!response.ok()) return response.status();
  Json summary = ClusterJson(response->status());
  summary["member"] = options.member;
  summary["drained"] = !options.undo;
  PrintSummary(summary);
  return absl::OkStatus();
}

void AddCluster(CLI::App& app, Action* action) {
  CLI::App* cluster = app.add_subcommand(
      "cluster",
      "A cluster's members, draining one, loading data directories into it (an admin token), "
      "and its backup hold and consistency check (etcd and the bucket directly)");
  cluster->require_subcommand(1);
  CLI::App* status = cluster->add_subcommand(
      "status",
      "One JSON line: the members, stores per member, moves in flight, \"settled\": true once "
      "every store sits on its owner");
  status->callback(
      [action] { *action = [](const GlobalOptions& g) { return RunClusterStatus(g); }; });
  auto drain_options = std::make_shared<DrainOptions>();
  CLI::App* drain = cluster->add_subcommand(
      "drain",
      "Move every store off a member and return when done, so it can then be removed from the "
      "member list");
  drain->add_option("member", drain_options->member, "The member's name")->required();
  drain->add_flag("--undo", drain_options->undo, "Let a drained member own stores again");
  drain->add_flag("--no-wait", drain_options->no_wait,
                  "Return once every member recorded the drain, not when the moves are done");
  drain->callback([drain_options, action] {
    *action = [drain_options](const GlobalOptions& g) {
      return RunClusterDrain(*drain_options, g);
    };
  });
  AddMigrateCommand(*cluster, action);
  AddBackupCommands(*cluster, action);
}

}  // namespace

void AddOtherCommands(CLI::App& app, Action* action) {
  AddCluster(app, action);
  AddCompile(app, action);
  AddTransfer(app, action);
  CLI::App* encoders =
      app.add_subcommand("encoders",
                         "List the encoders the server hosts: name, type, input kind, dimension, "
                         "fingerprint");
  auto table = std::make_shared<bool>(false);
  encoders->add_flag("--table", *table, "Print an aligned table instead of the JSON summary");
  encoders->callback([action, table] {
    *action = [table](const GlobalOptions& globals) { return RunEncoders(*table, globals); };
  });
}

}  // namespace adaptctl
