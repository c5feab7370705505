#include "server/scheduler/scheduler.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(SchedulerOptions options) {
  if (options.workers < 1 || options.workers > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("workers: must be in [1, 1024], got ", options.workers));
  }
  if (options.max_batch_size < 1 || options.max_batch_size > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_size: must be in [1, 4096], got ", options.max_batch_size));
  }
  if (options.max_queue_delay < absl::ZeroDuration() ||
      options.max_queue_delay > absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queue_delay_us: must be in [0, 1000000], got ",
                     absl::ToInt64Microseconds(options.max_queue_delay)));
  }
  if (options.queue_capacity < 1 || options.tenant_queue_capacity < 1) {
    return absl::InvalidArgumentError(options.queue_capacity < 1
                                          ? "queue_capacity: must be at least 1"
                                          : "tenant_queue_capacity: must be at least 1");
  }
  if (!options.run_batch) {
    return absl::InvalidArgumentError("run_batch: a batch runner is required");
  }
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(options)));
}

Scheduler::Scheduler(SchedulerOptions options) : options_(std::move(options)) {
  threads_.reserve(options_.workers);
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { Loop(); });
}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Submit(Task task) {
  if (!task.run) return absl::InvalidArgumentError("task: a run callback is required");
  if (task.batch_item != nullptr && !task.lane.empty()) {
    return absl::InvalidArgumentError("task: a batchable task cannot name a lane");
  }
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  auto it = queues_.find(task.tenant);
  const size_t tenant_queued = it == queues_.end() ? 0 : it->second.size();
  if (tenant_queued >= options_.tenant_queue_capacity) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request queue of tenant '", task.tenant, "' is full (tenant_queue_capacity ",
        options_.tenant_queue_capacity, " requests); retry later"));
  }
  if (total_ >= options_.queue_capacity) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server's request queue is full (queue_capacity ", options_.queue_capacity,
                     " requests); retry later"));
  }
  if (tenant_queued == 0) ring_.push_back(task.tenant);
  std::deque<Queued>& queue = it == queues_.end() ? queues_[task.tenant] : it->second;
  queue.push_back({std::move(task), absl::Now()});
  ++total_;
  // A worker forming a batch waits only for batchable tasks: wake every worker then.
  if (forming_batch_) {
    work_cv_.SignalAll();
  } else {
    work_cv_.Signal();
  }
  return absl::OkStatus();
}

void Scheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    work_cv_.SignalAll();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t Scheduler::queued() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

bool Scheduler::RunnableLocked(const Queued& q) const {
  if (q.task.batch_item != nullptr && forming_batch_) return false;
  return q.task.lane.empty() || !busy_lanes_.contains(q.task.lane);
}

bool Scheduler::PickLocked(bool batchable_only, Queued* out) {
  for (size_t turn = 0, tenants = ring_.size(); turn < tenants; ++turn) {
    std::string tenant = std::move(ring_.front());
    ring_.pop_front();
    std::deque<Queued>& queue = queues_[tenant];
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      const bool eligible = batchable_only ? it->task.batch_item != nullptr : RunnableLocked(*it);
      if (!eligible) continue;
      *out = std::move(*it);
      queue.erase(it);
      --total_;
      if (!out->task.lane.empty()) busy_lanes_.insert(out->task.lane);
      if (queue.empty()) {
        queues_.erase(tenant);
      } else {
        ring_.push_back(std::move(tenant));
      }
      return true;
    }
    ring_.push_back(std::move(tenant));
  }
  return false;
}

void Scheduler::FillBatchLocked(std::vector<Queued>* batch) {
  const size_t max = static_cast<size_t>(options_.max_batch_size);
  const absl::Time close = batch->front().enqueued + options_.max_queue_delay;
  forming_batch_ = true;
  while (batch->size() < max) {
    Queued q;
    if (PickLocked(/*batchable_only=*/true, &q)) {
      batch->push_back(std::move(q));
      continue;
    }
    // Waiting only pays while other work is running (more predicts are then on their way);
    // an otherwise idle server runs what it has at once.
    if (stopping_ || busy_workers_ == 0 || absl::Now() >= close) break;
    work_cv_.WaitWithDeadline(&mu_, close);
  }
  forming_batch_ = false;
  // Batchable tasks that other workers skipped meanwhile are runnable again.
  if (total_ > 0) work_cv_.SignalAll();
}

void Scheduler::Loop() {
  for (;;) {
    std::vector<Queued> picked;
    {
      absl::MutexLock lock(&mu_);
      Queued q;
      while (!PickLocked(/*batchable_only=*/false, &q)) {
        if (stopping_ && total_ == 0) return;
        work_cv_.Wait(&mu_);
      }
      const bool batchable = q.task.batch_item != nullptr;
      picked.push_back(std::move(q));
      if (batchable && options_.max_batch_size > 1) FillBatchLocked(&picked);
      ++busy_workers_;
    }
    const absl::Time now = absl::Now();
    std::vector<std::unique_ptr<BatchItem>> items;
    for (Queued& q : picked) {
      if (options_.on_wait) options_.on_wait(now - q.enqueued);
      const absl::Status status = Expired(q, now);
      if (!status.ok() || q.task.batch_item == nullptr) {
        q.task.run(status);
      } else {
        items.push_back(std::move(q.task.batch_item));
      }
    }
    if (!items.empty()) {
      if (options_.on_batch) options_.on_batch(items.size());
      options_.run_batch(items);
    }
    absl::MutexLock lock(&mu_);
    // A batch being formed waits for more only while some worker is busy: let it re-check.
    if (--busy_workers_ == 0 && forming_batch_) work_cv_.SignalAll();
    if (picked.size() == 1 && !picked.front().task.lane.empty()) {
      busy_lanes_.erase(picked.front().task.lane);
      work_cv_.SignalAll();
    }
  }
}

absl::Status Scheduler::Expired(const Queued& q, absl::Time now) {
  if (now > q.task.deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("the deadline passed while the request waited in the queue (",
                     absl::FormatDuration(now - q.enqueued), ")"));
  }
  if (q.task.cancelled && q.task.cancelled()) {
    return absl::CancelledError("the call was cancelled before it ran");
  }
  return absl::OkStatus();
}

}  // namespace adaptd
