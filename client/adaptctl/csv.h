// CSV with a header row (RFC 4180 and the usual variants): fields separated by commas, quoted
// with '"' when they hold commas, quotes ("" inside quotes) or line breaks; LF or CRLF line
// ends; an optional UTF-8 byte order mark; blank lines skipped. Stateless; thread-safe.
#ifndef ADAPTD_CLIENT_ADAPTCTL_CSV_H_
#define ADAPTD_CLIENT_ADAPTCTL_CSV_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/adaptctl/table.h"

namespace adaptctl {

// Parses `text`; the first record names the columns. Every record must have as many fields as
// the header. Errors name `source` and the line, e.g. "data.csv:7: 3 fields, the header has 4".
absl::StatusOr<Table> ParseCsv(absl::string_view text, absl::string_view source);

// One record, fields quoted where needed, ending with "\n".
std::string FormatCsvRecord(const std::vector<std::string>& fields);

// The header and every row; numbers in their shortest exact form, empty cells empty.
std::string FormatCsv(const OutputTable& table);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_CSV_H_
