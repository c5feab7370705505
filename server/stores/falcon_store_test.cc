// FalconStore behaviour: the store equals the recurrence on the same stream, read-after-write,
// class-incremental labels, next-store pairing and continuation across calls, key
// normalisation, compile and forget refused.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/falcon_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;
using faast_test::Apply;
using faast_test::LabelBatch;
using faast_test::RandomFloats;
using faast_test::RelError;
using faast_test::ToDoubles;
using faast_test::VectorBatch;
using falcon_test::Make;
using falcon_test::Reference;
using falcon_test::SequenceBatch;
using falcon_test::Spec;

class FalconStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
  std::mt19937_64 rng_{42};
};

TEST_F(FalconStoreTest, VectorStoreMatchesRecurrence) {
  constexpr int64_t kD = 6, kM = 3, kN = 150;
  for (auto variant :
       {FalconParams::VARIANT_1, FalconParams::VARIANT_2A, FalconParams::VARIANT_3}) {
    SCOPED_TRACE(variant);
    adapt::v1::StoreSpec spec = Spec(variant, OutputSpec::KIND_VECTOR, kM);
    spec.mutable_falcon()->set_lambda(0.1);
    auto store = Make(spec, backend_.get());
    const std::vector<float> keys = RandomFloats(rng_, kN * kD);
    const std::vector<float> targets = RandomFloats(rng_, kN * kM);
    // Two calls, the first of two messages.
    auto first = Apply(
        *store, TxnKind::kAdapt,
        {VectorBatch(keys, kD, targets, kM, 0, 40), VectorBatch(keys, kD, targets, kM, 40, 30)});
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->version, 1u);
    auto second = Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, kD, targets, kM, 70, 80)});
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(second->version, 2u);
    EXPECT_EQ(second->examples, 80u);

    std::vector<double> pred;
    const FalconMemory want = Reference(spec, ToDoubles(keys), ToDoubles(targets), kD, kM, &pred);
    EXPECT_LT(RelError(store->published()->memory.s, want.s), 1e-10);
    double loss = 0;
    for (int64_t t = 0; t < kN; ++t) {
      for (int64_t j = 0; j < kM; ++j) {
        const double e = pred[t * kM + j] - targets[t * kM + j];
        loss += e * e / kM;
      }
    }
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    EXPECT_EQ(info.prequential_evaluated(), static_cast<uint64_t>(kN));
    EXPECT_NEAR(info.prequential_loss_sum(), loss, 1e-9 * loss);
    EXPECT_EQ(info.falcon().steps(), static_cast<uint64_t>(kN));
    EXPECT_GT(info.falcon().state_norm(), 0);
    EXPECT_EQ(info.spec().dim(), static_cast<uint32_t>(kD));

    // Predict reads Sᵀx from the current state.
    const std::vector<float> q = RandomFloats(rng_, 2 * kD);
    auto p = store->Predict(q.data(), 2, kD, 1);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->version, 2u);
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t j = 0; j < kM; ++j) {
        double o = 0;
        for (int64_t i = 0; i < kD; ++i) o += q[r * kD + i] * want.s[i * kM + j];
        EXPECT_NEAR(p->vectors[r * kM + j], o, 1e-5 * (1 + std::abs(o)));
      }
    }
  }
}

TEST_F(FalconStoreTest, ReadAfterWrite) {
  auto store = Make(Spec(FalconParams::VARIANT_1, OutputSpec::KIND_VECTOR, 2), backend_.get());
  const std::vector<float> x = {1, 2, -1, 0.5f};
  const std::vector<float> y = {3, -2};
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(x, 4, y, 2, 0, 1)}).ok());
  // β = 1, λ = 0: one NLMS step interpolates the example (up to ε).
  auto p = store->Predict(x.data(), 1, 4, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR(p->vectors[0], 3, 1e-5);
  EXPECT_NEAR(p->vectors[1], -2, 1e-5);
}

TEST_F(FalconStoreTest, LabelsGrowColumns) {
  constexpr int64_t kD = 5;
  const adapt::v1::StoreSpec spec = Spec(FalconParams::VARIANT_3A, OutputSpec::KIND_LABELS);
  auto store = Make(spec, backend_.get());
  EXPECT_EQ(store->Predict(nullptr, 0, kD, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const std::vector<float> keys = RandomFloats(rng_, 9 * kD);
  const std::vector<std::string> labels = {"a", "b", "a", "b", "c", "a", "c", "b", "c"};
  auto r1 = Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, kD, labels, 0, 4)});
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(store->published()->memory.columns, 2);
  auto r2 = Apply(*store, TxnKind::kAdapt, {LabelBatch(keys, kD, labels, 4, 5)});
  ASSERT_TRUE(r2.ok()) << r2.status();
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  ASSERT_EQ(info.labels_size(), 3);
  EXPECT_EQ(info.labels(2), "c");
  // A label's first example is a miss: at least 3 of 9.
  EXPECT_EQ(info.prequential_evaluated(), 9u);
  EXPECT_LE(info.prequential_correct(), 6u);
  EXPECT_EQ(r1->prequential.evaluated + r2->prequential.evaluated, 9u);

  // Growing columns as labels arrive equals starting with every column at zero.
  std::vector<int> ids = {0, 1, 0, 1, 2, 0, 2, 1, 2};
  const FalconMemory want = Reference(spec, ToDoubles(keys), faast_test::OneHot(ids, 3), kD, 3);
  EXPECT_LT(RelError(store->published()->memory.s, want.s), 1e-10);

  auto p = store->Predict(keys.data(), 1, kD, 5);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 3);  // clamped to the label count
  EXPECT_EQ(p->label_names->size(), 3u);
}

// Items k_1..k_T: pairs (k_{t−1} → k_t); the first item of the store's life has no pair.
// A restarted sequence pairs nothing across its boundary: items a_1..a_5 then (restart)
// b_1..b_4 learn a_1→…→a_5 and b_1→…→b_4, within one call or across two; the state and
// Falcon-3's window carry on.
TEST_F(FalconStoreTest, NextStoreRestartedSequenceHasNoPairAcrossTheBoundary) {
  constexpr int64_t kD = 3, kA = 5, kB = 4;
  adapt::v1::StoreSpec spec = Spec(FalconParams::VARIANT_3, OutputSpec::KIND_NEXT);
  spec.mutable_falcon()->set_lambda(0.1);
  const std::vector<float> items = RandomFloats(rng_, (kA + kB) * kD);
  auto one_call = Make(spec, backend_.get());
  auto two_calls = Make(spec, backend_.get());
  auto joined = Make(spec, backend_.get());
  auto r = Apply(*one_call, TxnKind::kAdapt,
                 {SequenceBatch(items, kD, 0, kA), SequenceBatch(items, kD, kA, kB, true)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples, static_cast<uint64_t>(kA + kB));
  EXPECT_EQ(r->prequential.evaluated, static_cast<uint64_t>(kA - 1 + kB - 1));
  ASSERT_TRUE(Apply(*two_calls, TxnKind::kAdapt, {SequenceBatch(items, kD, 0, kA)}).ok());
  ASSERT_TRUE(Apply(*two_calls, TxnKind::kAdapt, {SequenceBatch(items, kD, kA, kB, true)}).ok());
  ASSERT_TRUE(Apply(*joined, TxnKind::kAdapt, {SequenceBatch(items, kD, 0, kA + kB)}).ok());

  const std::vector<double> all = ToDoubles(items);
  std::vector<double> x, y;
  for (int64_t t = 1; t < kA + kB; ++t) {
    if (t == kA) continue;  // b_1 starts the second sequence
    x.insert(x.end(), all.begin() + (t - 1) * kD, all.begin() + t * kD);
    y.insert(y.end(), all.begin() + t * kD, all.begin() + (t + 1) * kD);
  }
  const FalconMemory want = Reference(spec, x, y, kD, kD);
  EXPECT_LT(RelError(one_call->published()->memory.s, want.s), 1e-10);
  EXPECT_LT(RelError(two_calls->published()->memory.s, want.s), 1e-10);
  EXPECT_GT(RelError(joined->published()->memory.s, want.s), 1e-3);
  EXPECT_EQ(two_calls->published()->last_key, std::vector<double>(all.end() - kD, all.end()));
  adapt::v1::StoreInfo info;
  two_calls->Describe(&info);
  EXPECT_EQ(info.falcon().steps(), static_cast<uint64_t>(kA + kB - 2));
}

TEST_F(FalconStoreTest, NextStorePairsAndContinuesAcrossCalls) {
  constexpr int64_t kD = 4, kN = 12;
  adapt::v1::StoreSpec spec = Spec(FalconParams::VARIANT_3, OutputSpec::KIND_NEXT);
  spec.mutable_falcon()->set_lambda(0.2);
  const std::vector<float> items = RandomFloats(rng_, kN * kD);
  auto whole = Make(spec, backend_.get());
  auto split = Make(spec, backend_.get());
  auto w = Apply(*whole, TxnKind::kAdapt, {SequenceBatch(items, kD, 0, kN)});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->examples, static_cast<uint64_t>(kN));
  EXPECT_EQ(w->prequential.evaluated, static_cast<uint64_t>(kN - 1));

  auto first = Apply(*split, TxnKind::kAdapt, {SequenceBatch(items, kD, 0, 1)});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->prequential.evaluated, 0u);  // x_1 = 0, η_1 = 0: no update
  ASSERT_TRUE(Apply(*split, TxnKind::kAdapt,
                    {SequenceBatch(items, kD, 1, 2), SequenceBatch(items, kD, 3, 4)})
                  .ok());
  ASSERT_TRUE(Apply(*split, TxnKind::kAdapt, {SequenceBatch(items, kD, 7, 5)}).ok());

  const std::vector<double> all = ToDoubles(items);
  const std::vector<double> x(all.begin(), all.end() - kD), y(all.begin() + kD, all.end());
  const FalconMemory want = Reference(spec, x, y, kD, kD);
  EXPECT_LT(RelError(whole->published()->memory.s, want.s), 1e-10);
  EXPECT_LT(RelError(split->published()->memory.s, want.s), 1e-10);
  EXPECT_EQ(split->published()->memory.history, 3);
  EXPECT_EQ(split->published()->last_key, std::vector<double>(all.end() - kD, all.end()));
  adapt::v1::StoreInfo info;
  split->Describe(&info);
  EXPECT_EQ(info.falcon().steps(), static_cast<uint64_t>(kN - 1));
  EXPECT_EQ(info.examples(), static_cast<uint64_t>(kN));
  auto p = split->Predict(items.data(), 1, kD, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->out_dim, kD);
}

TEST_F(FalconStoreTest, KeyNormalisationAppliesToQueries) {
  adapt::v1::StoreSpec spec = Spec(FalconParams::VARIANT_1A, OutputSpec::KIND_VECTOR, 2);
  spec.mutable_falcon()->set_key_norm(FalconParams::KEY_NORM_L2);
  auto store = Make(spec, backend_.get());
  const std::vector<float> keys = RandomFloats(rng_, 20 * 3), targets = RandomFloats(rng_, 40);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(keys, 3, targets, 2, 0, 20)}).ok());
  const std::vector<float> q = {1, 2, 3}, q10 = {10, 20, 30};
  auto a = store->Predict(q.data(), 1, 3, 1);
  auto b = store->Predict(q10.data(), 1, 3, 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(a->vectors[0], b->vectors[0], 1e-5);
  EXPECT_NEAR(a->vectors[1], b->vectors[1], 1e-5);
}

TEST_F(FalconStoreTest, CompileAndForgetAreRefused) {
  auto store = Make(Spec(FalconParams::VARIANT_1, OutputSpec::KIND_LABELS), backend_.get());
  auto c = store->Compile(adapt::v1::CompileRequest());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(c.status().message(), "falcon stores learn online; there is nothing to compile");
  const std::vector<float> keys = {1, 2};
  auto f = Apply(*store, TxnKind::kForget, {LabelBatch(keys, 2, {"a"})});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace adaptd
