#include "client/adaptctl/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/adaptctl/csv.h"
#include "client/adaptctl/jsonl.h"

namespace adaptctl {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int error = errno;
  const std::string reason = std::strerror(error);
  if (error == ENOENT) return absl::NotFoundError(absl::StrCat(what, " ", path, ": ", reason));
  if (error == EACCES) {
    return absl::PermissionDeniedError(absl::StrCat(what, " ", path, ": ", reason));
  }
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", reason));
}

}  // namespace

bool IsStdio(absl::string_view path) { return path == "-"; }

bool IsJsonLinesPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  return absl::EndsWith(lower, ".jsonl") || absl::EndsWith(lower, ".ndjson");
}

absl::StatusOr<std::string> ReadBytes(const std::string& path) {
  std::ostringstream contents;
  if (IsStdio(path)) {
    contents << std::cin.rdbuf();
    if (std::cin.bad()) return absl::UnavailableError("cannot read stdin");
    return contents.str();
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("cannot open", path);
  contents << in.rdbuf();
  if (in.bad()) return ErrnoError("cannot read", path);
  return contents.str();
}

absl::Status WriteBytes(const std::string& path, absl::string_view bytes) {
  if (IsStdio(path)) {
    std::cout.write(bytes.data(), bytes.size());
    std::cout.flush();
    if (!std::cout) return absl::UnavailableError("cannot write stdout");
    return absl::OkStatus();
  }
  const std::string temporary = absl::StrCat(path, ".tmp");
  {
    errno = 0;
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoError("cannot create", temporary);
    out.write(bytes.data(), bytes.size());
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      return ErrnoError("cannot write", temporary);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    absl::Status status = ErrnoError("cannot rename to", path);
    std::remove(temporary.c_str());
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<Table> ReadTable(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadBytes(path);
  if (!bytes.ok()) return bytes.status();
  const std::string source = IsStdio(path) ? "stdin" : path;
  if (!IsStdio(path) && IsJsonLinesPath(path)) return ParseJsonLines(*bytes, source);
  return ParseCsv(*bytes, source);
}

absl::Status WriteTable(const std::string& path, const OutputTable& table) {
  if (!IsStdio(path) && IsJsonLinesPath(path)) return WriteBytes(path, FormatJsonLines(table));
  return WriteBytes(path, FormatCsv(table));
}

}  // namespace adaptctl
