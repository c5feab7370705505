// CompilePool: the threads that run store compiles, away from the request threads, and the
// auto-compile timer. Explicit compiles run in submission order; auto compiles are coalesced
// to at most one pending per store. Thread-safe. Stop() finishes queued explicit compiles,
// drops pending auto compiles, and joins.
#ifndef ADAPTD_SERVER_CORE_COMPILE_POOL_H_
#define ADAPTD_SERVER_CORE_COMPILE_POOL_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/store.h"

namespace adaptd {

class CompilePool {
 public:
  using Done = std::function<void(absl::StatusOr<adapt::v1::CompileResponse>)>;
  // Observes every finished compile (explicit or automatic), e.g. for metrics and logs.
  using Observer = std::function<void(
      const Store&, const absl::StatusOr<adapt::v1::CompileResponse>&, bool automatic)>;

  CompilePool(int threads, Observer observer);
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Runs store->Compile(request) on a pool thread and hands the result to `done` there; with
  // `base` (CompileRequest.refresh_base), store->CompileWithBase(request, *base).
  // After Stop, `done` receives Unavailable at once.
  void Submit(std::shared_ptr<Store> store, adapt::v1::CompileRequest request, Done done,
              std::shared_ptr<const BaseReadout> base = nullptr);

  // Asks for an automatic compile of `store` after `delay`. An urgent request (count trigger)
  // runs as soon as a thread is free; a non-urgent one (idle trigger) pushes a pending
  // non-urgent request back to the new time. The pool holds the store weakly.
  // When it is due, a store with nothing new (Store::ChangedSinceCompile) is skipped: no
  // compile, no observer call.
  void ScheduleAuto(const std::shared_ptr<Store>& store, absl::Duration delay, bool urgent);
  // Automatic requests not yet started.
  size_t scheduled() const;

  void Stop();

 private:
  struct Explicit {
    std::shared_ptr<Store> store;
    adapt::v1::CompileRequest request;
    Done done;
    std::shared_ptr<const BaseReadout> base;
  };
  struct Auto {
    std::weak_ptr<Store> store;
    absl::Time due;
    bool urgent = false;
  };

  void Loop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Observer observer_;
  mutable absl::Mutex mu_;
  // Signalled when explicit work arrives, an automatic request is added or moved, or Stop.
  absl::CondVar work_changed_;
  std::deque<Explicit> explicit_ ABSL_GUARDED_BY(mu_);
  std::map<const Store*, Auto> auto_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_COMPILE_POOL_H_
