// Reading and writing adaptctl's FILE arguments: "-" is stdin/stdout, a name ending in ".jsonl"
// or ".ndjson" is JSON Lines, anything else is CSV. Stateless; call from one thread (stdin and
// stdout are process-wide).
#ifndef ADAPTD_CLIENT_ADAPTCTL_FILES_H_
#define ADAPTD_CLIENT_ADAPTCTL_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/adaptctl/table.h"

namespace adaptctl {

// True for "-".
bool IsStdio(absl::string_view path);

// True when `path` names a JSON Lines file.
bool IsJsonLinesPath(absl::string_view path);

// The whole content of `path` (stdin for "-"), as bytes.
absl::StatusOr<std::string> ReadBytes(const std::string& path);

// Writes `bytes` to stdout for "-"; otherwise to `path` through a temporary file renamed into
// place, so a failed write never leaves a truncated file under the final name.
absl::Status WriteBytes(const std::string& path, absl::string_view bytes);

// Reads and parses a table in the format `path` names.
absl::StatusOr<Table> ReadTable(const std::string& path);

// Formats and writes a table in the format `path` names.
absl::Status WriteTable(const std::string& path, const OutputTable& table);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_FILES_H_
