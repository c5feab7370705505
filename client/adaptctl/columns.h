// Which table column plays which role for a store, and the examples and inputs built from the
// rows. Stateless; thread-safe.
//
// Roles: `id` (copied into Example.id and through to predictions), the label column (label
// stores), the target columns (vector:M stores), the text column (text encoders), the image
// column (image encoders: each cell a path to a PNG or JPEG file, sent as its bytes; a relative
// path is taken from the table file's folder, or the working folder for stdin), the sequence
// column (adapt --sequence-col: which sequence a row belongs to), and the features: for vector
// encoders, every other column whose first non-empty value is a number, in file order. A later
// non-numeric value in a feature column, or an image file that cannot be read, is an error that
// names the line and the column.
#ifndef ADAPTD_CLIENT_ADAPTCTL_COLUMNS_H_
#define ADAPTD_CLIENT_ADAPTCTL_COLUMNS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "client/adaptctl/table.h"

namespace adaptctl {

// What the store's encoder reads.
enum class InputKind { kVector, kText, kImage };

// The column options of adapt, forget and predict, as the user gave them (empty: default).
struct ColumnOptions {
  // Default: "label" when the table has such a column.
  std::string label_col;
  // A name also matches the columns "name[0]", "name[1]", ... of a JSON array. Default for
  // vector:M stores: y0..y{M-1}, or the array "y", when present.
  std::vector<std::string> target_cols;
  // Default: "text".
  std::string text_col;
  // Default: "image".
  std::string image_col;
  // No default: only adapt --sequence-col names one.
  std::string sequence_col;
};

// What each example carries besides its input.
enum class TargetKind { kNone, kLabel, kVector };

// Column indexes into Table::columns; -1 when absent.
struct ColumnSelection {
  InputKind input = InputKind::kVector;
  // kNone for predict and for `next` stores: label and target columns are then only skipped.
  TargetKind target = TargetKind::kNone;
  int id = -1;
  int label = -1;
  std::vector<int> targets;
  int text = -1;
  int image = -1;
  int sequence = -1;
  std::vector<int> features;
};

// Picks the columns for a store with `output`. With `require_targets` (adapt, forget) the
// store's target columns must be present; without it (predict) label and target columns are
// only recognized, so that they are not taken for features.
absl::StatusOr<ColumnSelection> SelectColumns(const Table& table, const ColumnOptions& options,
                                              InputKind input, const adapt::v1::OutputSpec& output,
                                              bool require_targets);

// The input of one row.
absl::StatusOr<adapt::v1::Input> RowInput(const Table& table, const ColumnSelection& selection,
                                          size_t row);

// One example per row: input, target (label or vector, when selected) and id.
absl::StatusOr<std::vector<adapt::v1::Example>> BuildExamples(const Table& table,
                                                              const ColumnSelection& selection);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_COLUMNS_H_
