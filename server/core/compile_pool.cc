#include "server/core/compile_pool.h"

#include <algorithm>

namespace adaptd {

CompilePool::CompilePool(int threads, Observer observer, Log log)
    : observer_(std::move(observer)), log_(std::move(log)) {
  threads = std::max(1, threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

CompilePool::~CompilePool() { Stop(); }

void CompilePool::Submit(std::shared_ptr<Store> store, adapt::v1::CompileRequest request, Done done,
                         std::shared_ptr<const BaseReadout> base) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      explicit_.push_back({std::move(store), std::move(request), std::move(done), std::move(base)});
      work_changed_.Signal();
      return;
    }
  }
  done(absl::UnavailableError("the server is shutting down"));
}

void CompilePool::ScheduleAuto(const std::shared_ptr<Store>& store, absl::Duration delay,
                               bool urgent) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  const absl::Time due = absl::Now() + delay;
  auto [it, inserted] = auto_.try_emplace(store.get(), Auto{store, due, urgent});
  if (!inserted) {
    Auto& pending = it->second;
    if (urgent) {
      pending.urgent = true;
      pending.due = std::min(pending.due, due);
    } else if (!pending.urgent) {
      pending.due = std::max(pending.due, due);
    }
  }
  // A waiting thread sleeps until the earliest due time it saw; wake them all to re-read it
  // (a new entry may be due sooner than anything they know of).
  work_changed_.SignalAll();
}

size_t CompilePool::scheduled() const {
  absl::MutexLock lock(&mu_);
  return auto_.size();
}

void CompilePool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    auto_.clear();
    work_changed_.SignalAll();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

bool CompilePool::HasWorkLocked() const {
  if (stopping_ || !explicit_.empty()) return true;
  const absl::Time now = absl::Now();
  for (const auto& [key, a] : auto_) {
    if (a.due <= now) return true;
  }
  return false;
}

void CompilePool::Loop() {
  for (;;) {
    std::shared_ptr<Store> store;
    adapt::v1::CompileRequest request;
    Done done;
    std::shared_ptr<const BaseReadout> base;
    bool automatic = false;
    {
      absl::MutexLock lock(&mu_);
      // Readiness depends on the clock, which no mutex release announces: sleep until the
      // earliest due time or until the work changes, then look again.
      while (!HasWorkLocked()) {
        absl::Time next = absl::InfiniteFuture();
        for (const auto& [key, a] : auto_) next = std::min(next, a.due);
        work_changed_.WaitWithDeadline(&mu_, next);
      }
      if (!explicit_.empty()) {
        Explicit e = std::move(explicit_.front());
        explicit_.pop_front();
        store = std::move(e.store);
        request = std::move(e.request);
        done = std::move(e.done);
        base = std::move(e.base);
      } else if (stopping_) {
        return;
      } else {
        const absl::Time now = absl::Now();
        for (auto it = auto_.begin(); it != auto_.end(); ++it) {
          if (it->second.due <= now) {
            store = it->second.store.lock();
            auto_.erase(it);
            break;
          }
        }
        if (store == nullptr) continue;  // the store was deleted
        automatic = true;
      }
    }
    // An explicit compile may have taken in every change since this request was made.
    if (automatic && !store->ChangedSinceCompile()) continue;
    absl::StatusOr<adapt::v1::CompileResponse> result = Run(*store, request, base.get(), automatic);
    if (observer_) observer_(*store, result, automatic);
    if (done) done(std::move(result));
  }
}

absl::StatusOr<adapt::v1::CompileResponse> CompilePool::Run(
    Store& store, const adapt::v1::CompileRequest& request, const BaseReadout* base,
    bool automatic) const {
  absl::StatusOr<std::unique_ptr<StagedCompile>> staged = store.SolveCompile(request, base);
  if (!staged.ok()) return staged.status();
  Published then;
  if (log_ != nullptr) {
    // Dropped unpublished when its record cannot be made durable.
    absl::StatusOr<Published> logged = log_(store, request, base, automatic);
    if (!logged.ok()) return logged.status();
    then = *std::move(logged);
  }
  absl::StatusOr<adapt::v1::CompileResponse> published = store.PublishCompile(*std::move(staged));
  if (published.ok() && then != nullptr) then();
  return published;
}

}  // namespace adaptd
