// Tables as adaptctl reads and writes them: a header of column names and rows of cells.
//
// An input Table keeps every cell as text, exactly as the file spelled it (CSV) or as the
// JSON value printed back (JSON Lines); the columns' roles are decided later (columns.h).
// An OutputTable holds typed cells so that JSON Lines can write numbers as numbers.
// Plain values: no internal synchronization.
#ifndef ADAPTD_CLIENT_ADAPTCTL_TABLE_H_
#define ADAPTD_CLIENT_ADAPTCTL_TABLE_H_

#include <string>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"

namespace adaptctl {

struct Table {
  // Where the rows came from, for error messages ("data.csv", "stdin").
  std::string source;
  std::vector<std::string> columns;
  // rows[i] has exactly columns.size() cells; a missing value is an empty cell.
  std::vector<std::vector<std::string>> rows;
  // lines[i]: the 1-based line of the file on which row i starts.
  std::vector<int> lines;

  // Index of the column named `name`, or -1.
  int ColumnIndex(absl::string_view name) const {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

// An empty cell, a text, or a number.
using Cell = std::variant<std::monostate, std::string, float>;

struct OutputTable {
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_TABLE_H_
