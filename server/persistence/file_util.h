// Small POSIX file helpers for the durable state: whole-file reads, atomic replacement
// (write a temporary, fsync it, rename, fsync the directory) and directory syncs. Errors are
// absl::Status naming the path and the system's reason. Thread-compatible (no shared state).
#ifndef ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_
#define ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd {

absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Replaces `path` with `data` so that a crash leaves either the old or the new file: writes
// `path`.tmp, fsyncs it (when `sync`), renames it over `path` and fsyncs the directory.
absl::Status WriteFileAtomically(const std::string& path, std::string_view data, bool sync);

// fsync of a directory, so that a create, rename or unlink in it survives a crash.
absl::Status SyncDirectory(const std::string& dir);

// Writes all of `data` to `fd`, retrying short writes and EINTR.
absl::Status WriteAll(int fd, std::string_view data, const std::string& path);

// Shrinks `path` to `size` bytes and fsyncs it (drops a torn log tail).
absl::Status TruncateFile(const std::string& path, uint64_t size);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_
