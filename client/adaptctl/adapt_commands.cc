// adapt and forget: a table's rows as examples (or, for a `next` store, as sequences of
// items), streamed in batches over one call.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"

namespace adaptctl {
namespace {

struct ExampleOptions {
  std::string store_ref;
  std::string input;
  ColumnOptions columns;
  int batch = 256;
  // adapt only: the rows as one sequence (--sequence), or one per value of columns.sequence_col;
  // whether the first continues the store's; passes per message.
  bool sequence = false;
  bool continue_sequence = false;
  uint32_t passes = 0;
};

// Everything a streaming call needs: the store, its description and its examples.
struct LoadedExamples {
  StoreRef ref;
  adapt::v1::StoreInfo info;
  std::vector<adapt::v1::Example> examples;
  // With a sequence column: each row's sequence, numbered by first appearance.
  std::vector<size_t> sequence_of;
  size_t sequences = 0;
  std::unique_ptr<adaptd::Client> client;
};

// The rows' sequences, in order of first appearance, each in file order, and (with an id
// column) their items' ids.
std::vector<std::vector<adapt::v1::Input>> Sequences(LoadedExamples& loaded,
                                                     std::vector<std::vector<std::string>>* ids) {
  const size_t count = loaded.sequence_of.empty() ? 1 : loaded.sequences;
  std::vector<std::vector<adapt::v1::Input>> sequences(count);
  const bool with_ids = std::any_of(loaded.examples.begin(), loaded.examples.end(),
                                    [](const adapt::v1::Example& e) { return !e.id().empty(); });
  if (with_ids) ids->assign(count, {});
  for (size_t row = 0; row < loaded.examples.size(); ++row) {
    const size_t s = loaded.sequence_of.empty() ? 0 : loaded.sequence_of[row];
    sequences[s].push_back(std::move(*loaded.examples[row].mutable_input()));
    if (with_ids) (*ids)[s].push_back(loaded.examples[row].id());
  }
  return sequences;
}

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
  const bool next = loaded.info.spec().output().kind() == adapt::v1::OutputSpec::KIND_NEXT;
  if (!next &&
      (options.sequence || options.continue_sequence || !options.columns.sequence_col.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.columns.sequence_col.empty()
            ? (options.sequence ? "--sequence" : "--continue-sequence")
            : "--sequence-col",
        " applies to stores whose output is next; ", options.store_ref, " learns from examples"));
  }
  absl::StatusOr<InputKind> input =
      EncoderInputKind(*loaded.client, loaded.info.spec(), *table, options.columns);
  if (!input.ok()) return input.status();
  absl::StatusOr<ColumnSelection> selection = SelectColumns(
      *table, options.columns, *input, loaded.info.spec().output(), /*require_targets=*/true);
  if (!selection.ok()) return selection.status();
  absl::StatusOr<std::vector<adapt::v1::Example>> examples = BuildExamples(*table, *selection);
  if (!examples.ok()) return examples.status();
  loaded.examples = *std::move(examples);
  if (selection->sequence >= 0) {
    absl::flat_hash_map<std::string, size_t> number;
    for (const std::vector<std::string>& row : table->rows) {
      auto [it, fresh] = number.try_emplace(row[selection->sequence], number.size());
      loaded.sequence_of.push_back(it->second);
    }
    loaded.sequences = number.size();
  }
  return loaded;
}

// Consecutive messages of `batch` examples each; at least one, so that the call names the
// store even for an empty table.
std::vector<adapt::v1::ForgetRequest> ForgetBatches(LoadedExamples& loaded, int batch) {
  std::vector<adapt::v1::ForgetRequest> requests;
  const size_t size = static_cast<size_t>(batch);
  for (size_t begin = 0; begin < loaded.examples.size() || requests.empty(); begin += size) {
    adapt::v1::ForgetRequest& request = requests.emplace_back();
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
  adaptd::AdaptOptions adapt;
  adapt.batch = static_cast<size_t>(options.batch);
  adapt.passes = options.passes;
  adapt.continue_sequence = options.continue_sequence;
  const bool next = loaded->info.spec().output().kind() == adapt::v1::OutputSpec::KIND_NEXT;
  std::vector<std::vector<adapt::v1::Input>> sequences;
  std::vector<std::vector<std::string>> ids;
  if (next) sequences = Sequences(*loaded, &ids);
  const std::vector<adapt::v1::AdaptRequest> batches =
      next
          ? adaptd::SequenceRequests(loaded->ref.tenant, loaded->ref.store, sequences, adapt, ids)
          : adaptd::ExampleRequests(loaded->ref.tenant, loaded->ref.store, loaded->examples, adapt);
  absl::StatusOr<adapt::v1::AdaptResponse> response = loaded->client->Adapt(batches);
  if (!response.ok()) return response.status();
  const bool evaluated = response->evaluated() > 0;
  Json summary = {{"accepted", response->accepted()},
                  {"version", response->version()},
                  {"evaluated", response->evaluated()},
                  {"correct", response->correct()},
                  {"duplicates", response->duplicates()}};
  if (loaded->info.spec().output().kind() == adapt::v1::OutputSpec::KIND_LABELS) {
    summary["accuracy"] = evaluated ? Json(response->accuracy()) : Json(nullptr);
  }
  summary["loss"] = evaluated ? Json(response->loss()) : Json(nullptr);
  if (next) {
    summary["sequences"] = static_cast<uint64_t>(std::count_if(
        sequences.begin(), sequences.end(), [](const auto& s) { return !s.empty(); }));
  }
  PrintSummary(summary);
  return absl::OkStatus();
}

absl::Status RunForget(const ExampleOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<LoadedExamples> loaded = LoadExamples(options, globals);
  if (!loaded.ok()) return loaded.status();
  std::vector<adapt::v1::ForgetRequest> batches = ForgetBatches(*loaded, options.batch);
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
  command
      .add_option("--image-col", options->columns.image_col,
                  "Image column, for image encoders: paths of PNG or JPEG files, relative to the "
                  "table's folder (default: image)")
      ->type_name("NAME");
  command.add_option("--batch", options->batch, "Examples (or sequence items) per stream message")
      ->type_name("N")
      ->check(Positive(/*integer=*/true))
      ->capture_default_str();
  return options;
}

}  // namespace

void AddAdaptCommands(CLI::App& app, Action* action) {
  CLI::App* adapt = app.add_subcommand(
      "adapt",
      "Stream labelled examples (or, into a next store, sequences) into a store in one "
      "transaction; prints the prequential accuracy");
  std::shared_ptr<ExampleOptions> adapt_options = AddExampleOptions(*adapt);
  CLI::Option* sequence = adapt->add_flag(
      "--sequence", adapt_options->sequence,
      "Next stores: the rows are one ordered sequence (the default for a next store), which "
      "starts afresh");
  CLI::Option* sequence_col =
      adapt
          ->add_option("--sequence-col", adapt_options->columns.sequence_col,
                       "Next stores: rows with the same value in this column form one sequence, "
                       "in file order; each starts afresh")
          ->type_name("NAME");
  CLI::Option* continue_sequence = adapt->add_flag(
      "--continue-sequence", adapt_options->continue_sequence,
      "Next stores: the rows continue the sequence the store kept (its last item precedes the "
      "first row)");
  sequence->excludes(sequence_col);
  continue_sequence->excludes(sequence_col);
  adapt
      ->add_option("--passes", adapt_options->passes,
                   "fwpkm stores: feed each message this many times (iterative reading)")
      ->type_name("N")
      ->check(CLI::Range(1u, 64u));
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
