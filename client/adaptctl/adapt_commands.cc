// adapt and forget: a table's rows as examples, streamed in batches over one call.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"

namespace adaptctl {
namespace {

struct ExampleOptions {
  std::string store_ref;
  std::string input;
  ColumnOptions columns;
  int batch = 256;
};

// Everything a streaming call needs: the store, its description and its examples.
struct LoadedExamples {
  StoreRef ref;
  adapt::v1::StoreInfo info;
  std::vector<adapt::v1::Example> examples;
  std::unique_ptr<adaptd::Client> client;
};

absl::StatusOr<LoadedExamples> LoadExamples(const ExampleOptions& options,
                                            const GlobalOptions& globals) {
  LoadedExamples loaded;
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  loaded.ref = *std::move(ref);
  absl::StatusOr<Table> table = ReadTable(options.input);
  if (!table.ok()) return table.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  loaded.client = *std::move(client);
  absl::StatusOr<adapt::v1::StoreInfo> info =
      loaded.client->GetStore(loaded.ref.tenant, loaded.ref.store);
  if (!info.ok()) return info.status();
  loaded.info = *std::move(info);
  absl::StatusOr<InputKind> input =
      EncoderInputKind(*loaded.client, loaded.info.spec(), *table, options.columns);
  if (!input.ok()) return input.status();
  absl::StatusOr<ColumnSelection> selection = SelectColumns(
      *table, options.columns, *input, loaded.info.spec().output(), /*require_targets=*/true);
  if (!selection.ok()) return selection.status();
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(*table, *selection);
  if (!examples.ok()) return examples.status();
  loaded.examples = *std::move(examples);
  return loaded;
}

// Consecutive messages of `batch` examples each; at least one, so that the call names the
// store even for an empty table.
template <typename Request>
std::vector<Request> MakeBatches(LoadedExamples& loaded, int batch) {
  std::vector<Request> requests;
  const size_t size = static_cast<size_t>(batch);
  for (size_t begin = 0; begin < loaded.examples.size() || requests.empty(); begin += size) {
    Request& request = requests.emplace_back();
    request.set_tenant(loaded.ref.tenant);
    request.set_store(loaded.ref.store);
    const size_t end = std::min(loaded.examples.size(), begin + size);
    for (size_t i = begin; i < end; ++i) {
      *request.add_examples() = std::move(loaded.examples[i]);
    }
  }
  return requests;
}

absl::Status RunAdapt(const ExampleOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<LoadedExamples> loaded = LoadExamples(options, globals);
  if (!loaded.ok()) return loaded.status();
  std::vector<adapt::v1::AdaptRequest> batches =
      MakeBatches<adapt::v1::AdaptRequest>(*loaded, options.batch);
  absl::StatusOr<adapt::v1::AdaptResponse> response = loaded->client->Adapt(batches);
  if (!response.ok()) return response.status();
  const bool evaluated = response->evaluated() > 0;
  Json summary = {{"accepted", response->accepted()},
                  {"version", response->version()},
                  {"evaluated", response->evaluated()},
                  {"correct", response->correct()}};
  if (loaded->info.spec().output().kind() == adapt::v1::OutputSpec::KIND_LABELS) {
    summary["accuracy"] = evaluated ? Json(response->accuracy()) : Json(nullptr);
  }
  summary["loss"] = evaluated ? Json(response->loss()) : Json(nullptr);
  PrintSummary(summary);
  return absl::OkStatus();
}

absl::Status RunForget(const ExampleOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<LoadedExamples> loaded = LoadExamples(options, globals);
  if (!loaded.ok()) return loaded.status();
  std::vector<adapt::v1::ForgetRequest> batches =
      MakeBatches<adapt::v1::ForgetRequest>(*loaded, options.batch);
  absl::StatusOr<adapt::v1::ForgetResponse> response = loaded->client->Forget(batches);
  if (!response.ok()) return response.status();
  PrintSummary({{"forgotten", response->forgotten()}, {"version", response->version()}});
  return absl::OkStatus();
}

// The options adapt and forget share.
std::shared_ptr<ExampleOptions> AddExampleOptions(CLI::App& command) {
  auto options = std::make_shared<ExampleOptions>();
  command.add_option("store", options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  command.add_option("--input", options->input, "Examples: .csv, .jsonl, or - for CSV on stdin")
      ->type_name("FILE")
      ->required();
  CLI::Option* label =
      command
          .add_option("--label-col", options->columns.label_col, "Label column (default: label)")
          ->type_name("NAME");
  CLI::Option* targets = command
                             .add_option("--target-cols", options->columns.target_cols,
                                         "Target columns of a vector:M store (default: y0..y{M-1})")
                             ->type_name("A,B,..")
                             ->delimiter(',')
                             ->allow_extra_args(false);
  label->excludes(targets);
  command
      .add_option("--text-col", options->columns.text_col,
                  "Text column, for text encoders (default: text)")
      ->type_name("NAME");
  command.add_option("--batch", options->batch, "Examples per stream message")
      ->type_name("N")
      ->check(Positive(/*integer=*/true))
      ->capture_default_str();
  return options;
}

}  // namespace

void AddAdaptCommands(CLI::App& app, Action* action) {
  CLI::App* adapt = app.add_subcommand(
      "adapt",
      "Stream labelled examples into a store (one transaction); prints the prequential "
      "accuracy");
  std::shared_ptr<ExampleOptions> adapt_options = AddExampleOptions(*adapt);
  adapt->callback([adapt_options, action] {
    *action = [adapt_options](const GlobalOptions& globals) {
      return RunAdapt(*adapt_options, globals);
    };
  });

  CLI::App* forget =
      app.add_subcommand("forget", "Remove examples adapted before (faast: exact removal)");
  std::shared_ptr<ExampleOptions> forget_options = AddExampleOptions(*forget);
  forget->callback([forget_options, action] {
    *action = [forget_options](const GlobalOptions& globals) {
      return RunForget(*forget_options, globals);
    };
  });
}

}  // namespace adaptctl
