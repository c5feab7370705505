// FwpkmStore behaviour: capacity, chunked causal writes, label / vector / next outputs,
// iterative passes, memory accounting, snapshots, and caller errors that leave it unchanged.
#include "server/stores/fwpkm_store.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/tests/recording_backend.h"
#include "server/stores/fwpkm_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using absl::StatusCode;
using adapt::v1::OutputSpec;
using fwpkm_test::Apply;
using fwpkm_test::Fingerprint;
using fwpkm_test::Gaussian;
using fwpkm_test::Make;
using fwpkm_test::Spec;
using fwpkm_test::VectorBatch;

adapt::v1::FwpkmStats Stats(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.fwpkm();
}

// M random key → value pairs into N = 2^16 slots, read back: the readout's nearest stored
// value (cosine) must be the written one for ≥ 95% of the keys at M = N/16.
TEST(FwpkmStoreTest, CapacityRecallAtOneSixteenth) {
  const int dim = 32, m = 32, pairs = 4096;
  std::mt19937_64 rng(8);
  const std::vector<float> keys = Gaussian(rng, pairs * dim), values = Gaussian(rng, pairs * m);
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_VECTOR, m, dim);
  spec.mutable_fwpkm()->set_sub_keys(256);
  std::unique_ptr<FwpkmStore> store = Make(spec);
  ASSERT_TRUE(Apply(*store, VectorBatch(keys, dim, values)).ok());
  adapt::v1::CompileRequest flush;
  ASSERT_TRUE(store->Compile(flush).ok());
  auto p = store->Predict(keys.data(), pairs, dim, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  int hits = 0;
  for (int t = 0; t < pairs; ++t) {
    const float* out = p->vectors.data() + t * m;
    int best = 0;
    double best_cos = -2;
    for (int u = 0; u < pairs; ++u) {
      const double c = fwpkm_test::Cosine(out, values.data() + u * m, m);
      if (c > best_cos) best_cos = c, best = u;
    }
    hits += best == t ? 1 : 0;
  }
  const double recall = static_cast<double>(hits) / pairs;
  EXPECT_GE(recall, 0.95);
  RecordProperty("recall", std::to_string(recall));
  std::printf("capacity N=65536 M=%d recall=%.4f slots_used=%llu\n", pairs, recall,
              static_cast<unsigned long long>(Stats(*store).slots_used()));
}

TEST(FwpkmStoreTest, ACallAppliesItsFullChunksAndThenItsPartialChunk) {
  std::mt19937_64 rng(9);
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_VECTOR, 3, 8);
  spec.mutable_fwpkm()->set_sub_keys(16);
  spec.mutable_fwpkm()->set_chunk(4);
  std::unique_ptr<FwpkmStore> store = Make(spec);
  const std::vector<float> k = Gaussian(rng, 8 * 8), y = Gaussian(rng, 8 * 3);
  auto batch = [&](int from, int to) {
    return VectorBatch(std::vector<float>(k.begin() + from * 8, k.begin() + to * 8), 8,
                       std::vector<float>(y.begin() + from * 3, y.begin() + to * 3));
  };
  EXPECT_EQ(store->Predict(k.data(), 1, 8, 1).status().code(), StatusCode::kFailedPrecondition);
  // Three items, short of a chunk: applied when the call ends, readable at once.
  auto r = Apply(*store, batch(0, 3));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->version, 1u);
  EXPECT_EQ(Stats(*store).pending(), 0u);
  EXPECT_EQ(Stats(*store).chunks(), 1u);
  ASSERT_TRUE(store->Predict(k.data(), 1, 8, 1).ok());
  // Five items: one full chunk and a partial one.
  r = Apply(*store, batch(3, 8));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->version, 3u);
  EXPECT_EQ(Stats(*store).pending(), 0u);
  // Compile has nothing queued to apply: the version stays.
  auto c = store->Compile(adapt::v1::CompileRequest());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->version(), 3u);
  // Passes: each pass is applied before the next one is read.
  r = Apply(*store, VectorBatch(std::vector<float>(k.begin(), k.begin() + 16), 8,
                                std::vector<float>(y.begin(), y.begin() + 6), /*passes=*/3));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->version, 6u);
  EXPECT_EQ(Stats(*store).chunks(), 6u);
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.examples(), 10u);
}

// Chunks are cut per call, in the call's order: one call of two messages (3 + 3 items, C = 4)
// applies chunks of 4 and 2, exactly as a call of 4 followed by a call of 2 does; two calls of
// 3 apply chunks of 3 and 3, which reads back differently.
TEST(FwpkmStoreTest, ChunksAreCutWithinACallAndEndWithIt) {
  std::mt19937_64 rng(19);
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_VECTOR, 3, 8);
  spec.mutable_fwpkm()->set_sub_keys(4);
  spec.mutable_fwpkm()->set_top_k(2);
  spec.mutable_fwpkm()->set_chunk(4);
  const std::vector<float> k = Gaussian(rng, 6 * 8), y = Gaussian(rng, 6 * 3);
  const std::vector<float> probe = Gaussian(rng, 32 * 8);
  auto batch = [&](int from, int to) {
    return VectorBatch(std::vector<float>(k.begin() + from * 8, k.begin() + to * 8), 8,
                       std::vector<float>(y.begin() + from * 3, y.begin() + to * 3));
  };
  auto read = [&](const FwpkmStore& store) {
    auto p = store.Predict(probe.data(), 32, 8, 1);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->vectors : std::vector<float>();
  };
  std::unique_ptr<FwpkmStore> one_call = Make(spec);
  {
    std::unique_ptr<Txn> txn = one_call->Begin(TxnKind::kAdapt);
    ASSERT_TRUE(txn->Add(batch(0, 3)).ok());
    ASSERT_TRUE(txn->Add(batch(3, 6)).ok());
    auto r = one_call->Commit(*txn);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->version, 2u);
  }
  std::unique_ptr<FwpkmStore> four_then_two = Make(spec);
  ASSERT_TRUE(Apply(*four_then_two, batch(0, 4)).ok());
  ASSERT_TRUE(Apply(*four_then_two, batch(4, 6)).ok());
  std::unique_ptr<FwpkmStore> three_and_three = Make(spec);
  ASSERT_TRUE(Apply(*three_and_three, batch(0, 3)).ok());
  ASSERT_TRUE(Apply(*three_and_three, batch(3, 6)).ok());
  EXPECT_EQ(read(*one_call), read(*four_then_two));
  EXPECT_NE(read(*one_call), read(*three_and_three));
  EXPECT_EQ(Stats(*one_call).chunks(), 2u);
  EXPECT_EQ(Stats(*three_and_three).chunks(), 2u);
}

TEST(FwpkmStoreTest, LabelStoreReturnsTopLabelsAndConfidence) {
  std::mt19937_64 rng(10);
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_LABELS, 0, 16);
  spec.mutable_fwpkm()->set_chunk(1);
  spec.mutable_fwpkm()->set_addressing_lr(0);
  std::unique_ptr<FwpkmStore> store = Make(spec);
  const std::vector<float> keys = Gaussian(rng, 30 * 16);
  std::vector<std::string> labels;
  for (int i = 0; i < 30; ++i) labels.push_back("l" + std::to_string(i % 5));
  for (int half = 0; half < 2; ++half) {  // the second half is evaluated before its update
    auto b = fwpkm_test::LabelBatch(
        std::vector<float>(keys.begin() + half * 15 * 16, keys.begin() + (half + 1) * 15 * 16), 16,
        std::vector<std::string>(labels.begin() + half * 15, labels.begin() + (half + 1) * 15));
    ASSERT_TRUE(Apply(*store, b).ok());
  }
  auto p = store->Predict(keys.data(), 30, 16, 9);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->top_k, 5);  // clamped to the label count
  int hits = 0;
  for (int i = 0; i < 30; ++i) {
    hits += (*p->label_names)[p->label_ids[i * 5]] == labels[i] ? 1 : 0;
    EXPECT_GE(p->confidence[i], 0.0f);
    EXPECT_LE(p->confidence[i], 1.0f);
  }
  EXPECT_GE(hits, 28);
  const std::vector<float> fresh = Gaussian(rng, 16);
  auto q = store->Predict(fresh.data(), 1, 16, 1);
  ASSERT_TRUE(q.ok());
  EXPECT_LT(q->confidence[0], 0.5f);  // far from everything written
  adapt::v1::StoreInfo info;
  store->Describe(&info);
  EXPECT_EQ(info.labels_size(), 5);
  EXPECT_EQ(info.prequential_evaluated(), 15u);
}

TEST(FwpkmStoreTest, NextStoreLearnsTheFollowingItem) {
  std::mt19937_64 rng(11);
  const int dim = 12, period = 6;
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_NEXT, 0, dim);
  spec.mutable_fwpkm()->set_chunk(4);
  std::unique_ptr<FwpkmStore> store = Make(spec);
  const std::vector<float> items = Gaussian(rng, period * dim);
  // The cycle arrives in messages of 5 items: pairs continue across messages.
  std::vector<float> stream;
  for (int r = 0; r < 8; ++r) stream.insert(stream.end(), items.begin(), items.end());
  for (size_t at = 0; at < stream.size(); at += 5 * dim) {
    const size_t end = std::min(stream.size(), at + 5 * dim);
    auto b = fwpkm_test::SequenceBatch(
        std::vector<float>(stream.begin() + at, stream.begin() + end), dim);
    ASSERT_TRUE(Apply(*store, b).ok());
  }
  EXPECT_EQ(Stats(*store).carried(), 1u);
  ASSERT_TRUE(store->Compile(adapt::v1::CompileRequest()).ok());
  auto p = store->Predict(items.data(), period, dim, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  for (int i = 0; i < period; ++i) {
    const float* want = items.data() + ((i + 1) % period) * dim;
    EXPECT_GT(fwpkm_test::Cosine(p->vectors.data() + i * dim, want, dim), 0.9) << i;
  }
}

// A restarted sequence drops the carried item: a next store fed a_1..a_5, then (restart)
// b_1..b_3, writes the same pairs as a vector store fed (a_t → a_{t+1}) and (b_t → b_{t+1}) in
// the same calls, and not the pair a_5 → b_1.
TEST(FwpkmStoreTest, NextStoreRestartedSequenceDropsTheCarriedItem) {
  std::mt19937_64 rng(13);
  const int dim = 8;
  adapt::v1::StoreSpec next_spec = Spec(OutputSpec::KIND_NEXT, 0, dim);
  adapt::v1::StoreSpec vector_spec = Spec(OutputSpec::KIND_VECTOR, dim, dim);
  for (adapt::v1::StoreSpec* spec : {&next_spec, &vector_spec}) {
    spec->mutable_fwpkm()->set_chunk(2);
    spec->mutable_fwpkm()->set_sub_keys(4);  // 16 slots: the reads below meet the writes
    spec->mutable_fwpkm()->set_top_k(2);
  }
  const std::vector<float> a = Gaussian(rng, 5 * dim), b = Gaussian(rng, 3 * dim);
  auto pairs = [&](const std::vector<float>& items) {
    return VectorBatch(std::vector<float>(items.begin(), items.end() - dim), dim,
                       std::vector<float>(items.begin() + dim, items.end()));
  };
  std::unique_ptr<FwpkmStore> restarted = Make(next_spec);
  std::unique_ptr<FwpkmStore> continued = Make(next_spec);
  std::unique_ptr<FwpkmStore> explicit_pairs = Make(vector_spec);
  for (FwpkmStore* store : {restarted.get(), continued.get()}) {
    ASSERT_TRUE(Apply(*store, fwpkm_test::SequenceBatch(a, dim)).ok());
  }
  auto r = Apply(*restarted, fwpkm_test::SequenceBatch(b, dim, /*restart=*/true));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples, 3u);
  ASSERT_TRUE(Apply(*continued, fwpkm_test::SequenceBatch(b, dim)).ok());
  ASSERT_TRUE(Apply(*explicit_pairs, pairs(a)).ok());
  ASSERT_TRUE(Apply(*explicit_pairs, pairs(b)).ok());
  EXPECT_EQ(Stats(*restarted).carried(), 1u);
  for (FwpkmStore* store : {restarted.get(), continued.get(), explicit_pairs.get()}) {
    ASSERT_TRUE(store->Compile(adapt::v1::CompileRequest()).ok());
  }

  // Read where the pairs were written: at the items themselves.
  std::vector<float> probe = a;
  probe.insert(probe.end(), b.begin(), b.end());
  auto read = [&](const FwpkmStore& store) {
    auto p = store.Predict(probe.data(), 8, dim, 1);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->vectors : std::vector<float>();
  };
  const std::vector<float> got = read(*restarted);
  EXPECT_TRUE(std::any_of(got.begin(), got.end(), [](float v) { return v != 0; }));
  EXPECT_EQ(got, read(*explicit_pairs));
  EXPECT_NE(read(*continued), read(*explicit_pairs));
}

TEST(FwpkmStoreTest, UnwrittenSlotsCostNothing) {
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_VECTOR, 8, 16);
  spec.mutable_fwpkm()->set_sub_keys(4096);  // 16.7M slots
  std::unique_ptr<FwpkmStore> big = Make(spec);
  adapt::v1::StoreInfo empty;
  big->Describe(&empty);
  std::mt19937_64 rng(12);
  ASSERT_TRUE(Apply(*big, VectorBatch(Gaussian(rng, 1000 * 16), 16, Gaussian(rng, 1000 * 8))).ok());
  adapt::v1::StoreInfo info;
  big->Describe(&info);
  EXPECT_EQ(info.fwpkm().slots(), 4096ull * 4096ull);
  EXPECT_GT(info.fwpkm().slots_used(), 0u);
  EXPECT_LE(info.fwpkm().slots_used(), 1000u * 8u);
  // Rows touched × width, not N × width (16.7M × 8 floats would be 512 MiB).
  EXPECT_LT(info.memory_bytes() - empty.memory_bytes(), 2u << 20);
}

TEST(FwpkmStoreTest, FactoryFillsDefaults) {
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend();
  auto store = CreateStore(Spec(OutputSpec::KIND_LABELS, 0, 0), backend.get());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->spec().fwpkm().top_k(), 8u);
  EXPECT_EQ((*store)->spec().fwpkm().key_dim(), 32u);
  EXPECT_EQ((*store)->dim(), 0);
  adapt::v1::StoreSpec bad = Spec(OutputSpec::KIND_LABELS, 0, 0);
  bad.mutable_fwpkm()->set_chunk(0);
  EXPECT_EQ(CreateStore(bad, backend.get()).status().code(), StatusCode::kInvalidArgument);
}

// Addressing runs on the store's backend, created or restored: every chunk update and read
// reaches its ProductKeyScores; where the backend does not support it, the host answers, with
// the CPU's bits either way.
TEST(FwpkmStoreTest, AddressesOnTheConfiguredBackend) {
  std::mt19937_64 rng(31);
  const int dim = 8, m = 3, rows = 10;
  adapt::v1::StoreSpec spec = Spec(OutputSpec::KIND_VECTOR, m, dim);
  spec.mutable_fwpkm()->set_sub_keys(32);
  spec.mutable_fwpkm()->set_chunk(4);
  const std::vector<float> k = Gaussian(rng, rows * dim), y = Gaussian(rng, rows * m);
  std::unique_ptr<FwpkmStore> on_cpu = Make(spec);
  ASSERT_TRUE(Apply(*on_cpu, VectorBatch(k, dim, y)).ok());
  const auto want = on_cpu->Predict(k.data(), rows, dim, 1);
  ASSERT_TRUE(want.ok()) << want.status();
  for (bool supported : {true, false}) {
    SCOPED_TRACE(supported ? "supported" : "unsupported");
    kernels::RecordingBackend backend;
    backend.SetSupported(kernels::Op::kProductKeyScores, supported);
    auto store = CreateStore(spec, &backend);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(Apply(**store, VectorBatch(k, dim, y)).ok());
    const auto got = (*store)->Predict(k.data(), rows, dim, 1);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->vectors, want->vectors);
    EXPECT_EQ(Fingerprint(**store), Fingerprint(*on_cpu));
    // Two full chunks of 4, the partial chunk of 2, and one read.
    const int64_t calls = backend.impl_calls(kernels::Op::kProductKeyScores);
    EXPECT_EQ(calls, supported ? 4 : 0);
    auto snapshot = (*store)->Snapshot();
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    auto restored = RestoreStore(*snapshot, &backend);
    ASSERT_TRUE(restored.ok()) << restored.status();
    const auto again = (*restored)->Predict(k.data(), rows, dim, 1);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->vectors, want->vectors);
    EXPECT_EQ(backend.impl_calls(kernels::Op::kProductKeyScores), supported ? calls + 1 : 0);
  }
  EXPECT_EQ(CreateStore(spec, nullptr).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
