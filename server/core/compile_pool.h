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

  // Makes a solved compile's record durable, between its solve (Store::SolveCompile) and its
  // publication (Store::PublishCompile): OK publishes it, then runs the function returned (when
  // not null); an error publishes nothing (the previous version keeps serving) and is the
  // compile's result. `request` is the explicit compile's (empty for an automatic one), `base`
  // its copy of the base (refresh_base).
  using Published = std::function<void()>;
  using Log = std::function<absl::StatusOr<Published>(const Store&,
                                                      const adapt::v1::CompileRequest& request,
                                                      const BaseReadout* base, bool automatic)>;

  // Without `log`, a compile is published as soon as it is solved.
  CompilePool(int threads, Observer observer, Log log = nullptr);
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Solves store's compile of `request` on a pool thread (with `base`, CompileRequest.refresh_base,
  // against that copy of the base), logs it, publishes it, and hands the result to `done` there.
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
  // Solve, log, publish.
  absl::StatusOr<adapt::v1::CompileResponse> Run(Store& store,
                                                 const adapt::v1::CompileRequest& request,
                                                 const BaseReadout* base, bool automatic) const;
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Observer observer_;
  Log log_;
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
