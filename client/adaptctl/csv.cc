#include "client/adaptctl/csv.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/adaptctl/numbers.h"

namespace adaptctl {
namespace {

struct Record {
  int line = 0;
  std::vector<std::string> fields;
};

// Splits `text` into records. Quoted fields may hold anything; a '"' inside an unquoted field
// is kept as a literal character.
class CsvScanner {
 public:
  CsvScanner(absl::string_view text, absl::string_view source) : text_(text), source_(source) {}

  absl::StatusOr<std::vector<Record>> Scan() {
    for (size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_quotes_) {
        if (c == '"') {
          if (i + 1 < text_.size() && text_[i + 1] == '"') {
            field_.push_back('"');
            ++i;
          } else {
            in_quotes_ = false;
            closed_quote_ = true;
          }
        } else {
          if (c == '\n') ++line_;
          field_.push_back(c);
        }
        continue;
      }
      if (c == ',') {
        EndField();
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && i + 1 < text_.size() && text_[i + 1] == '\n') ++i;
        EndRecord();
        ++line_;
        record_line_ = line_;
      } else if (closed_quote_) {
        return absl::InvalidArgumentError(absl::StrCat(
            source_, ":", line_, ": unexpected character after a closing quote in field ",
            fields_.size() + 1));
      } else if (c == '"' && field_.empty() && !quoted_) {
        in_quotes_ = true;
        quoted_ = true;
      } else {
        field_.push_back(c);
      }
    }
    if (in_quotes_) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ":", record_line_, ": quoted field is never closed"));
    }
    EndRecord();
    return std::move(records_);
  }

 private:
  void EndField() {
    fields_.push_back(std::move(field_));
    field_.clear();
    quoted_ = false;
    closed_quote_ = false;
  }

  void EndRecord() {
    const bool blank = fields_.empty() && field_.empty() && !quoted_;
    if (!blank) {
      EndField();
      records_.push_back(Record{record_line_, std::move(fields_)});
    }
    fields_.clear();
    field_.clear();
    quoted_ = false;
    closed_quote_ = false;
  }

  absl::string_view text_;
  absl::string_view source_;
  int line_ = 1;
  int record_line_ = 1;
  bool in_quotes_ = false;     // inside "..."
  bool quoted_ = false;        // the current field started with a quote
  bool closed_quote_ = false;  // the current field's closing quote was seen
  std::string field_;
  std::vector<std::string> fields_;
  std::vector<Record> records_;
};

bool NeedsQuotes(absl::string_view field) {
  return field.find_first_of(",\"\r\n") != absl::string_view::npos;
}

std::string CellText(const Cell& cell) {
  if (const std::string* text = std::get_if<std::string>(&cell)) return *text;
  if (const float* number = std::get_if<float>(&cell)) return FormatFloat(*number);
  return "";
}

}  // namespace

absl::StatusOr<Table> ParseCsv(absl::string_view text, absl::string_view source) {
  if (absl::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  absl::StatusOr<std::vector<Record>> records = CsvScanner(text, source).Scan();
  if (!records.ok()) return records.status();
  if (records->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": empty file, expected a header row"));
  }
  Table table;
  table.source = std::string(source);
  table.columns = std::move((*records)[0].fields);
  absl::flat_hash_set<std::string> seen;
  for (const std::string& column : table.columns) {
    if (!seen.insert(column).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", (*records)[0].line, ": duplicate column \"", column, "\""));
    }
  }
  table.rows.reserve(records->size() - 1);
  table.lines.reserve(records->size() - 1);
  for (size_t r = 1; r < records->size(); ++r) {
    Record& record = (*records)[r];
    if (record.fields.size() != table.columns.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", record.line, ": ", record.fields.size(),
                       " fields, the header has ", table.columns.size()));
    }
    table.rows.push_back(std::move(record.fields));
    table.lines.push_back(record.line);
  }
  return table;
}

std::string FormatCsvRecord(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out.push_back(',');
    const std::string& field = fields[i];
    if (!NeedsQuotes(field)) {
      out += field;
      continue;
    }
    out.push_back('"');
    for (char c : field) {
      if (c == '"') out.push_back('"');
      out.push_back(c);
    }
    out.push_back('"');
  }
  // A record of one empty field would read back as a blank line.
  if (fields.size() == 1 && fields[0].empty()) out = "\"\"";
  out.push_back('\n');
  return out;
}

std::string FormatCsv(const OutputTable& table) {
  std::string out = FormatCsvRecord(table.columns);
  std::vector<std::string> fields;
  for (const std::vector<Cell>& row : table.rows) {
    fields.clear();
    for (const Cell& cell : row) fields.push_back(CellText(cell));
    out += FormatCsvRecord(fields);
  }
  return out;
}

}  // namespace adaptctl
