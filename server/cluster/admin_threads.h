// AdminThreads: the threads an operator's long cluster calls run on (a status gathered from the
// members, a drain waited for), one per call, each ending with its call. Those that finished
// are joined as new ones start, the rest by Close. Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_ADMIN_THREADS_H_
#define ADAPTD_SERVER_CLUSTER_ADMIN_THREADS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace adaptd {

class AdminThreads {
 public:
  ~AdminThreads() { Close(); }

  // Runs `fn` on a thread of its own; false once closed, when it does not run.
  bool Run(std::function<void()> fn) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    running_.push_back({std::thread([fn = std::move(fn), done] {
                          fn();
                          done->store(true);
                        }),
                        done});
    return true;
  }
  // Runs nothing more, and waits for every thread started.
  void Close() ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<Running> running;
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      running.swap(running_);
    }
    for (Running& r : running) r.thread.join();
  }

 private:
  struct Running {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Running> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_ADMIN_THREADS_H_
