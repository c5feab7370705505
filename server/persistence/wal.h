// Wal: the append side of the write-ahead log, with group commit.
//
// Append() frames a record, gives it the next LSN and queues it; it never does I/O, so callers
// may hold their own locks around it (the LSN order is then their order). One writer thread
// takes every record queued while the previous write ran, writes them together and syncs the
// segment once (fdatasync); WaitDurable(lsn) returns when that LSN is on disk. A write or sync
// error is sticky: every later wait answers Unavailable ("write-ahead log: fsync of … failed:
// …"), since after a failed fsync what reached the disk is unknown and a retry could report
// lost pages as durable. All file access goes through WalOptions::env.
//
// Segments are files dir/wal-<first LSN, 20 digits>.log; Rotate() starts a new one and
// RemoveSegmentsBefore() deletes those a checkpoint covers. Thread-safe.
#ifndef ADAPTD_SERVER_PERSISTENCE_WAL_H_
#define ADAPTD_SERVER_PERSISTENCE_WAL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/persistence/env.h"

namespace adaptd {

struct WalOptions {
  std::string dir;
  // false: write without fdatasync (survives a killed process, not a power loss). Unsafe;
  // for benchmarks.
  bool sync = true;
  // Observes each sync's duration in seconds (metrics); may be empty.
  std::function<void(double)> on_sync;
  Env* env = nullptr;  // null: Env::Default(); must outlive the Wal
};

class Wal {
 public:
  // Starts a new segment whose first record gets `next_lsn` (≥ 1). Existing segments stay.
  static absl::StatusOr<std::unique_ptr<Wal>> Open(WalOptions options, uint64_t next_lsn);
  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Queues one record for `key` ("tenant/store") and returns its LSN.
  uint64_t Append(std::string_view key, std::string_view payload) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until every record up to `lsn` is durable (or the log failed).
  absl::Status WaitDurable(uint64_t lsn) ABSL_LOCKS_EXCLUDED(mu_);
  // The LSN the next Append gets.
  uint64_t next_lsn() const ABSL_LOCKS_EXCLUDED(mu_);

  // Makes everything appended durable, then starts a new segment; returns its first LSN.
  // Every record below it is in an older segment.
  absl::StatusOr<uint64_t> Rotate() ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes the segments whose records all have LSNs below `lsn` (never the current one).
  absl::Status RemoveSegmentsBefore(uint64_t lsn) ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes appended to the current segment.
  uint64_t segment_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Writes+syncs done and records appended since Open (group commit makes syncs < records).
  uint64_t syncs() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t records() const ABSL_LOCKS_EXCLUDED(mu_);

  // Writes what is queued and stops the writer; later Appends are never durable.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit Wal(WalOptions options)
      : options_(std::move(options)), env_(options_.env ? options_.env : Env::Default()) {}
  absl::Status OpenSegment(uint64_t first_lsn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriterLoop();

  const WalOptions options_;
  Env* const env_;
  mutable absl::Mutex mu_;
  absl::CondVar work_cv_, durable_cv_;
  // Replaced only by OpenSegment while no write runs (Rotate waits for the writer).
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(mu_);
  std::string pending_ ABSL_GUARDED_BY(mu_);
  uint64_t next_lsn_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t durable_lsn_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segment_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t syncs_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t records_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool rotating_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread writer_;
};

// The segment files in `dir`, sorted by first LSN: (first LSN, path).
absl::StatusOr<std::vector<std::pair<uint64_t, std::string>>> ListSegments(Env* env,
                                                                           const std::string& dir);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_WAL_H_
