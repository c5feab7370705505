#include "server/core/executor.h"

#include <algorithm>

namespace adaptd {

Executor::Executor(int threads, WaitObserver on_wait) : on_wait_(std::move(on_wait)) {
  threads = std::max(1, threads);
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

Executor::~Executor() { Stop(); }

bool Executor::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  tasks_.push_back({std::move(task), on_wait_ ? absl::Now() : absl::InfinitePast()});
  return true;
}

void Executor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t Executor::queued() const {
  absl::MutexLock lock(&mu_);
  return tasks_.size();
}

void Executor::Loop() {
  for (;;) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Executor* e)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu_) { return e->stopping_ || !e->tasks_.empty(); },
          this));
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    if (on_wait_) on_wait_(absl::Now() - task.submitted);
    task.fn();
  }
}

}  // namespace adaptd
