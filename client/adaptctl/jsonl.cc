#include "client/adaptctl/jsonl.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/adaptctl/numbers.h"
#include "nlohmann/json.hpp"

namespace adaptctl {
namespace {

// Keeps the keys in file order: the order of feature columns matters.
using Json = nlohmann::ordered_json;

std::string JsonString(const std::string& text) {
  return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The cell text of a scalar JSON value; false for objects and arrays.
bool ScalarText(const Json& value, std::string* text) {
  switch (value.type()) {
    case Json::value_t::string:
      *text = value.get<std::string>();
      return true;
    case Json::value_t::null:
      text->clear();
      return true;
    case Json::value_t::boolean:
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      *text = value.dump();
      return true;
    default:
      return false;
  }
}

// Collects the rows as (column, text) pairs while the column list grows.
class JsonLinesBuilder {
 public:
  explicit JsonLinesBuilder(absl::string_view source) { table_.source = std::string(source); }

  absl::Status AddLine(absl::string_view line, int line_number) {
    Json object = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) return Error(line_number, "not valid JSON");
    if (!object.is_object()) return Error(line_number, "expected a JSON object");
    std::vector<std::pair<int, std::string>> cells;
    for (auto it = object.begin(); it != object.end(); ++it) {
      std::string text;
      if (it.value().is_array()) {
        for (size_t i = 0; i < it.value().size(); ++i) {
          if (!ScalarText(it.value()[i], &text)) {
            return Error(line_number, absl::StrCat("\"", it.key(),
                                                   "\": nested values are not "
                                                   "supported"));
          }
          cells.emplace_back(Column(absl::StrCat(it.key(), "[", i, "]")), std::move(text));
        }
      } else if (ScalarText(it.value(), &text)) {
        cells.emplace_back(Column(it.key()), std::move(text));
      } else {
        return Error(line_number,
                     absl::StrCat("\"", it.key(), "\": nested objects are not supported"));
      }
    }
    pending_.push_back(std::move(cells));
    table_.lines.push_back(line_number);
    return absl::OkStatus();
  }

  Table Finish() && {
    for (auto& cells : pending_) {
      std::vector<std::string> row(table_.columns.size());
      for (auto& [column, text] : cells) row[column] = std::move(text);
      table_.rows.push_back(std::move(row));
    }
    return std::move(table_);
  }

 private:
  int Column(const std::string& name) {
    auto [it, inserted] = index_.try_emplace(name, static_cast<int>(table_.columns.size()));
    if (inserted) table_.columns.push_back(name);
    return it->second;
  }

  absl::Status Error(int line_number, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(table_.source, ":", line_number, ": ", what));
  }

  Table table_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<std::vector<std::pair<int, std::string>>> pending_;
};

}  // namespace

absl::StatusOr<Table> ParseJsonLines(absl::string_view text, absl::string_view source) {
  JsonLinesBuilder builder(source);
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::Status status = builder.AddLine(line, line_number);
    if (!status.ok()) return status;
  }
  return std::move(builder).Finish();
}

std::string FormatJsonLines(const OutputTable& table) {
  std::string out;
  for (const std::vector<Cell>& row : table.rows) {
    out.push_back('{');
    for (size_t i = 0; i < row.size() && i < table.columns.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += JsonString(table.columns[i]);
      out.push_back(':');
      const Cell& cell = row[i];
      if (const std::string* text = std::get_if<std::string>(&cell)) {
        out += JsonString(*text);
      } else if (const float* number = std::get_if<float>(&cell);
                 number && std::isfinite(*number)) {
        out += FormatFloat(*number);
      } else {
        out += "null";
      }
    }
    out += "}\n";
  }
  return out;
}

}  // namespace adaptctl
