#include "server/core/compile_pool.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

// Counts compiles; every other method is unused by the pool.
class CountingStore final : public Store {
 public:
  adapt::v1::StoreSpec spec() const override { return {}; }
  int64_t dim() const override { return 0; }
  std::unique_ptr<Txn> Begin(TxnKind) override { return nullptr; }
  absl::StatusOr<CommitResult> Commit(Txn&) override { return CommitResult{}; }
  absl::StatusOr<Predictions> Predict(const float*, int64_t, int64_t, int) const override {
    return absl::UnimplementedError("");
  }
  absl::StatusOr<adapt::v1::CompileResponse> Compile(const adapt::v1::CompileRequest&) override {
    adapt::v1::CompileResponse r;
    r.set_version(++compiles);
    return r;
  }
  void Describe(adapt::v1::StoreInfo*) const override {}
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override {
    return adapt::v1::StoreSnapshot();
  }
  bool ChangedSinceCompile() const override { return changed.load(); }

  std::atomic<int> compiles{0};
  std::atomic<bool> changed{true};
};

// With one thread: an automatic request made due now is taken (scheduled() drops to 0), then
// an explicit compile runs after it; returns the automatic compiles the observer saw.
int AutoThenExplicit(bool changed) {
  std::atomic<int> automatic_seen{0};
  CompilePool pool(1, [&](const Store&, const auto&, bool automatic) {
    if (automatic) ++automatic_seen;
  });
  auto store = std::make_shared<CountingStore>();
  store->changed = changed;
  pool.ScheduleAuto(store, absl::ZeroDuration(), /*urgent=*/true);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (pool.scheduled() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(pool.scheduled(), 0u);
  absl::Notification done;
  pool.Submit(store, {}, [&](absl::StatusOr<adapt::v1::CompileResponse>) { done.Notify(); });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(store->compiles.load(), changed ? 2 : 1);
  return automatic_seen.load();
}

TEST(CompilePoolTest, AnAutomaticCompileSkipsAStoreWithNothingNew) {
  EXPECT_EQ(AutoThenExplicit(/*changed=*/false), 0);
  EXPECT_EQ(AutoThenExplicit(/*changed=*/true), 1);
}

TEST(CompilePoolTest, ExplicitCompileCallsBack) {
  CompilePool pool(1, nullptr);
  auto store = std::make_shared<CountingStore>();
  absl::Notification done;
  uint64_t version = 0;
  pool.Submit(store, {}, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
    version = r->version();
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(version, 1u);
}

TEST(CompilePoolTest, IdleRequestsCoalesceIntoOneCompile) {
  std::atomic<int> observed{0};
  CompilePool pool(2, [&](const Store&, const auto&, bool automatic) {
    EXPECT_TRUE(automatic);
    ++observed;
  });
  auto store = std::make_shared<CountingStore>();
  for (int i = 0; i < 20; ++i) pool.ScheduleAuto(store, absl::Milliseconds(50), false);
  // Bounded wait for the one compile (a loaded machine may be slow to wake the pool), then
  // time for any duplicate to show up.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (store->compiles.load() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(store->compiles.load(), 1);
  EXPECT_EQ(observed.load(), 1);
}

TEST(CompilePoolTest, RequestMadeWhileThePoolSleepsRunsWhenDue) {
  CompilePool pool(2, nullptr);
  // Let both threads go to sleep with nothing due; the request must wake them to learn its
  // due time, since nothing else releases the pool's mutex afterwards.
  absl::SleepFor(absl::Milliseconds(200));
  auto store = std::make_shared<CountingStore>();
  pool.ScheduleAuto(store, absl::Milliseconds(50), false);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (store->compiles.load() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(store->compiles.load(), 1);
}

TEST(CompilePoolTest, UrgentRequestIsNotPostponedByIdleOnes) {
  CompilePool pool(1, nullptr);
  auto store = std::make_shared<CountingStore>();
  pool.ScheduleAuto(store, absl::ZeroDuration(), true);
  pool.ScheduleAuto(store, absl::Seconds(60), false);
  // Postponed to 60 s, the compile would miss this bounded wait.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (store->compiles.load() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(store->compiles.load(), 1);
}

TEST(CompilePoolTest, DeletedStoreIsSkippedAndStopAnswersUnavailable) {
  CompilePool pool(1, nullptr);
  {
    auto store = std::make_shared<CountingStore>();
    pool.ScheduleAuto(store, absl::Milliseconds(20), false);
  }
  absl::SleepFor(absl::Milliseconds(100));
  pool.Stop();
  absl::Status status;
  pool.Submit(std::make_shared<CountingStore>(), {},
              [&](absl::StatusOr<adapt::v1::CompileResponse> r) { status = r.status(); });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
}

// A faast store with examples and nothing published.
std::shared_ptr<Store> FaastWithExamples(kernels::Backend* backend) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.mutable_faast();
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return nullptr;
  ExampleBatch batch;
  batch.rows = 2;
  batch.dim = 2;
  batch.keys = {1, 0, 0, 1};
  batch.labels = {"a", "b"};
  std::unique_ptr<Txn> txn = (*store)->Begin(TxnKind::kAdapt);
  EXPECT_TRUE(txn->Add(batch).ok());
  EXPECT_TRUE((*store)->Commit(*txn).ok());
  return *std::move(store);
}

uint64_t VersionOf(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.version();
}

// The log step runs after the solve and before the publication: a compile whose log fails
// publishes nothing and answers the log's error; the next one publishes.
TEST(CompilePoolTest, ACompileIsPublishedOnlyAfterItsLogSucceeds) {
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(1);
  std::shared_ptr<Store> store = FaastWithExamples(backend.get());
  ASSERT_NE(store, nullptr);
  std::atomic<bool> fail{true};
  std::atomic<int> logged{0};
  std::atomic<uint64_t> version_at_log{99};
  std::atomic<uint64_t> version_after_publish{99};
  CompilePool pool(1, nullptr,
                   [&](const Store& s, const adapt::v1::CompileRequest&, const BaseReadout*,
                       bool) -> absl::StatusOr<CompilePool::Published> {
                     version_at_log = VersionOf(s);
                     ++logged;
                     if (fail) return absl::UnavailableError("log down");
                     return [&] { version_after_publish = VersionOf(*store); };
                   });
  const auto compile = [&] {
    absl::StatusOr<adapt::v1::CompileResponse> result;
    absl::Notification done;
    pool.Submit(store, {}, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      result = std::move(r);
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  };
  absl::StatusOr<adapt::v1::CompileResponse> refused = compile();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(VersionOf(*store), 0u);
  EXPECT_TRUE(store->ChangedSinceCompile());  // its examples are pending again
  fail = false;
  absl::StatusOr<adapt::v1::CompileResponse> published = compile();
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(published->version(), 1u);
  EXPECT_EQ(version_at_log.load(), 0u);  // logged before it was published
  EXPECT_EQ(VersionOf(*store), 1u);
  EXPECT_EQ(version_after_publish.load(), 1u);  // what the log returned ran once published
  EXPECT_EQ(logged.load(), 2);
}

}  // namespace
}  // namespace adaptd
