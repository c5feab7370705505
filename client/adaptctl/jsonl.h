// JSON Lines tables: one JSON object per line, blank lines skipped. Stateless; thread-safe.
//
// Reading: the columns are the keys in order of first appearance; a key missing from a line
// is an empty cell. Strings keep their text, numbers and booleans are printed back as JSON,
// null is empty, and an array of scalars `"x": [a, b]` becomes the columns "x[0]", "x[1]".
// Writing: one object per row with the columns as keys; empty cells are null.
#ifndef ADAPTD_CLIENT_ADAPTCTL_JSONL_H_
#define ADAPTD_CLIENT_ADAPTCTL_JSONL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/adaptctl/table.h"

namespace adaptctl {

absl::StatusOr<Table> ParseJsonLines(absl::string_view text, absl::string_view source);

std::string FormatJsonLines(const OutputTable& table);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_JSONL_H_
