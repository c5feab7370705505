// predict: one output row per input row, in order, from batched Predict calls.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/files.h"

namespace adaptctl {
namespace {

using adapt::v1::OutputSpec;
using adapt::v1::Prediction;

struct PredictOptions {
  std::string store_ref;
  std::string input;
  std::string output;
  int top_k = 1;
  int batch = 1024;
  ColumnOptions columns;
};

// Label columns label,score,label_2,score_2,... or vector columns y0..y{m-1}.
struct OutputLayout {
  bool labels = true;
  int width = 0;     // top-k for labels, m for vectors
  bool ids = false;  // a prediction_id column (stores with a feedback window)
};

OutputLayout ChooseLayout(const OutputSpec& output, int top_k,
                          const std::vector<Prediction>& predictions) {
  OutputLayout layout;
  if (output.kind() == OutputSpec::KIND_LABELS) {
    layout.width = top_k;
    return layout;
  }
  if (output.kind() == OutputSpec::KIND_VECTOR && output.dim() > 0) {
    layout.labels = false;
    layout.width = static_cast<int>(output.dim());
    return layout;
  }
  // A `next` store: whatever its predictions carry.
  const bool any_labels = std::any_of(predictions.begin(), predictions.end(),
                                      [](const Prediction& p) { return p.labels_size() > 0; });
  layout.labels = any_labels;
  layout.width = any_labels ? top_k : (predictions.empty() ? 0 : predictions[0].vector_size());
  return layout;
}

absl::StatusOr<OutputTable> MakeOutput(const Table& input, const ColumnSelection& selection,
                                       const OutputLayout& layout,
                                       const std::vector<Prediction>& predictions) {
  OutputTable table;
  if (selection.id >= 0) table.columns.push_back("id");
  if (layout.ids) table.columns.push_back("prediction_id");
  for (int k = 0; k < layout.width; ++k) {
    if (!layout.labels) {
      table.columns.push_back(absl::StrCat("y", k));
    } else if (k == 0) {
      table.columns.insert(table.columns.end(), {"label", "score"});
    } else {
      table.columns.insert(table.columns.end(),
                           {absl::StrCat("label_", k + 1), absl::StrCat("score_", k + 1)});
    }
  }
  table.rows.reserve(predictions.size());
  for (size_t row = 0; row < predictions.size(); ++row) {
    const Prediction& prediction = predictions[row];
    std::vector<Cell>& cells = table.rows.emplace_back();
    if (selection.id >= 0) cells.emplace_back(input.rows[row][selection.id]);
    if (layout.ids) cells.emplace_back(prediction.prediction_id());
    if (!layout.labels && prediction.vector_size() != layout.width) {
      return absl::DataLossError(absl::StrCat("prediction ", row, " has ", prediction.vector_size(),
                                              " values, expected ", layout.width));
    }
    for (int k = 0; k < layout.width; ++k) {
      if (!layout.labels) {
        cells.emplace_back(prediction.vector(k));
      } else if (k < prediction.labels_size()) {
        cells.emplace_back(prediction.labels(k).label());
        cells.emplace_back(prediction.labels(k).score());
      } else {
        cells.emplace_back();
        cells.emplace_back();
      }
    }
  }
  return table;
}

absl::Status RunPredict(const PredictOptions& options, const GlobalOptions& globals) {
  absl::StatusOr<StoreRef> ref = ParseStoreRef(options.store_ref);
  if (!ref.ok()) return ref.status();
  absl::StatusOr<Table> table = ReadTable(options.input);
  if (!table.ok()) return table.status();
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  absl::StatusOr<adapt::v1::StoreInfo> info = (*client)->GetStore(ref->tenant, ref->store);
  if (!info.ok()) return info.status();
  absl::StatusOr<InputKind> input_kind =
      EncoderInputKind(**client, info->spec(), *table, options.columns);
  if (!input_kind.ok()) return input_kind.status();
  absl::StatusOr<ColumnSelection> selection = SelectColumns(
      *table, options.columns, *input_kind, info->spec().output(), /*require_targets=*/false);
  if (!selection.ok()) return selection.status();

  const bool label_store = info->spec().output().kind() == OutputSpec::KIND_LABELS;
  std::vector<Prediction> predictions;
  predictions.reserve(table->rows.size());
  uint64_t version = info->version();
  const size_t batch = static_cast<size_t>(options.batch);
  for (size_t begin = 0; begin < table->rows.size(); begin += batch) {
    adapt::v1::PredictRequest request;
    request.set_tenant(ref->tenant);
    request.set_store(ref->store);
    if (label_store || info->spec().output().kind() == OutputSpec::KIND_NEXT) {
      request.set_top_k(static_cast<uint32_t>(options.top_k));
    }
    const size_t end = std::min(table->rows.size(), begin + batch);
    for (size_t row = begin; row < end; ++row) {
      absl::StatusOr<adapt::v1::Input> input = RowInput(*table, *selection, row);
      if (!input.ok()) return input.status();
      *request.add_inputs() = *std::move(input);
    }
    absl::StatusOr<adapt::v1::PredictResponse> response = (*client)->Predict(request);
    if (!response.ok()) return response.status();
    if (static_cast<size_t>(response->predictions_size()) != end - begin) {
      return absl::DataLossError(absl::StrCat("the server answered ", response->predictions_size(),
                                              " predictions for ", end - begin, " inputs"));
    }
    version = response->version();
    for (Prediction& prediction : *response->mutable_predictions()) {
      predictions.push_back(std::move(prediction));
    }
  }

  OutputLayout layout = ChooseLayout(info->spec().output(), options.top_k, predictions);
  layout.ids = info->spec().feedback().count() > 0;
  absl::StatusOr<OutputTable> output = MakeOutput(*table, *selection, layout, predictions);
  if (!output.ok()) return output.status();
  absl::Status written = WriteTable(options.output, *output);
  if (!written.ok()) return written;
  PrintSummary({{"predicted", predictions.size()}, {"version", version}},
               /*to_stderr=*/IsStdio(options.output));
  return absl::OkStatus();
}

}  // namespace

void AddPredictCommand(CLI::App& app, Action* action) {
  auto options = std::make_shared<PredictOptions>();
  CLI::App* predict = app.add_subcommand(
      "predict", "Predict every row of a table: label,score[,label_2,score_2..] or y0..y{m-1}");
  predict->add_option("store", options->store_ref, "The store")
      ->type_name("TENANT/STORE")
      ->required();
  predict->add_option("--input", options->input, "Inputs: .csv, .jsonl, or - for CSV on stdin")
      ->type_name("FILE")
      ->required();
  predict
      ->add_option("--output", options->output,
                   "Predictions: .csv, .jsonl, or - for CSV on stdout (the summary then goes "
                   "to stderr)")
      ->type_name("FILE")
      ->required();
  predict->add_option("--top-k", options->top_k, "Labels per row, best first")
      ->type_name("K")
      ->check(Positive(/*integer=*/true))
      ->capture_default_str();
  predict
      ->add_option("--text-col", options->columns.text_col,
                   "Text column, for text encoders (default: text)")
      ->type_name("NAME");
  predict
      ->add_option("--image-col", options->columns.image_col,
                   "Image column, for image encoders: paths of PNG or JPEG files, relative to the "
                   "table's folder (default: image)")
      ->type_name("NAME");
  CLI::Option* label = predict
                           ->add_option("--label-col", options->columns.label_col,
                                        "A label column to skip (default: label)")
                           ->type_name("NAME");
  CLI::Option* targets = predict
                             ->add_option("--target-cols", options->columns.target_cols,
                                          "Target columns to skip (default: y0..y{M-1})")
                             ->type_name("A,B,..")
                             ->delimiter(',')
                             ->allow_extra_args(false);
  label->excludes(targets);
  predict->add_option("--batch", options->batch, "Inputs per Predict request")
      ->type_name("N")
      ->check(Positive(/*integer=*/true))
      ->capture_default_str();
  predict->callback([options, action] {
    *action = [options](const GlobalOptions& globals) { return RunPredict(*options, globals); };
  });
}

}  // namespace adaptctl
