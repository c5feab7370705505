// Test-only: an HTTP server on a free loopback port that answers each request with the next of
// a scripted list of replies (the last one repeating) and records what it received, so a test
// can check the bytes a client puts on the wire and how it retries. One connection per request
// ("Connection: close"), served on one thread. Thread-safe.
#ifndef ADAPTD_SERVER_OBJSTORE_TESTING_RECORDING_HTTP_SERVER_H_
#define ADAPTD_SERVER_OBJSTORE_TESTING_RECORDING_HTTP_SERVER_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace adaptd::testing_util {

class RecordingHttpServer {
 public:
  struct Reply {
    int status = 200;
    std::string body;
  };
  explicit RecordingHttpServer(std::vector<Reply> replies);
  ~RecordingHttpServer();
  RecordingHttpServer(const RecordingHttpServer&) = delete;
  RecordingHttpServer& operator=(const RecordingHttpServer&) = delete;

  std::string endpoint() const;  // "http://127.0.0.1:PORT"
  // Each request received so far: its head (request line and headers) and body.
  std::vector<std::string> requests() const;

 private:
  void Serve();
  void Answer(int connection);

  const std::vector<Reply> replies_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  std::vector<std::string> requests_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace adaptd::testing_util

#endif  // ADAPTD_SERVER_OBJSTORE_TESTING_RECORDING_HTTP_SERVER_H_
