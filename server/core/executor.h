// Executor: a fixed pool of threads running closures in submission order (FIFO across the
// pool). Thread-safe. Stop() runs what is queued, then joins; Submit after Stop is dropped.
// An optional observer hears, on the worker, how long each closure waited in the queue.
#ifndef ADAPTD_SERVER_CORE_EXECUTOR_H_
#define ADAPTD_SERVER_CORE_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace adaptd {

class Executor {
 public:
  using WaitObserver = std::function<void(absl::Duration waited)>;
  explicit Executor(int threads, WaitObserver on_wait = nullptr);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Returns false (and drops `task`) once stopping.
  bool Submit(std::function<void()> task);
  void Stop();
  size_t queued() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  struct Task {
    std::function<void()> fn;
    absl::Time submitted;
  };
  const WaitObserver on_wait_;
  std::deque<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_EXECUTOR_H_
