// feedback: prediction ids (the prediction_id column `predict` prints for a store with a
// feedback window) with their true labels or targets, in Feedback calls of at most --batch
// items (docs/FEEDBACK.md). An empty label (or no label column) confirms the served one.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"
#include "client/adaptctl/numbers.h"

namespace adaptctl {
namespace {

struct FeedbackOptions {
  std::string store_ref;
  std::string input;
  std::string label_col = "label";
  int batch = 10000;
};

// Row `row`'s truth into `item`: its label, or for a vector:M store its y0..y{M-1} when
// present; nothing when the cells are empty.
absl::Status SetTruth(const Table& table, size_t row, int label, const std::vector<int>& targets,
                      adapt::v1::FeedbackItem* item) {
  const std::vector<std::string>& cells = table.rows[row];
  if (label >= 0 && !cells[label].empty()) item->set_label(cells[label]);
  if (targets.empty() || cells[targets[0]].empty()) return absl::OkStatus();
  for (int column : targets) {
    float value = 0;
    if (!ParseFloat(cells[column], &value)) {
      return absl::InvalidArgumentError(absl::StrCat(table.source, " line ", table.lines[row],
                                                     ": column ", table.columns[column],
                                                     ": not a number"));
    }
    item->mutable_vector()->add_values(value);
  }
  return absl::OkStatus();
}

absl::Status RunFeedback(const FeedbackOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<Table> table = ReadTable(options.input);
  if (!table.ok()) return table.status();
  const int id = table->ColumnIndex("prediction_id");
  if (id < 0) return UsageError("--input: no prediction_id column (as `predict` prints it)");
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::StoreInfo> info = (*client)->GetStore(ref->tenant, ref->store);
  if (!info.ok()) return info.status();
  const adapt::v1::OutputSpec& output = info->spec().output();
  std::vector<int> targets;
  if (output.kind() == adapt::v1::OutputSpec::KIND_VECTOR) {
    for (uint32_t k = 0; k < output.dim(); ++k) {
      const int column = table->ColumnIndex(absl::StrCat("y", k));
      if (column >= 0) targets.push_back(column);
    }
    if (!targets.empty() && targets.size() != output.dim()) {
      return UsageError(absl::StrCat("--input: columns y0..y", output.dim() - 1, " or none"));
    }
  }
  const int label = table->ColumnIndex(options.label_col);
  uint64_t accepted = 0, duplicates = 0, served_correct = 0, version = info->version();
  const size_t batch = static_cast<size_t>(options.batch);
  for (size_t begin = 0; begin < table->rows.size(); begin += batch) {
    adapt::v1::FeedbackRequest request;
    request.set_tenant(ref->tenant);
    request.set_store(ref->store);
    for (size_t row = begin; row < std::min(table->rows.size(), begin + batch); ++row) {
      adapt::v1::FeedbackItem* item = request.add_items();
      item->set_prediction_id(table->rows[row][id]);
      if (absl::Status set = SetTruth(*table, row, label, targets, item); !set.ok()) return set;
    }
    absl::StatusOr<adapt::v1::FeedbackResponse> response = (*client)->Feedback(request);
    if (!response.ok()) return response.status();
    accepted += response->accepted();
    duplicates += response->duplicates();
    served_correct += response->served_correct();
    version = response->version();
  }
  PrintSummary({{"accepted", accepted},
                {"duplicates", duplicates},
                {"served_correct", served_correct},
                {"version", version}});
  return absl::OkStatus();
}

}  // namespace

void AddFeedbackCommand(CLI::App& app, Action* action) {
  auto options = std::make_shared<FeedbackOptions>();
  CLI::App* feedback = app.add_subcommand(
      "feedback",
      "Teach a store with a feedback window the true labels of predictions it served, by "
      "prediction_id (an empty label confirms the served one)");
  feedback->add_option("store", options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  feedback
      ->add_option("--input", options->input,
                   "prediction_id and label (or y0..y{M-1}) columns: .csv, .jsonl, or - for CSV "
                   "on stdin")
      ->type_name("FILE")
      ->required();
  feedback->add_option("--label-col", options->label_col, "Label column")
      ->type_name("NAME")
      ->capture_default_str();
  feedback->add_option("--batch", options->batch, "Items per Feedback call")
      ->type_name("N")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  feedback->callback([options, action] {
    *action = [options](const GlobalOptions& globals) { return RunFeedback(*options, globals); };
  });
}

}  // namespace adaptctl
