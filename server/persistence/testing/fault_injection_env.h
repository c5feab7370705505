// FaultInjectionEnv: an Env for tests (never linked into the server) that passes every call
// to a base Env and fails the ones a test arms: an fsync that answers EIO (and, as the Linux
// page cache may after a failed writeback, loses what was written since the file's last good
// sync), a write that finds the disk full (ENOSPC, nothing written), a short write (half the
// bytes reach the file, then ENOSPC), a failed rename (EIO), a failed directory fsync. A fault
// fires on the Nth matching call from when it is armed, for calls whose path matches a glob.
// It can also hold every matching fsync until released, so a test can look at the server
// while a log record is written but not yet durable.
//
// Thread-safe: the server's threads call it while the test arms and releases faults.
#ifndef ADAPTD_SERVER_PERSISTENCE_TESTING_FAULT_INJECTION_ENV_H_
#define ADAPTD_SERVER_PERSISTENCE_TESTING_FAULT_INJECTION_ENV_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/persistence/env.h"

namespace adaptd {

class FaultInjectionEnv final : public Env {
 public:
  enum class What {
    kSyncEio,        // WritableFile::Sync fails with EIO
    kSyncDirEio,     // Env::SyncDir fails with EIO
    kAppendNoSpace,  // WritableFile::Append writes nothing and fails with ENOSPC
    kAppendShort,    // WritableFile::Append writes the first half, then fails with ENOSPC
    kRenameEio,      // Env::RenameFile fails with EIO (matched against both paths)
  };
  struct Fault {
    What what = What::kSyncEio;
    std::string path_glob = "*";  // fnmatch(3) over the whole path; '*' also matches '/'
    int nth = 1;                  // the first matching call that fails (1: the next one)
    int times = 1;                // failing calls from then on; -1: every one
    // kSyncEio: the file is cut back to its size at its last good sync (or at open).
    bool drop_unsynced = true;
  };

  // `base` (default: the POSIX Env) must outlive this Env.
  explicit FaultInjectionEnv(Env* base = Env::Default()) : base_(base) {}

  // Arms a fault; several may be armed at once.
  void Inject(Fault fault) ABSL_LOCKS_EXCLUDED(mu_);
  void ClearFaults() ABSL_LOCKS_EXCLUDED(mu_);
  // How many calls failed by an injected fault so far.
  int failures() const ABSL_LOCKS_EXCLUDED(mu_);

  // Holds every WritableFile::Sync on a path matching `glob` until ReleaseSyncs().
  void BlockSyncs(std::string glob) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a held Sync is waiting, within `timeout`.
  bool WaitForBlockedSync(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  void ReleaseSyncs() ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                bool truncate) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    return base_->ReadFile(path);
  }
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  absl::Status TruncateFile(const std::string& path, uint64_t size) override {
    return base_->TruncateFile(path, size);
  }
  absl::Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  absl::StatusOr<std::vector<DirEntry>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  absl::Status SyncDir(const std::string& dir) override;
  int64_t MonotonicNanos() override { return base_->MonotonicNanos(); }

 private:
  class File;
  struct Armed {
    Fault fault;
    int seen = 0;  // matching calls so far
    int failed = 0;
  };

  // The armed fault that fails this call of `what` on `path` (or `other_path`, when not
  // empty), if any; counts the call.
  std::optional<Fault> Take(What what, const std::string& path, const std::string& other_path = "")
      ABSL_LOCKS_EXCLUDED(mu_);
  void MaybeHoldSync(const std::string& path) ABSL_LOCKS_EXCLUDED(mu_);

  Env* const base_;
  mutable absl::Mutex mu_;
  std::vector<Armed> armed_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::string block_glob_ ABSL_GUARDED_BY(mu_);  // empty: no Sync is held
  int blocked_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_TESTING_FAULT_INJECTION_ENV_H_
