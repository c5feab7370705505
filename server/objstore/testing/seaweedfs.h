// Test-only: SeaweedFS (`weed server` with its S3 gateway) as a child process on free loopback
// ports, with one S3 identity so that every request's SigV4 signature is checked. Its data sit
// in a temporary directory that outlives Stop() and Kill(), so Start() brings the same objects
// back on the same endpoint; the destructor kills it and removes the directory. The child dies
// with the test process (PR_SET_PDEATHSIG). Its output goes to log_path(). Thread-compatible.
#ifndef ADAPTD_SERVER_OBJSTORE_TESTING_SEAWEEDFS_H_
#define ADAPTD_SERVER_OBJSTORE_TESTING_SEAWEEDFS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace adaptd::testing_util {

class SeaweedFs {
 public:
  // Makes the temporary directory, picks the ports and starts the server.
  static absl::StatusOr<std::unique_ptr<SeaweedFs>> Create();
  ~SeaweedFs();
  SeaweedFs(const SeaweedFs&) = delete;
  SeaweedFs& operator=(const SeaweedFs&) = delete;

  // Starts the server (again) on the same directory and ports; returns once S3 answers.
  absl::Status Start();
  // SIGTERM, and the wait for it to exit (SIGKILL past `grace`). SeaweedFS 4.48 takes about
  // 15 s to stop so (its filer waits that long for gRPC streams to end).
  void Stop(absl::Duration grace = absl::Seconds(30));
  // SIGKILL, and the wait for it to exit.
  void Kill();
  bool running() const { return pid_ > 0; }

  std::string endpoint() const;  // "http://127.0.0.1:PORT"
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  const std::string& log_path() const { return log_path_; }
  // How long the last Start() took until S3 answered.
  absl::Duration last_start_time() const { return last_start_time_; }

 private:
  SeaweedFs() = default;
  std::vector<std::string> Arguments() const;
  absl::Status WaitUntilAnswering(absl::Duration limit);
  void Signal(int signal, absl::Duration grace);

  std::string dir_;
  std::string log_path_;
  std::string access_key_ = "adaptdtestkey";
  std::string secret_key_ = "adaptd-test-secret-0123456789";
  // master, master gRPC, volume, volume gRPC, filer, filer gRPC, S3, S3 gRPC.
  std::vector<int> ports_;
  pid_t pid_ = -1;
  absl::Duration last_start_time_;
};

}  // namespace adaptd::testing_util

#endif  // ADAPTD_SERVER_OBJSTORE_TESTING_SEAWEEDFS_H_
