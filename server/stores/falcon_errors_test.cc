// Falcon store errors leave it unchanged; snapshots round-trip (and continue exactly);
// concurrent commits and predicts never see a torn state.
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/falcon_test_util.h"

namespace adaptd {
namespace {

using testing_util::StartsWithField;

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;
using faast_test::Apply;
using faast_test::LabelBatch;
using faast_test::RandomFloats;
using faast_test::RelError;
using faast_test::VectorBatch;
using falcon_test::Fingerprint;
using falcon_test::Make;
using falcon_test::SequenceBatch;
using falcon_test::Spec;

TEST(FalconErrorsTest, ErrorsLeaveTheStoreUnchanged) {
  faast_test::FlakyBackend backend;
  std::mt19937_64 rng(1);
  auto store = Make(Spec(FalconParams::VARIANT_3, OutputSpec::KIND_VECTOR, 2), &backend);
  const std::vector<float> keys = RandomFloats(rng, 40 * 4), targets = RandomFloats(rng, 80);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, 4, targets, 2, 0, 10)}).ok());
  const std::string before = Fingerprint(*store);

  // A later message with the wrong dimension fails the call; nothing is applied.
  auto bad_dim =
      Apply(*store, TxnKind::kAdapt,
            {VectorBatch(keys, 4, targets, 2, 10, 3), VectorBatch(keys, 5, targets, 2, 0, 2)});
  EXPECT_EQ(bad_dim.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> nan_keys(keys.begin(), keys.begin() + 8);
  nan_keys[5] = std::nanf("");
  auto bad_value = Apply(*store, TxnKind::kAdapt, {VectorBatch(nan_keys, 4, targets, 2, 0, 2)});
  EXPECT_EQ(bad_value.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWithField(bad_value.status().message(), "examples[1].input"));
  auto bad_width = Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, 4, targets, 1, 0, 2)});
  EXPECT_EQ(bad_width.status().code(), absl::StatusCode::kInvalidArgument);
  auto sequence = Apply(*store, TxnKind::kAdapt, {SequenceBatch(keys, 4, 0, 3)});
  EXPECT_EQ(sequence.status().code(), absl::StatusCode::kInvalidArgument);
  // A backend failure at commit.
  backend.fail_gemm = true;
  auto failed = Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, 4, targets, 2, 10, 5)});
  EXPECT_FALSE(failed.ok());
  backend.fail_gemm = false;
  EXPECT_EQ(Fingerprint(*store), before);

  // Two transactions begun before the dimension was fixed: the second one's commit fails.
  auto fresh = Make(Spec(FalconParams::VARIANT_1, OutputSpec::KIND_LABELS), &backend);
  std::unique_ptr<Txn> a = fresh->Begin(TxnKind::kAdapt), b = fresh->Begin(TxnKind::kAdapt);
  ASSERT_TRUE(a->Add(LabelBatch(keys, 4, {"x", "y"})).ok());
  ASSERT_TRUE(b->Add(LabelBatch(keys, 5, {"z"})).ok());
  ASSERT_TRUE(fresh->Commit(*a).ok());
  const std::string fixed = Fingerprint(*fresh);
  EXPECT_EQ(fresh->Commit(*b).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(fresh->Commit(*a).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Fingerprint(*fresh), fixed);

  // Too many labels: ResourceExhausted, nothing applied.
  std::vector<std::string> many;
  std::vector<float> one_dim(kFalconMaxLabels + 1 - 2, 1.0f);
  for (size_t i = 0; i < one_dim.size(); ++i) many.push_back(std::to_string(i));
  auto small = Make(Spec(FalconParams::VARIANT_1, OutputSpec::KIND_LABELS), &backend);
  ASSERT_TRUE(Apply(*small, TxnKind::kAdapt, {LabelBatch(keys, 1, {"p", "q"})}).ok());
  const std::string two = Fingerprint(*small);
  auto too_many = Apply(*small, TxnKind::kAdapt, {LabelBatch(one_dim, 1, many)});
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Fingerprint(*small), two);

  // Predict errors.
  EXPECT_EQ(store->Predict(keys.data(), 1, 3, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FalconErrorsTest, SnapshotRoundTripContinuesExactly) {
  auto backend = kernels::MakeCpuBackend(1);
  std::mt19937_64 rng(2);
  for (auto kind : {OutputSpec::KIND_LABELS, OutputSpec::KIND_NEXT}) {
    SCOPED_TRACE(kind);
    adapt::v1::StoreSpec spec = Spec(FalconParams::VARIANT_3A, kind);
    spec.mutable_falcon()->set_lambda(0.3);
    // A β schedule: the restored store must continue its clock, not restart it.
    spec.mutable_falcon()->set_beta_half_life(4);
    spec.mutable_falcon()->set_beta_min(0.1);
    auto store = Make(spec, backend.get());
    const std::vector<float> keys = RandomFloats(rng, 30 * 3);
    std::vector<std::string> labels;
    for (int i = 0; i < 30; ++i) labels.push_back(std::string(1, static_cast<char>('a' + i % 4)));
    auto batch = [&](int64_t first, int64_t rows) {
      return kind == OutputSpec::KIND_NEXT ? SequenceBatch(keys, 3, first, rows)
                                           : LabelBatch(keys, 3, labels, first, rows);
    };
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {batch(0, 17)}).ok());
    absl::StatusOr<adapt::v1::StoreSnapshot> snap = store->Snapshot();
    ASSERT_TRUE(snap.ok());
    absl::StatusOr<std::unique_ptr<Store>> restored = RestoreStore(*snap, backend.get());
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(Fingerprint(**restored), Fingerprint(*store));
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {batch(17, 13)}).ok());
    ASSERT_TRUE(Apply(**restored, TxnKind::kAdapt, {batch(17, 13)}).ok());
    EXPECT_EQ(Fingerprint(**restored), Fingerprint(*store));

    adapt::v1::StoreSnapshot broken = *snap;
    broken.mutable_falcon()->mutable_s()->RemoveLast();
    auto bad = RestoreStore(broken, backend.get());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(StartsWithField(bad.status().message(), "snapshot.falcon.s"));
    broken = *snap;
    broken.mutable_falcon()->set_history(9);
    EXPECT_FALSE(RestoreStore(broken, backend.get()).ok());
    broken = *snap;
    broken.mutable_falcon()->set_steps(snap->falcon().examples() + 1);
    bad = RestoreStore(broken, backend.get());
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(StartsWithField(bad.status().message(), "snapshot.falcon.steps"));
    // A clock that restarts gives other weights than the store that kept counting.
    broken = *snap;
    broken.mutable_falcon()->set_steps(0);
    auto reset = RestoreStore(broken, backend.get());
    ASSERT_TRUE(reset.ok()) << reset.status();
    ASSERT_TRUE(Apply(**reset, TxnKind::kAdapt, {batch(17, 13)}).ok());
    EXPECT_NE((*reset)->Snapshot()->falcon().s(0), store->Snapshot()->falcon().s(0));
  }
}

// Variant 1A with λ = 0 adds η·x·vᵀ per example, so the final S does not depend on the order
// of the commits; every version a reader sees holds whole commits only.
TEST(FalconErrorsTest, ConcurrentCommitsAndPredicts) {
  auto backend = kernels::MakeCpuBackend(1);
  constexpr int64_t kD = 8, kM = 2, kPerTxn = 3, kTxns = 20, kWriters = 3;
  auto store = Make(Spec(FalconParams::VARIANT_1A, OutputSpec::KIND_VECTOR, kM, kD), backend.get());
  std::mt19937_64 rng(3);
  const int64_t n = kPerTxn * kTxns * kWriters;
  const std::vector<float> keys = RandomFloats(rng, n * kD), targets = RandomFloats(rng, n * kM);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  auto writer = [&](int w) {
    for (int t = 0; t < kTxns; ++t) {
      const int64_t first = (w * kTxns + t) * kPerTxn;
      if (!Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, kD, targets, kM, first, kPerTxn)})
               .ok())
        ++failures;
    }
  };
  auto reader = [&] {
    uint64_t last = 0;
    const std::vector<float> q(keys.begin(), keys.begin() + kD);
    while (!done) {
      std::shared_ptr<const FalconVersion> v = store->published();
      if (v->examples != v->version * kPerTxn ||
          static_cast<uint64_t>(v->memory.steps) != v->examples)
        ++failures;
      auto p = store->Predict(q.data(), 1, kD, 1);
      if (!p.ok() || p->version < last) ++failures;
      if (p.ok()) last = p->version;
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) threads.emplace_back(reader);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) writers.emplace_back(writer, w);
  for (std::thread& t : writers) t.join();
  done = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  std::shared_ptr<const FalconVersion> v = store->published();
  EXPECT_EQ(v->version, static_cast<uint64_t>(kTxns * kWriters));
  const FalconMemory want =
      falcon_test::Reference(Spec(FalconParams::VARIANT_1A, OutputSpec::KIND_VECTOR, kM, kD),
                             faast_test::ToDoubles(keys), faast_test::ToDoubles(targets), kD, kM);
  EXPECT_LT(RelError(v->memory.s, want.s), 1e-12);
}

}  // namespace
}  // namespace adaptd
