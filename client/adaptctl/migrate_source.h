// The source side of `adaptctl cluster migrate`: a data directory copied to a scratch
// directory, adaptd run on the copy on a loopback port (no tokens, no etcd), and what the
// copy's state database says of its stores. The source directory is only read: it is copied
// once, and everything else runs on the copy.
//
// A ScratchSource belongs to one thread; its destructor stops the adaptd it started.
#ifndef ADAPTD_CLIENT_ADAPTCTL_MIGRATE_SOURCE_H_
#define ADAPTD_CLIENT_ADAPTCTL_MIGRATE_SOURCE_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"

namespace adaptctl {

// FailedPrecondition naming the process when an adaptd has `dir` open: it holds a lock on the
// state database's lock files (LMDB's, data_dir/state/lock.mdb and state/catalog/lock.mdb)
// for as long as it runs. Tested with F_GETLK, which takes no lock and writes nothing.
absl::Status CheckNotInUse(const std::string& dir);

// The members a static cluster's data directory records as drained: the `draining NAME`
// lines of <dir>/cluster.state (which a member of the static cluster kept, docs/CLUSTER.md,
// "Migration"); none when the file is missing.
absl::StatusOr<std::set<std::string>> ReadDrainedMembers(const std::string& dir);

// What a stopped server's state database holds of each store ("tenant/store"): the example
// ids it applied most recently, oldest first (the durable mark of its stored state), which an
// ExportStore file does not carry (none for a store whose recovery failed).
struct StoredStore {
  std::vector<std::string> applied_ids;
};
absl::StatusOr<std::map<std::string, StoredStore>> ReadStoredStores(const std::string& dir);

class ScratchSource {
 public:
  // Copies `source_dir` to `scratch_dir` (which must not exist) after CheckNotInUse.
  static absl::StatusOr<std::unique_ptr<ScratchSource>> Create(const std::string& source_dir,
                                                               const std::string& scratch_dir,
                                                               const std::string& adaptd,
                                                               std::vector<std::string> extra_args);
  ~ScratchSource();
  ScratchSource(const ScratchSource&) = delete;
  ScratchSource& operator=(const ScratchSource&) = delete;

  // Starts adaptd on the copy and waits until it serves (at most `wait`); its output goes to
  // <scratch_dir>.log, whose end an error quotes.
  absl::Status Start(absl::Duration wait);
  // SIGTERM and wait for the exit: the server writes every changed store's state first.
  absl::Status Stop();
  // A client of the running server (no token, plaintext).
  absl::StatusOr<std::unique_ptr<adaptd::Client>> Connect() const;

  const std::string& copy_dir() const { return copy_dir_; }

 private:
  ScratchSource(std::string copy_dir, std::string adaptd, std::vector<std::string> extra_args)
      : copy_dir_(std::move(copy_dir)),
        adaptd_(std::move(adaptd)),
        extra_args_(std::move(extra_args)) {}
  std::string LogTail() const;

  const std::string copy_dir_;
  const std::string adaptd_;
  const std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  std::string address_;
};

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_MIGRATE_SOURCE_H_
