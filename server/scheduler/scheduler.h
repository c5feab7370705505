// Scheduler: the one queue every request of adaptd passes through before it computes.
//
// Tasks wait in per-tenant FIFO queues, bounded per tenant and in total (a full queue refuses
// at once with RESOURCE_EXHAUSTED). Workers serve the tenants with pending work round-robin,
// one task per tenant per turn, so a tenant that floods the server delays another tenant's
// request by at most one task per tenant and worker. Before a task runs, a passed deadline
// drops it with DEADLINE_EXCEEDED and a cancelled call with CANCELLED, without running it.
// Tasks that name a lane (e.g. one store's writes) run one at a time in arrival order.
// Batchable tasks (predicts) are handed to the batch runner together: a batch collects them
// round-robin over tenants, up to max_batch_size, waiting at most max_queue_delay after the
// first one's arrival for more to come, and only while another worker is busy (an otherwise
// idle server runs a lone predict at once).
//
// Thread safety: every method may be called from any thread. Task callbacks run on the
// workers and must not call Stop.
#ifndef ADAPTD_SERVER_SCHEDULER_SCHEDULER_H_
#define ADAPTD_SERVER_SCHEDULER_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/config/defaults.h"

namespace adaptd {

// What a batch runner receives for a batchable task; the submitter subclasses it.
class BatchItem {
 public:
  virtual ~BatchItem() = default;
};

struct Task {
  // The tenant whose queue the task waits in ("" for calls that name none).
  std::string tenant;
  // Not empty: tasks with the same lane run one at a time, in arrival order.
  std::string lane;
  absl::Time deadline = absl::InfiniteFuture();
  // Asked right before the task runs; true drops it with CANCELLED. May be empty.
  std::function<bool()> cancelled;
  // Called exactly once on a worker: OK means do the work now; otherwise the status says why
  // the work will not run (DEADLINE_EXCEEDED, CANCELLED). For a batchable task it is called
  // only with such a status: the batch runner does the work.
  std::function<void(const absl::Status&)> run;
  // Set: the task is batchable and this is what the batch runner gets (then `lane` must be
  // empty).
  std::unique_ptr<BatchItem> batch_item;
};

struct SchedulerOptions {
  int workers = 2;
  // 1 turns batching off: each batchable task is a batch of one.
  int max_batch_size = defaults::kMaxBatchSize;
  absl::Duration max_queue_delay = absl::Microseconds(defaults::kMaxQueueDelayUs);
  size_t queue_capacity = defaults::kQueueCapacity;
  size_t tenant_queue_capacity = defaults::kTenantQueueCapacity;
  // Runs a batch of live batchable tasks' items (never empty). Required.
  std::function<void(std::vector<std::unique_ptr<BatchItem>>& batch)> run_batch;
  // Observers (may be empty): how long each task waited, and the size of each batch run.
  std::function<void(absl::Duration waited)> on_wait;
  std::function<void(size_t size)> on_batch;
};

class Scheduler {
 public:
  // InvalidArgument naming the option when one is out of range.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `task`. ResourceExhausted (naming the queue and its capacity) when the tenant's
  // queue or the whole queue is full, Unavailable once stopping; the task is then dropped
  // without any callback.
  absl::Status Submit(Task task);

  // Runs what is queued (dropping what has expired or was cancelled), then joins the workers.
  void Stop();

  // Tasks waiting (not yet started).
  size_t queued() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Queued {
    Task task;
    absl::Time enqueued;
  };
  struct Picked {
    std::vector<Queued> tasks;
    bool batch = false;
  };

  explicit Scheduler(SchedulerOptions options);
  void Loop();
  // The next runnable task in round-robin order over tenants; only batchable ones when
  // `batchable_only`. False when none is runnable now.
  bool PickLocked(bool batchable_only, Queued* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a task may start now (its lane is free; batchable tasks wait while another
  // worker is forming a batch).
  bool RunnableLocked(const Queued& q) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds batchable tasks to `batch` until full, waiting up to the max queue delay.
  void FillBatchLocked(std::vector<Queued>* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunPicked(Picked picked);
  // DeadlineExceeded / Cancelled when `q` must not run; OK otherwise.
  static absl::Status Expired(const Queued& q, absl::Time now);

  const SchedulerOptions options_;
  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;  // signalled when a task may have become runnable
  absl::flat_hash_map<std::string, std::deque<Queued>> queues_ ABSL_GUARDED_BY(mu_);
  // Tenants with queued tasks, in round-robin order (front is served next).
  std::deque<std::string> ring_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> busy_lanes_ ABSL_GUARDED_BY(mu_);
  size_t total_ ABSL_GUARDED_BY(mu_) = 0;
  bool forming_batch_ ABSL_GUARDED_BY(mu_) = false;
  int busy_workers_ ABSL_GUARDED_BY(mu_) = 0;  // workers running tasks
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SCHEDULER_SCHEDULER_H_
