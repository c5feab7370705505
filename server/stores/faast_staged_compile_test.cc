// A faast compile in two steps (Store::SolveCompile, PublishCompile): nothing is published
// until the second, a dropped compile changes nothing, writes meanwhile stay pending, and one
// compile is staged at a time. Replay (NoteReplayedCompile, SolveReplayedCompile): many logged
// compiles solve once and publish what the last one published when it ran.
#include <atomic>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/timings_test_util.h"

namespace adaptd {
namespace {

constexpr int64_t kDim = 6;

ExampleBatch Batch(uint64_t seed, int64_t rows = 12) {
  std::mt19937_64 rng(seed);
  const std::vector<float> keys = faast_test::RandomFloats(rng, rows * kDim);
  std::vector<std::string> labels;
  for (int64_t i = 0; i < rows; ++i) labels.push_back(i % 3 == 0 ? "a" : (i % 3 == 1 ? "b" : "c"));
  return faast_test::LabelBatch(keys, kDim, labels);
}

uint64_t Pending(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.faast().pending_examples();
}

// The state as stored, less the timings of the last compile.
std::string StateOf(const Store& store) {
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = store.Snapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  if (!snapshot.ok()) return "";
  ClearTimings(&*snapshot);
  return snapshot->SerializeAsString();
}

TEST(FaastStagedCompileTest, NothingIsPublishedUntilPublishCompile) {
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(1)}).ok());
  ASSERT_TRUE(faast_test::CompileNow(*store).ok());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(2)}).ok());
  const std::shared_ptr<const FaastWeights> before = store->published();

  absl::StatusOr<std::unique_ptr<StagedCompile>> staged =
      store->SolveCompile(adapt::v1::CompileRequest());
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(store->published(), before);  // the previous version serves
  // A write while the compile is staged stays pending after its publication.
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(3, 5)}).ok());
  absl::StatusOr<adapt::v1::CompileResponse> published = store->PublishCompile(*std::move(staged));
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(published->version(), 2u);
  EXPECT_EQ(published->faast().pending_examples(), 5u);
  EXPECT_EQ(store->published()->version, 2u);
  EXPECT_EQ(Pending(*store), 5u);
}

TEST(FaastStagedCompileTest, ADroppedCompileChangesNothing) {
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(1)}).ok());
  ASSERT_TRUE(faast_test::CompileNow(*store).ok());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(2)}).ok());
  const std::string state = StateOf(*store);
  adapt::v1::CompileRequest ridge;
  ridge.mutable_faast()->set_ridge(0.5);
  {
    absl::StatusOr<std::unique_ptr<StagedCompile>> staged = store->SolveCompile(ridge);
    ASSERT_TRUE(staged.ok()) << staged.status();
    EXPECT_EQ(Pending(*store), 0u);  // taken by the compile
  }
  // Dropped: the examples are pending again, the parameters and the version as they were.
  EXPECT_EQ(Pending(*store), 12u);
  EXPECT_EQ(StateOf(*store), state);
  EXPECT_TRUE(store->ChangedSinceCompile());
  // The next compile is not held up by the dropped one.
  absl::StatusOr<adapt::v1::CompileResponse> next = faast_test::CompileNow(*store);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version(), 2u);
}

TEST(FaastStagedCompileTest, ASecondCompileWaitsForTheStagedOne) {
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(1)}).ok());
  absl::StatusOr<std::unique_ptr<StagedCompile>> staged =
      store->SolveCompile(adapt::v1::CompileRequest());
  ASSERT_TRUE(staged.ok()) << staged.status();
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(2)}).ok());
  std::atomic<bool> second_done{false};
  uint64_t second_version = 0;
  std::thread second([&] {
    absl::StatusOr<adapt::v1::CompileResponse> r = faast_test::CompileNow(*store);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) second_version = r->version();
    second_done = true;
  });
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_FALSE(second_done.load());
  EXPECT_EQ(store->published(), nullptr);
  absl::StatusOr<adapt::v1::CompileResponse> first = store->PublishCompile(*std::move(staged));
  second.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->version(), 1u);
  EXPECT_EQ(second_version, 2u);  // versions in publication order
}

TEST(FaastStagedCompileTest, AStagedCompileOfAnotherStoreIsRefused) {
  auto backend = kernels::MakeCpuBackend();
  auto a = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  auto b = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  ASSERT_TRUE(faast_test::Apply(*a, TxnKind::kAdapt, {Batch(1)}).ok());
  absl::StatusOr<std::unique_ptr<StagedCompile>> staged =
      a->SolveCompile(adapt::v1::CompileRequest());
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(b->PublishCompile(*std::move(staged)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a->published(), nullptr);
}

// The log of one store: writes (adapts or forgets), and compiles (some with overrides).
struct Step {
  enum { kAdapt, kForget, kCompile } what;
  uint64_t seed = 0;
  adapt::v1::CompileRequest request;
};

// Replays `steps` into `replayed` (compiles noted, then solved once) and runs them on `live`.
void RunSteps(const std::vector<Step>& steps, Store& live, Store& replayed) {
  for (const Step& step : steps) {
    if (step.what == Step::kCompile) {
      ASSERT_TRUE(live.Compile(step.request).ok());
      ASSERT_TRUE(replayed.NoteReplayedCompile(step.request, nullptr).ok());
      continue;
    }
    const TxnKind kind = step.what == Step::kAdapt ? TxnKind::kAdapt : TxnKind::kForget;
    ASSERT_TRUE(faast_test::Apply(live, kind, {Batch(step.seed)}).ok());
    ASSERT_TRUE(faast_test::Apply(replayed, kind, {Batch(step.seed)}).ok());
  }
  ASSERT_TRUE(replayed.SolveReplayedCompile().ok());
}

adapt::v1::CompileRequest Ridge(double ridge) {
  adapt::v1::CompileRequest request;
  request.mutable_faast()->set_ridge(ridge);
  return request;
}

TEST(FaastStagedCompileTest, ReplaySolvesOnceAndPublishesTheLastCompileAsItRan) {
  auto backend = kernels::MakeCpuBackend();
  auto live = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  auto replayed = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  // Ten compiles, forgets between some of them, an adapt after the last (pending, not solved).
  std::vector<Step> steps;
  for (uint64_t seed = 10; seed < 20; ++seed) steps.push_back({Step::kAdapt, seed, {}});
  for (int i = 0; i < 10; ++i) {
    steps.push_back({Step::kCompile, 0, i % 4 == 1 ? Ridge(0.1 * i) : adapt::v1::CompileRequest()});
    if (i % 3 == 0) steps.push_back({Step::kForget, static_cast<uint64_t>(10 + i), {}});
  }
  steps.push_back({Step::kAdapt, 99, {}});
  RunSteps(steps, *live, *replayed);
  EXPECT_EQ(live->solves(), 10u);
  EXPECT_EQ(replayed->solves(), 1u);
  EXPECT_EQ(replayed->published()->version, 10u);
  EXPECT_EQ(replayed->published()->s, live->published()->s);
  EXPECT_EQ(StateOf(*replayed), StateOf(*live));
  EXPECT_EQ(Pending(*replayed), 24u);  // the forget and the adapt after the last compile
  // Nothing is left to solve.
  ASSERT_TRUE(replayed->SolveReplayedCompile().ok());
  EXPECT_EQ(replayed->solves(), 1u);
}

// An adapt is evaluated against the version published when it ran (prequential statistics):
// the compile before it is solved first, and the replayed store still equals the live one.
TEST(FaastStagedCompileTest, AnAdaptAfterAReplayedCompileIsEvaluatedAgainstIt) {
  auto backend = kernels::MakeCpuBackend();
  auto live = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  auto replayed = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  std::vector<Step> steps;
  for (int i = 0; i < 4; ++i) {
    steps.push_back({Step::kAdapt, static_cast<uint64_t>(10 + i), {}});
    steps.push_back({Step::kCompile, 0, i == 1 ? Ridge(0.3) : adapt::v1::CompileRequest()});
    steps.push_back({Step::kCompile, 0, {}});
  }
  steps.push_back({Step::kAdapt, 99, {}});
  RunSteps(steps, *live, *replayed);
  EXPECT_EQ(live->solves(), 8u);
  EXPECT_EQ(replayed->solves(), 4u);  // the last compile before each adapt
  EXPECT_EQ(StateOf(*replayed), StateOf(*live));
  adapt::v1::StoreInfo info;
  replayed->Describe(&info);
  EXPECT_GT(info.prequential_evaluated(), 0u);
}

// An adapt whose record carries the figures it counted as it staged (Txn::StagedPrequential)
// takes them at replay (TakeRecordedPrequential): it evaluates nothing, so the compiles before
// it are not solved, and the store solves once, at its last compile, yet equals the live one
// with its prequential statistics.
TEST(FaastStagedCompileTest, AdaptsWithRecordedFiguresLeaveOneSolveAtTheLastCompile) {
  auto backend = kernels::MakeCpuBackend();
  auto live = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  auto replayed = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  const auto adapt = [&](uint64_t seed) {
    std::unique_ptr<Txn> txn = live->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(txn->Add(Batch(seed)).ok());
    const std::optional<PrequentialStats> counted = txn->StagedPrequential();
    ASSERT_TRUE(counted.has_value());
    ASSERT_TRUE(live->Commit(*txn).ok());
    std::unique_ptr<Txn> again = replayed->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(again->TakeRecordedPrequential(*counted));
    ASSERT_TRUE(again->Add(Batch(seed)).ok());
    ASSERT_TRUE(replayed->Commit(*again).ok());
  };
  for (int i = 0; i < 5; ++i) {
    adapt(static_cast<uint64_t>(10 + i));
    const adapt::v1::CompileRequest request = i == 2 ? Ridge(0.3) : adapt::v1::CompileRequest();
    ASSERT_TRUE(live->Compile(request).ok());
    ASSERT_TRUE(replayed->NoteReplayedCompile(request, nullptr).ok());
  }
  adapt(99);
  EXPECT_EQ(replayed->solves(), 0u);  // no adapt read a published version
  ASSERT_TRUE(replayed->SolveReplayedCompile().ok());
  EXPECT_EQ(live->solves(), 5u);
  EXPECT_EQ(replayed->solves(), 1u);
  EXPECT_EQ(StateOf(*replayed), StateOf(*live));
  adapt::v1::StoreInfo live_info, replayed_info;
  live->Describe(&live_info);
  replayed->Describe(&replayed_info);
  EXPECT_GT(live_info.prequential_evaluated(), 0u);
  EXPECT_EQ(replayed_info.prequential_evaluated(), live_info.prequential_evaluated());
  EXPECT_EQ(replayed_info.prequential_correct(), live_info.prequential_correct());
  EXPECT_EQ(replayed_info.prequential_loss_sum(), live_info.prequential_loss_sum());
}

// A forget counts nothing: it reports no figures and takes none.
TEST(FaastStagedCompileTest, AForgetReportsAndTakesNoFigures) {
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  ASSERT_TRUE(faast_test::Apply(*store, TxnKind::kAdapt, {Batch(1)}).ok());
  std::unique_ptr<Txn> forget = store->Begin(TxnKind::kForget);
  EXPECT_FALSE(forget->TakeRecordedPrequential(PrequentialStats{3, 2, 1.0}));
  ASSERT_TRUE(forget->Add(Batch(1)).ok());
  EXPECT_FALSE(forget->StagedPrequential().has_value());
}

TEST(FaastStagedCompileTest, AReplayedCompileThatFailedWhenItRanChangesNothing) {
  auto backend = kernels::MakeCpuBackend();
  auto store = faast_test::MakeStore(faast_test::LabelSpec(), backend.get());
  // No examples: the compile failed, so its record changes nothing.
  EXPECT_EQ(store->NoteReplayedCompile(adapt::v1::CompileRequest(), nullptr).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store->SolveReplayedCompile().ok());
  EXPECT_EQ(store->published(), nullptr);
  EXPECT_EQ(store->solves(), 0u);
}

}  // namespace
}  // namespace adaptd
