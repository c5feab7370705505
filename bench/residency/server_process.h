// The adaptd process under test, seen from outside as an operator sees it: started with
// posix_spawn, stopped with a signal (SIGTERM: it shuts down and checkpoints; SIGKILL: a
// crash), its resident set read from /proc/PID/status and its data directory measured the way
// `du` does (allocated blocks). It inherits the driver's niceness.
//
// Thread safety: a ServerProcess is used by one thread; the free functions are thread-safe.
#ifndef ADAPTD_BENCH_RESIDENCY_SERVER_PROCESS_H_
#define ADAPTD_BENCH_RESIDENCY_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd::bench {

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  // A process still running is killed (SIGKILL) and reaped, so a failed run leaves none behind.
  ~ServerProcess();

  // Starts `binary` with `args`, stdout and stderr appended to `log_path`.
  absl::Status Start(const std::string& binary, const std::vector<std::string>& args,
                     const std::string& log_path);
  // Sends `signal` and waits up to `timeout_s` for the process to exit; returns the seconds
  // from the signal to the exit. DEADLINE_EXCEEDED (the process is then killed) when it does
  // not exit in time; INTERNAL when it exits with a failure after SIGTERM.
  absl::StatusOr<double> Stop(int signal, double timeout_s);
  // FAILED_PRECONDITION naming the exit status when the process is no longer running.
  absl::Status CheckRunning();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// The resident set of a process, from /proc/PID/status: VmRSS and the two parts that matter
// here, anonymous memory (the heap: stores, allocator slack) and file-backed pages (the state
// database is memory-mapped, so pages it read count as resident until the kernel drops them).
struct ResidentSet {
  int64_t rss_bytes = 0;   // VmRSS
  int64_t anon_bytes = 0;  // RssAnon
  int64_t file_bytes = 0;  // RssFile
};
absl::StatusOr<ResidentSet> ResidentSetOf(pid_t pid);

// Bytes allocated on disk below `dir` (st_blocks × 512 over every file, as `du` counts).
absl::StatusOr<int64_t> DiskBytes(const std::string& dir);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then closed).
absl::StatusOr<int> FreePort();

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_RESIDENCY_SERVER_PROCESS_H_
