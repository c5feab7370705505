// Env: the file system and clock as the durable state uses them (the write-ahead log, group
// commit, snapshots, recovery and failure markers), behind one interface so that tests can
// put a fault-injecting implementation (server/persistence/testing/fault_injection_env.h)
// under a real Journal and Engine. Modelled on leveldb's Env, cut down to what
// server/persistence calls.
//
// Errors are absl::Status naming the operation, the path and the system's reason
// ("fsync of data/wal/wal-….log failed: Input/output error"); I/O errors are Unavailable.
//
// Thread-safety: an Env is shared by every thread of a server and must be thread-safe.
// A WritableFile belongs to one thread at a time (the log writer, or one snapshot write).
#ifndef ADAPTD_SERVER_PERSISTENCE_ENV_H_
#define ADAPTD_SERVER_PERSISTENCE_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd {

// A file open for appending.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` at the end. On error a prefix of it may have reached the file (a
  // short write); the caller must treat the file's tail as unknown.
  virtual absl::Status Append(std::string_view data) = 0;
  // Makes everything appended durable (fdatasync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
  virtual const std::string& path() const = 0;
};

struct DirEntry {
  std::string name;  // the file name, without the directory
  bool is_directory = false;
};

class Env {
 public:
  virtual ~Env() = default;

  // The POSIX implementation (PosixEnv in env.cc), alive for the whole process.
  static Env* Default();

  // Opens `path` for appending, creating it (mode 0644); `truncate` empties an existing file.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                        bool truncate) = 0;
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Atomically replaces `to` by `from` (rename(2)).
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // OK when `path` does not exist.
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // Shrinks `path` to `size` bytes and fsyncs it.
  virtual absl::Status TruncateFile(const std::string& path, uint64_t size) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;
  // The entries of `dir` (not "." and ".."), in no particular order.
  virtual absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) = 0;
  // fsync of a directory, so that a create, rename or unlink in it survives a crash.
  virtual absl::Status SyncDir(const std::string& dir) = 0;

  // A monotonic clock in nanoseconds (for durations, such as the log's fsync latency).
  virtual int64_t MonotonicNanos() = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_ENV_H_
