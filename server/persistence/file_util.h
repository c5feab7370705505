// Atomic file replacement for the durable state (snapshots, failure markers), over an Env.
// Thread-compatible (no shared state of its own).
#ifndef ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_
#define ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "server/persistence/env.h"

namespace adaptd {

// Replaces `path` with `data` so that a crash leaves either the old or the new file: writes
// `path`.tmp, fsyncs it (when `sync`), renames it over `path` and fsyncs the directory. On
// any error the old file is untouched, the temporary is removed and the error is the failed
// step's ("rename of ….tmp onto … failed: …").
absl::Status WriteFileAtomically(Env* env, const std::string& path, std::string_view data,
                                 bool sync);

// The directory part of `path` ("." for a bare name).
std::string ParentDir(const std::string& path);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_FILE_UTIL_H_
