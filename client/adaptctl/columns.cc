#include "client/adaptctl/columns.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/adaptctl/numbers.h"

namespace adaptctl {
namespace {

using adapt::v1::OutputSpec;

absl::Status TableError(const Table& table, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(table.source, ": ", what));
}

// The columns `name` stands for: itself, or the columns name[0], name[1], ... of an array.
std::vector<int> ResolveColumn(const Table& table, absl::string_view name) {
  const int exact = table.ColumnIndex(name);
  if (exact >= 0) return {exact};
  std::vector<int> columns;
  for (int i = 0;; ++i) {
    const int column = table.ColumnIndex(absl::StrCat(name, "[", i, "]"));
    if (column < 0) break;
    columns.push_back(column);
  }
  return columns;
}

// y0..y{dim-1} when all are present, else the array "y"; empty otherwise.
std::vector<int> DefaultTargets(const Table& table, uint32_t dim) {
  std::vector<int> columns;
  for (uint32_t i = 0; i < dim; ++i) {
    const int column = table.ColumnIndex(absl::StrCat("y", i));
    if (column < 0) {
      columns.clear();
      break;
    }
    columns.push_back(column);
  }
  if (columns.empty()) columns = ResolveColumn(table, "y");
  if (dim > 0 && columns.size() != dim) columns.clear();
  return columns;
}

std::string OutputName(const OutputSpec& output) {
  switch (output.kind()) {
    case OutputSpec::KIND_LABELS:
      return "labels";
    case OutputSpec::KIND_VECTOR:
      return absl::StrCat("vector:", output.dim());
    case OutputSpec::KIND_NEXT:
      return "next";
    default:
      return "unspecified";
  }
}

absl::Status SelectTargets(const Table& table, const ColumnOptions& options,
                           const OutputSpec& output, bool require_targets,
                           ColumnSelection& selection) {
  const bool label_store = output.kind() == OutputSpec::KIND_LABELS;
  const bool vector_store = output.kind() == OutputSpec::KIND_VECTOR;
  if (require_targets && !options.label_col.empty() && !label_store) {
    return TableError(table, absl::StrCat("--label-col applies to label stores; this store's "
                                          "output is ",
                                          OutputName(output)));
  }
  if (require_targets && !options.target_cols.empty() && !vector_store) {
    return TableError(table, absl::StrCat("--target-cols applies to vector stores; this "
                                          "store's output is ",
                                          OutputName(output)));
  }
  if (!options.label_col.empty()) {
    selection.label = table.ColumnIndex(options.label_col);
    if (selection.label < 0) {
      return TableError(table, absl::StrCat("no column \"", options.label_col, "\""));
    }
  } else {
    selection.label = table.ColumnIndex("label");
  }
  if (require_targets && label_store && selection.label < 0) {
    return TableError(table, "no \"label\" column; name the label column with --label-col");
  }

  if (!options.target_cols.empty()) {
    for (const std::string& name : options.target_cols) {
      std::vector<int> columns = ResolveColumn(table, name);
      if (columns.empty()) return TableError(table, absl::StrCat("no column \"", name, "\""));
      selection.targets.insert(selection.targets.end(), columns.begin(), columns.end());
    }
  } else if (vector_store) {
    selection.targets = DefaultTargets(table, output.dim());
  }
  if (require_targets && label_store) selection.target = TargetKind::kLabel;
  if (require_targets && vector_store) {
    selection.target = TargetKind::kVector;
    if (selection.targets.empty()) {
      return TableError(table, absl::StrCat("no target columns: name the ", output.dim(),
                                            " columns of this vector:", output.dim(),
                                            " store with --target-cols"));
    }
    if (output.dim() > 0 && selection.targets.size() != output.dim()) {
      return TableError(table,
                        absl::StrCat("--target-cols names ", selection.targets.size(),
                                     " columns; the store's output is vector:", output.dim()));
    }
  }
  return absl::OkStatus();
}

// The first non-empty cell of `column`, or nullptr.
const std::string* FirstValue(const Table& table, int column) {
  for (const std::vector<std::string>& row : table.rows) {
    if (!row[column].empty()) return &row[column];
  }
  return nullptr;
}

absl::Status ParseCell(const Table& table, size_t row, int column, float* value) {
  const std::string& cell = table.rows[row][column];
  if (ParseFloat(cell, value)) return absl::OkStatus();
  const std::string where =
      absl::StrCat(table.source, ":", table.lines[row], ": column \"", table.columns[column], "\"");
  if (cell.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": missing value"));
  return absl::InvalidArgumentError(absl::StrCat(where, ": not a number: \"", cell, "\""));
}

// The bytes of the image file the cell names (relative to the table file's folder).
absl::StatusOr<std::string> ReadImageCell(const Table& table, size_t row, int column) {
  const std::string& cell = table.rows[row][column];
  const std::string where =
      absl::StrCat(table.source, ":", table.lines[row], ": column \"", table.columns[column], "\"");
  if (cell.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": missing value"));
  std::filesystem::path path(cell);
  if (path.is_relative() && table.source != "stdin") {
    path = std::filesystem::path(table.source).parent_path() / path;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  if (in) bytes << in.rdbuf();
  if (!in || in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": cannot read image file '",
                                                   path.string(), "': ", std::strerror(errno)));
  }
  return bytes.str();
}

}  // namespace

absl::StatusOr<ColumnSelection> SelectColumns(const Table& table, const ColumnOptions& options,
                                              InputKind input, const OutputSpec& output,
                                              bool require_targets) {
  ColumnSelection selection;
  selection.input = input;
  selection.id = table.ColumnIndex("id");
  absl::Status status = SelectTargets(table, options, output, require_targets, selection);
  if (!status.ok()) return status;
  if (!options.sequence_col.empty()) {
    selection.sequence = table.ColumnIndex(options.sequence_col);
    if (selection.sequence < 0) {
      return TableError(table,
                        absl::StrCat("no column \"", options.sequence_col, "\" (--sequence-col)"));
    }
  }

  const std::string text_name = options.text_col.empty() ? "text" : options.text_col;
  selection.text = table.ColumnIndex(text_name);
  if (input == InputKind::kText) {
    if (selection.text < 0) {
      return TableError(
          table, absl::StrCat("no text column \"", text_name, "\"; name it with --text-col"));
    }
    return selection;
  }
  if (!options.text_col.empty()) {
    return TableError(table, absl::StrCat("--text-col applies to text encoders; this store's "
                                          "encoder reads ",
                                          input == InputKind::kImage ? "images" : "vectors"));
  }
  const std::string image_name = options.image_col.empty() ? "image" : options.image_col;
  selection.image = table.ColumnIndex(image_name);
  if (input == InputKind::kImage) {
    if (selection.image < 0) {
      return TableError(
          table, absl::StrCat("no image column \"", image_name, "\"; name it with --image-col"));
    }
    return selection;
  }
  if (!options.image_col.empty()) {
    return TableError(table,
                      "--image-col applies to image encoders; this store's encoder reads "
                      "vectors");
  }

  absl::flat_hash_set<int> roles = {selection.id, selection.label, selection.text, selection.image,
                                    selection.sequence};
  roles.insert(selection.targets.begin(), selection.targets.end());
  for (int column = 0; column < static_cast<int>(table.columns.size()); ++column) {
    if (roles.contains(column)) continue;
    const std::string* first = FirstValue(table, column);
    float value;
    if (first != nullptr && ParseFloat(*first, &value)) selection.features.push_back(column);
  }
  if (selection.features.empty() && !table.rows.empty()) {
    return TableError(table, "no numeric feature columns");
  }
  return selection;
}

absl::StatusOr<adapt::v1::Input> RowInput(const Table& table, const ColumnSelection& selection,
                                          size_t row) {
  adapt::v1::Input input;
  if (selection.input == InputKind::kText) {
    input.set_text(table.rows[row][selection.text]);
    return input;
  }
  if (selection.input == InputKind::kImage) {
    absl::StatusOr<std::string> bytes = ReadImageCell(table, row, selection.image);
    if (!bytes.ok()) return bytes.status();
    input.set_image(*std::move(bytes));
    return input;
  }
  google::protobuf::RepeatedField<float>* values = input.mutable_vector()->mutable_values();
  values->Resize(static_cast<int>(selection.features.size()), 0.0f);
  for (size_t i = 0; i < selection.features.size(); ++i) {
    absl::Status status = ParseCell(table, row, selection.features[i], values->Mutable(i));
    if (!status.ok()) return status;
  }
  return input;
}

absl::StatusOr<std::vector<adapt::v1::Example>> BuildExamples(const Table& table,
                                                              const ColumnSelection& selection) {
  std::vector<adapt::v1::Example> examples;
  examples.reserve(table.rows.size());
  for (size_t row = 0; row < table.rows.size(); ++row) {
    adapt::v1::Example example;
    absl::StatusOr<adapt::v1::Input> input = RowInput(table, selection, row);
    if (!input.ok()) return input.status();
    *example.mutable_input() = *std::move(input);
    if (selection.target == TargetKind::kVector) {
      google::protobuf::RepeatedField<float>* values = example.mutable_vector()->mutable_values();
      values->Resize(static_cast<int>(selection.targets.size()), 0.0f);
      for (size_t i = 0; i < selection.targets.size(); ++i) {
        absl::Status status = ParseCell(table, row, selection.targets[i], values->Mutable(i));
        if (!status.ok()) return status;
      }
    } else if (selection.target == TargetKind::kLabel) {
      example.set_label(table.rows[row][selection.label]);
    }
    if (selection.id >= 0 && !table.rows[row][selection.id].empty()) {
      example.set_id(table.rows[row][selection.id]);
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

}  // namespace adaptctl
