// FwpkmStore snapshots: a round trip keeps every bit of state (the carried item included) and
// the restored store goes on exactly like the original; a queue that an older version left is
// applied; broken snapshots fail.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/fwpkm_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using adapt::v1::OutputSpec;
using fwpkm_test::Apply;
using fwpkm_test::Fingerprint;
using fwpkm_test::Gaussian;

std::unique_ptr<Store> RoundTrip(const Store& store) {
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = store.Snapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  // The restored store keeps its backend: the shared one outlives it.
  absl::StatusOr<std::unique_ptr<Store>> restored =
      RestoreStore(*snapshot, &kernels::HostBackend());
  EXPECT_TRUE(restored.ok()) << restored.status();
  return restored.ok() ? std::move(*restored) : nullptr;
}

TEST(FwpkmSnapshotTest, RoundTripKeepsStateAndContinuesIdentically) {
  std::mt19937_64 rng(13);
  for (bool bf16 : {false, true}) {
    adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_NEXT, 0, 0);
    spec.mutable_fwpkm()->set_sub_keys(32);
    spec.mutable_fwpkm()->set_chunk(7);
    spec.mutable_fwpkm()->set_key_dim(6);
    if (bf16) spec.mutable_fwpkm()->set_value_type(adapt::v1::FwpkmParams::VALUE_TYPE_BFLOAT16);
    std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(spec);
    ASSERT_TRUE(Apply(*store, fwpkm_test::SequenceBatch(Gaussian(rng, 40 * 10), 10)).ok());
    std::unique_ptr<Store> copy = RoundTrip(*store);
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(Fingerprint(*copy), Fingerprint(*store));
    const std::vector<float> more = Gaussian(rng, 9 * 10);
    ASSERT_TRUE(Apply(*store, fwpkm_test::SequenceBatch(more, 10)).ok());
    ASSERT_TRUE(Apply(*copy, fwpkm_test::SequenceBatch(more, 10)).ok());
    EXPECT_EQ(Fingerprint(*copy), Fingerprint(*store));
    auto a = store->Predict(more.data(), 9, 10, 1), b = copy->Predict(more.data(), 9, 10, 1);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->vectors, b->vectors);
  }
}

TEST(FwpkmSnapshotTest, LabelStoreRoundTrip) {
  std::mt19937_64 rng(14);
  adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_LABELS, 0, 8);
  spec.mutable_fwpkm()->set_sub_keys(16);
  spec.mutable_fwpkm()->set_chunk(5);
  std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(spec);
  ASSERT_TRUE(Apply(*store, fwpkm_test::LabelBatch(
                                Gaussian(rng, 12 * 8), 8,
                                {"a", "b", "c", "a", "b", "c", "d", "a", "a", "b", "e", "f"}))
                  .ok());
  std::unique_ptr<Store> copy = RoundTrip(*store);
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(Fingerprint(*copy), Fingerprint(*store));
}

// A snapshot taken when a commit could leave a partial chunk queued: restored with its queue,
// which Compile, or the next commit with its own items, applies.
TEST(FwpkmSnapshotTest, QueuedItemsOfAnOlderStateAreApplied) {
  std::mt19937_64 rng(16);
  adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_VECTOR, 3, 8);
  spec.mutable_fwpkm()->set_sub_keys(16);
  spec.mutable_fwpkm()->set_chunk(4);
  std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(spec);
  ASSERT_TRUE(
      Apply(*store, fwpkm_test::VectorBatch(Gaussian(rng, 4 * 8), 8, Gaussian(rng, 4 * 3))).ok());
  adapt::v1::StoreSnapshot snapshot = *store->Snapshot();
  for (float q : Gaussian(rng, 2 * 8)) snapshot.mutable_fwpkm()->add_pending_queries(q);
  for (float t : Gaussian(rng, 2 * 3)) snapshot.mutable_fwpkm()->add_pending_targets(t);
  for (bool by_compile : {true, false}) {
    absl::StatusOr<std::unique_ptr<Store>> restored =
        RestoreStore(snapshot, &kernels::HostBackend());
    ASSERT_TRUE(restored.ok()) << restored.status();
    adapt::v1::StoreInfo info;
    (*restored)->Describe(&info);
    EXPECT_EQ(info.fwpkm().pending(), 2u);
    EXPECT_EQ(info.version(), 1u);
    if (by_compile) {
      ASSERT_TRUE((*restored)->Compile(adapt::v1::CompileRequest()).ok());
    } else {
      ASSERT_TRUE(
          Apply(**restored, fwpkm_test::VectorBatch(Gaussian(rng, 1 * 8), 8, Gaussian(rng, 1 * 3)))
              .ok());
    }
    (*restored)->Describe(&info);
    EXPECT_EQ(info.fwpkm().pending(), 0u);
    EXPECT_EQ(info.version(), 2u);
  }
}

TEST(FwpkmSnapshotTest, BrokenSnapshotsAreRejected) {
  std::mt19937_64 rng(15);
  adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_VECTOR, 3, 8);
  spec.mutable_fwpkm()->set_sub_keys(16);
  spec.mutable_fwpkm()->set_chunk(4);
  std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(spec);
  ASSERT_TRUE(
      Apply(*store, fwpkm_test::VectorBatch(Gaussian(rng, 6 * 8), 8, Gaussian(rng, 6 * 3))).ok());
  const adapt::v1::StoreSnapshot good = *store->Snapshot();
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend();
  std::vector<void (*)(adapt::v1::StoreSnapshot*)> breakers = {
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->mutable_values()->RemoveLast(); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->set_slots(0, 1u << 30); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->mutable_sub_keys_1()->Set(0, NAN); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->set_sub_keys(8); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->add_pending_queries(0.5f); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->add_carry_query(0.5f); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_fwpkm()->set_columns(4); },
      [](adapt::v1::StoreSnapshot* s) { s->clear_fwpkm(); },
      [](adapt::v1::StoreSnapshot* s) { s->mutable_spec()->mutable_fwpkm()->set_top_k(0); },
  };
  for (size_t i = 0; i < breakers.size(); ++i) {
    adapt::v1::StoreSnapshot bad = good;
    breakers[i](&bad);
    EXPECT_EQ(RestoreStore(bad, backend.get()).status().code(), absl::StatusCode::kInvalidArgument)
        << i;
  }
}

}  // namespace
}  // namespace adaptd
