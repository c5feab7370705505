#include "server/scheduler/scheduler.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/scheduler/scheduler_config.h"

namespace adaptd {
namespace {

constexpr absl::Duration kPatience = absl::Seconds(60);

class NumberedItem : public BatchItem {
 public:
  explicit NumberedItem(int n) : n(n) {}
  int n;
};

// Records the order in which work ran, and the sizes of the batches.
class Recorder {
 public:
  void Ran(const std::string& what) {
    absl::MutexLock lock(&mu_);
    order_.push_back(what);
  }
  void Batch(std::vector<std::unique_ptr<BatchItem>>& items) {
    absl::MutexLock lock(&mu_);
    sizes_.push_back(items.size());
    for (auto& item : items) {
      order_.push_back(absl::StrCat("b", static_cast<NumberedItem*>(item.get())->n));
    }
  }
  // Waits (bounded) until `n` entries were recorded.
  bool WaitFor(size_t n) {
    const absl::Time limit = absl::Now() + kPatience;
    while (absl::Now() < limit) {
      {
        absl::MutexLock lock(&mu_);
        if (order_.size() >= n) return true;
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
    return false;
  }
  std::vector<std::string> order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }
  std::vector<size_t> sizes() {
    absl::MutexLock lock(&mu_);
    return sizes_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> order_;
  std::vector<size_t> sizes_;
};

// Occupies every worker until Release.
class Blocker {
 public:
  Blocker(Scheduler& s, int workers) {
    for (int i = 0; i < workers; ++i) {
      Task t;
      t.tenant = "blocker";
      t.run = [this](const absl::Status&) {
        started_.fetch_add(1);
        release_.WaitForNotification();
      };
      EXPECT_TRUE(s.Submit(std::move(t)).ok());
    }
    const absl::Time limit = absl::Now() + kPatience;
    while (started_.load() < workers && absl::Now() < limit) absl::SleepFor(absl::Milliseconds(1));
    EXPECT_EQ(started_.load(), workers);
  }
  void Release() { release_.Notify(); }

 private:
  std::atomic<int> started_{0};
  absl::Notification release_;
};

struct Fixture {
  explicit Fixture(SchedulerOptions o) {
    o.run_batch = [this](std::vector<std::unique_ptr<BatchItem>>& items) { rec.Batch(items); };
    auto s = Scheduler::Create(std::move(o));
    EXPECT_TRUE(s.ok()) << s.status();
    scheduler = *std::move(s);
  }
  Recorder rec;
  std::unique_ptr<Scheduler> scheduler;
};

Task Work(Recorder* rec, const std::string& tenant, const std::string& name,
          std::map<std::string, absl::Status>* drops = nullptr) {
  Task t;
  t.tenant = tenant;
  t.run = [rec, name, drops](const absl::Status& status) {
    if (status.ok()) {
      rec->Ran(name);
    } else {
      if (drops != nullptr) (*drops)[name] = status;
      rec->Ran("dropped:" + name);
    }
  };
  return t;
}

Task Predict(Recorder* rec, const std::string& tenant, int n) {
  Task t;
  t.tenant = tenant;
  t.batch_item = std::make_unique<NumberedItem>(n);
  t.run = [rec, n](const absl::Status&) { rec->Ran(absl::StrCat("dropped:b", n)); };
  return t;
}

TEST(SchedulerTest, RejectsBadOptions) {
  SchedulerOptions o;
  o.run_batch = [](auto&) {};
  o.workers = 0;
  auto s = Scheduler::Create(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "workers: must be in [1, 1024], got 0");
  o.workers = 1;
  o.max_batch_size = 0;
  EXPECT_EQ(Scheduler::Create(o).status().message(), "max_batch_size: must be in [1, 4096], got 0");
}

TEST(SchedulerTest, FullTenantQueueAndFullQueueAnswerResourceExhausted) {
  SchedulerOptions o;
  o.workers = 1;
  o.queue_capacity = 5;
  o.tenant_queue_capacity = 3;
  Fixture f(o);
  Blocker blocker(*f.scheduler, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.scheduler->Submit(Work(&f.rec, "a", "a")).ok());
  absl::Status full = f.scheduler->Submit(Work(&f.rec, "a", "a"));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(full.message(),
            "the request queue of tenant 'a' is full (tenant_queue_capacity 3 requests); retry "
            "later");
  ASSERT_TRUE(f.scheduler->Submit(Work(&f.rec, "b", "b")).ok());
  ASSERT_TRUE(f.scheduler->Submit(Work(&f.rec, "b", "b")).ok());
  absl::Status total = f.scheduler->Submit(Work(&f.rec, "c", "c"));
  EXPECT_EQ(total.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(total.message(),
            "the server's request queue is full (queue_capacity 5 requests); retry later");
  EXPECT_EQ(f.scheduler->queued(), 5u);
  blocker.Release();
  ASSERT_TRUE(f.rec.WaitFor(5));
  // Room again once drained.
  EXPECT_TRUE(f.scheduler->Submit(Work(&f.rec, "c", "c")).ok());
  ASSERT_TRUE(f.rec.WaitFor(6));
}

TEST(SchedulerTest, PassedDeadlineAndCancelledCallsDoNoWork) {
  SchedulerOptions o;
  o.workers = 1;
  Fixture f(o);
  std::map<std::string, absl::Status> drops;
  Blocker blocker(*f.scheduler, 1);
  Task late = Work(&f.rec, "a", "late", &drops);
  const absl::Time late_deadline = absl::Now() + absl::Milliseconds(1);
  late.deadline = late_deadline;
  Task cancelled = Work(&f.rec, "a", "cancelled", &drops);
  cancelled.cancelled = [] { return true; };
  Task fine = Work(&f.rec, "a", "fine", &drops);
  fine.deadline = absl::Now() + absl::Hours(1);
  fine.cancelled = [] { return false; };
  Task late_predict = Predict(&f.rec, "a", 7);
  late_predict.deadline = late_deadline;
  ASSERT_TRUE(f.scheduler->Submit(std::move(late)).ok());
  ASSERT_TRUE(f.scheduler->Submit(std::move(cancelled)).ok());
  ASSERT_TRUE(f.scheduler->Submit(std::move(fine)).ok());
  ASSERT_TRUE(f.scheduler->Submit(std::move(late_predict)).ok());
  // Let the short deadlines pass while queued: wait for the clock, not a fixed time.
  while (absl::Now() <= late_deadline) absl::SleepFor(absl::Milliseconds(1));
  blocker.Release();
  ASSERT_TRUE(f.rec.WaitFor(4));
  const auto order = f.rec.order();
  EXPECT_EQ(order,
            (std::vector<std::string>{"dropped:late", "dropped:cancelled", "fine", "dropped:b7"}));
  EXPECT_EQ(drops["late"].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(drops["cancelled"].code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(f.rec.sizes().empty());  // the expired predict never reached the batch runner
}

TEST(SchedulerTest, LaneRunsOneAtATimeInArrivalOrder) {
  SchedulerOptions o;
  o.workers = 4;
  Fixture f(o);
  std::atomic<int> running[2] = {0, 0};
  std::atomic<bool> overlap{false};
  absl::Mutex mu;
  std::vector<int> seen[2];
  constexpr int kTasks = 400;
  for (int i = 0; i < kTasks; ++i) {
    const int lane = i % 2;
    Task t;
    t.tenant = "t";
    t.lane = absl::StrCat("store", lane);
    t.run = [&, lane, i](const absl::Status& status) {
      ASSERT_TRUE(status.ok());
      if (running[lane].fetch_add(1) != 0) overlap = true;
      {
        absl::MutexLock lock(&mu);
        seen[lane].push_back(i);
      }
      std::this_thread::yield();
      running[lane].fetch_sub(1);
      f.rec.Ran("x");
    };
    ASSERT_TRUE(f.scheduler->Submit(std::move(t)).ok());
  }
  ASSERT_TRUE(f.rec.WaitFor(kTasks));
  EXPECT_FALSE(overlap.load());
  for (int lane = 0; lane < 2; ++lane) {
    ASSERT_EQ(seen[lane].size(), kTasks / 2u);
    for (size_t k = 1; k < seen[lane].size(); ++k) EXPECT_LT(seen[lane][k - 1], seen[lane][k]);
  }
}

TEST(SchedulerTest, BatchesUpToMaxSize) {
  SchedulerOptions o;
  o.workers = 1;
  o.max_batch_size = 4;
  o.max_queue_delay = absl::Milliseconds(20);
  Fixture f(o);
  Blocker blocker(*f.scheduler, 1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "t", i)).ok());
  blocker.Release();
  ASSERT_TRUE(f.rec.WaitFor(10));
  EXPECT_EQ(f.rec.sizes(), (std::vector<size_t>{4, 4, 2}));
  std::vector<std::string> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(absl::StrCat("b", i));
  EXPECT_EQ(f.rec.order(), expected);
}

TEST(SchedulerTest, BatchClosesAfterMaxDelayAndCollectsAcrossTenants) {
  SchedulerOptions o;
  o.workers = 1;
  o.max_batch_size = 64;
  o.max_queue_delay = absl::Milliseconds(30);
  Fixture f(o);
  Blocker blocker(*f.scheduler, 1);
  ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "a", 0)).ok());
  ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "a", 1)).ok());
  ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "b", 2)).ok());
  const absl::Time last_arrival = absl::Now();
  // The max delay has passed for these by the time the worker is free: one batch of 3, not
  // a wait for 64. Wait for the clock to pass it (a loaded machine may take longer, never less).
  while (absl::Now() <= last_arrival + o.max_queue_delay) absl::SleepFor(absl::Milliseconds(1));
  blocker.Release();
  ASSERT_TRUE(f.rec.WaitFor(3));
  EXPECT_EQ(f.rec.sizes(), (std::vector<size_t>{3}));
  // Round-robin over tenants inside the batch.
  EXPECT_EQ(f.rec.order(), (std::vector<std::string>{"b0", "b2", "b1"}));
  // A lone predict runs once the delay is over.
  ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "a", 3)).ok());
  ASSERT_TRUE(f.rec.WaitFor(4));
  EXPECT_EQ(f.rec.sizes(), (std::vector<size_t>{3, 1}));
}

// Under load (another worker busy), a batch waits for more predicts until it is full.
TEST(SchedulerTest, BatchWaitsForMorePredictsWhileAnotherWorkerIsBusy) {
  SchedulerOptions o;
  o.workers = 2;
  o.max_batch_size = 3;
  o.max_queue_delay = absl::Seconds(1);  // the most allowed; far beyond three arrivals
  Fixture f(o);
  absl::Notification release;
  std::atomic<bool> started{false};
  Task busy;
  busy.tenant = "other";
  busy.run = [&](const absl::Status&) {
    started = true;
    release.WaitForNotification();
  };
  ASSERT_TRUE(f.scheduler->Submit(std::move(busy)).ok());
  const absl::Time limit = absl::Now() + kPatience;
  while (!started.load() && absl::Now() < limit) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_TRUE(started.load());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "t", i)).ok());
    absl::SleepFor(absl::Milliseconds(2));  // arrivals spread out; the batch still waits
  }
  ASSERT_TRUE(f.rec.WaitFor(3));
  EXPECT_EQ(f.rec.sizes(), (std::vector<size_t>{3}));
  release.Notify();
}

TEST(SchedulerTest, MaxBatchSizeOneTurnsBatchingOff) {
  SchedulerOptions o;
  o.workers = 1;
  o.max_batch_size = 1;
  Fixture f(o);
  Blocker blocker(*f.scheduler, 1);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.scheduler->Submit(Predict(&f.rec, "t", i)).ok());
  blocker.Release();
  ASSERT_TRUE(f.rec.WaitFor(5));
  EXPECT_EQ(f.rec.sizes(), (std::vector<size_t>(5, 1)));
}

// Fairness by order: with thousands of a flooding tenant's tasks queued ahead of it, the
// victim's task starts after at most workers × tenants other tasks.
TEST(SchedulerTest, FloodingTenantCannotStarveAnother) {
  for (const bool batchable : {false, true}) {
    SchedulerOptions o;
    o.workers = 2;
    o.queue_capacity = 10000;
    o.tenant_queue_capacity = 5000;
    o.max_queue_delay = absl::ZeroDuration();
    o.max_batch_size = 8;
    Fixture f(o);
    Blocker blocker(*f.scheduler, 2);
    constexpr int kFlood = 3000;
    for (int i = 0; i < kFlood; ++i) {
      ASSERT_TRUE(f.scheduler
                      ->Submit(batchable ? Predict(&f.rec, "flood", i)
                                         : Work(&f.rec, "flood", absl::StrCat("f", i)))
                      .ok());
    }
    ASSERT_TRUE(
        f.scheduler->Submit(batchable ? Predict(&f.rec, "victim", -1) : Work(&f.rec, "victim", "v"))
            .ok());
    blocker.Release();
    ASSERT_TRUE(f.rec.WaitFor(kFlood + 1));
    const auto order = f.rec.order();
    const std::string victim = batchable ? "b-1" : "v";
    size_t position = 0;
    while (position < order.size() && order[position] != victim) ++position;
    ASSERT_LT(position, order.size());
    // Two tenants with work, two workers (a batch counts as one task of each tenant).
    const size_t bound = static_cast<size_t>(o.workers) * 2 * (batchable ? o.max_batch_size : 1);
    EXPECT_LE(position, bound) << "batchable=" << batchable;
  }
}

TEST(SchedulerTest, StopRunsWhatIsQueuedAndRefusesNewWork) {
  SchedulerOptions o;
  o.workers = 2;
  Fixture f(o);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(f.scheduler->Submit(Work(&f.rec, "t", "w")).ok());
  f.scheduler->Stop();
  EXPECT_EQ(f.rec.order().size(), 50u);
  EXPECT_EQ(f.scheduler->Submit(Work(&f.rec, "t", "w")).code(), absl::StatusCode::kUnavailable);
}

TEST(SchedulerConfigTest, BackendThreadsShareTheCoresAmongWorkers) {
  adapt::v1::ServerConfig config;
  config.set_worker_threads(4);
  EXPECT_EQ(BackendThreadsFromConfig(config, 16), 4);
  EXPECT_EQ(BackendThreadsFromConfig(config, 18), 4);  // rounded down
  EXPECT_EQ(BackendThreadsFromConfig(config, 2), 1);   // never below one
  EXPECT_EQ(BackendThreadsFromConfig(config, 0), 1);   // cores unknown
  config.set_backend_threads(3);
  EXPECT_EQ(BackendThreadsFromConfig(config, 16), 3);  // an explicit count wins
  config.set_backend_threads(0);
  EXPECT_EQ(BackendThreadsFromConfig(config, 16), 4);  // 0 means the default
}

}  // namespace
}  // namespace adaptd
