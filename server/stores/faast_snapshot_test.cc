// Snapshot → RestoreStore round trips, and the validation of snapshots that do not hold
// together.
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using testing_util::StartsWithField;

using adapt::v1::StoreSnapshot;
using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::LabelBatch;
using faast_test::LabelSpec;
using faast_test::MakeStore;
using faast_test::VectorBatch;
using faast_test::VectorSpec;

std::unique_ptr<Store> Restore(const StoreSnapshot& snapshot, kernels::Backend* backend) {
  absl::StatusOr<std::unique_ptr<Store>> store = RestoreStore(snapshot, backend);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

void ExpectSamePredictions(const Store& a, const Store& b, const std::vector<float>& keys,
                           int64_t rows, int64_t dim) {
  absl::StatusOr<Predictions> pa = a.Predict(keys.data(), rows, dim, 3);
  absl::StatusOr<Predictions> pb = b.Predict(keys.data(), rows, dim, 3);
  ASSERT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(pa->version, pb->version);
  EXPECT_EQ(pa->label_ids, pb->label_ids);
  EXPECT_EQ(pa->scores, pb->scores);
  EXPECT_EQ(pa->vectors, pb->vectors);
  if (pa->label_names != nullptr) {
    EXPECT_EQ(*pa->label_names, *pb->label_names);
  }
}

std::string Info(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  info.mutable_faast()->clear_compile_seconds();
  // Vector capacities depend on how the state was built (appends vs one copy).
  info.clear_memory_bytes();
  return info.DebugString();
}

class FaastSnapshotTest : public ::testing::Test {
 protected:
  static constexpr int64_t kDim = 12;
  void SetUp() override {
    std::mt19937_64 rng(17);
    keys_ = faast_test::RandomFloats(rng, 60 * kDim);
    targets_ = faast_test::RandomFloats(rng, 60 * 2);
    for (int r = 0; r < 60; ++r) labels_.push_back("k" + std::to_string(r % 5));
  }
  std::vector<float> keys_, targets_;
  std::vector<std::string> labels_;
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend();
};

TEST_F(FaastSnapshotTest, LabelStoreRoundTripKeepsVersionAndPredictions) {
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 40, 20)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  absl::StatusOr<StoreSnapshot> snapshot = store->Snapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->faast().version(), 2u);
  EXPECT_EQ(snapshot->faast().g_size(), 0);  // G goes as its upper triangle
  EXPECT_EQ(snapshot->faast().g_upper_size(), kDim * (kDim + 1) / 2);
  std::unique_ptr<Store> restored = Restore(*snapshot, backend_.get());
  ASSERT_NE(restored, nullptr);
  ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
  EXPECT_EQ(Info(*store), Info(*restored));
  EXPECT_EQ(restored->Snapshot()->SerializeAsString(), snapshot->SerializeAsString());
  // Both go on identically.
  for (Store* s : {static_cast<Store*>(store.get()), restored.get()}) {
    ASSERT_TRUE(Apply(*s, TxnKind::kForget, {LabelBatch(keys_, kDim, labels_, 0, 10)}).ok());
    absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*s);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->version(), 3u);
  }
  ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
}

TEST_F(FaastSnapshotTest, FewShotVectorStoreRoundTripKeepsRawPairs) {
  adapt::v1::StoreSpec spec = VectorSpec(2);
  spec.mutable_faast()->set_decay(0.9);
  auto store = MakeStore(spec, backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt,
                    {VectorBatch(keys_, kDim, targets_, 2, 0, 4),
                     VectorBatch(keys_, kDim, targets_, 2, 4, 3)})
                  .ok());
  adapt::v1::FaastParams overrides;
  overrides.set_rcond(1e-3);
  ASSERT_TRUE(CompileNow(*store, overrides).ok());
  absl::StatusOr<StoreSnapshot> snapshot = store->Snapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_TRUE(snapshot->faast().raw_kept());
  EXPECT_EQ(snapshot->faast().raw_weights_size(), 7);
  EXPECT_DOUBLE_EQ(snapshot->spec().faast().rcond(), 1e-3);
  std::unique_ptr<Store> restored = Restore(*snapshot, backend_.get());
  ASSERT_NE(restored, nullptr);
  ExpectSamePredictions(*store, *restored, keys_, 10, kDim);
  EXPECT_EQ(Info(*store), Info(*restored));
}

TEST_F(FaastSnapshotTest, UncompiledAndEmptyStoresRoundTrip) {
  auto empty = MakeStore(LabelSpec(), backend_.get());
  std::unique_ptr<Store> restored = Restore(*empty->Snapshot(), backend_.get());
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->dim(), 0);
  EXPECT_EQ(CompileNow(*restored).status().code(), absl::StatusCode::kFailedPrecondition);

  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 0, 30)}).ok());
  restored = Restore(*store->Snapshot(), backend_.get());
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->Predict(keys_.data(), 1, kDim, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(CompileNow(*store).ok());
  ASSERT_TRUE(CompileNow(*restored).ok());
  ExpectSamePredictions(*store, *restored, keys_, 5, kDim);
}

// A backend on which every operation fails: a restore through it cannot have solved.
std::unique_ptr<faast_test::FlakyBackend> FailingBackend() {
  auto backend = std::make_unique<faast_test::FlakyBackend>();
  backend->fail_syrk = backend->fail_gemm = backend->fail_eigen = backend->fail_cholesky = true;
  return backend;
}

adapt::v1::FaastStats CompileStats(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  return info.faast();
}

// One-hot labels, vector outputs and label embeddings: the read-out comes back as it was
// published, with no solve (the restore runs on a backend that fails every operation), and the
// compile's own report (compile_seconds included) is the original's.
TEST_F(FaastSnapshotTest, RestorePublishesTheSnapshotReadOutWithoutSolving) {
  adapt::v1::StoreSpec embedded = LabelSpec();
  embedded.mutable_output()->set_label_encoder("identity");
  embedded.mutable_output()->set_label_dim(2);
  std::vector<std::pair<adapt::v1::StoreSpec, ExampleBatch>> cases = {
      {LabelSpec(), LabelBatch(keys_, kDim, labels_, 0, 40)},
      {VectorSpec(2), VectorBatch(keys_, kDim, targets_, 2, 0, 40)},
      {embedded, LabelBatch(keys_, kDim, labels_, 0, 40)}};
  // Each label's embedding is its first example's target; later ones repeat it.
  ExampleBatch& e = cases[2].second;
  e.targets.resize(e.rows * 2);
  for (int64_t r = 0; r < e.rows; ++r) {
    const int64_t first = r % 5;
    e.targets[r * 2] = targets_[first * 2];
    e.targets[r * 2 + 1] = targets_[first * 2 + 1];
  }
  for (const auto& [spec, batch] : cases) {
    SCOPED_TRACE(spec.ShortDebugString());
    auto store = MakeStore(spec, backend_.get());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {batch}).ok());
    ASSERT_TRUE(CompileNow(*store).ok());
    ASSERT_TRUE(CompileNow(*store).ok());
    const StoreSnapshot snapshot = *store->Snapshot();
    ASSERT_TRUE(snapshot.faast().has_published());
    const bool one_hot = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS &&
                         spec.output().label_encoder().empty();
    EXPECT_EQ(snapshot.faast().published().s_size(), kDim * (one_hot ? 5 : 2));
    auto failing = FailingBackend();
    std::unique_ptr<Store> restored = Restore(snapshot, failing.get());
    ASSERT_NE(restored, nullptr);
    failing->fail_gemm = false;  // Predict multiplies by S
    ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
    EXPECT_EQ(Info(*store), Info(*restored));
    EXPECT_EQ(CompileStats(*restored).compile_seconds(), CompileStats(*store).compile_seconds());
    EXPECT_EQ(restored->Snapshot()->SerializeAsString(), snapshot.SerializeAsString());
  }
}

// A snapshot written before the read-out was kept restores by solving the statistics again,
// publishing the snapshot's version.
TEST_F(FaastSnapshotTest, SnapshotWithoutReadOutRestoresBySolvingAgain) {
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  StoreSnapshot old_format = *store->Snapshot();
  old_format.mutable_faast()->clear_published();
  old_format.mutable_faast()->clear_pending_examples();
  auto failing = FailingBackend();
  EXPECT_EQ(RestoreStore(old_format, failing.get()).status().code(), absl::StatusCode::kInternal);
  std::unique_ptr<Store> restored = Restore(old_format, backend_.get());
  ASSERT_NE(restored, nullptr);
  ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
  EXPECT_EQ(Info(*store), Info(*restored));
  // Its next snapshot carries the read-out.
  EXPECT_TRUE(restored->Snapshot()->faast().has_published());
}

// Examples (and a label) adapted after the last compile come back pending: the same version
// predicts as before, and the next compile publishes everything.
TEST_F(FaastSnapshotTest, ExamplesAfterTheLastCompileRestorePending) {
  std::vector<std::string> labels = labels_;
  for (int r = 40; r < 60; r += 4) labels[r] = "late";
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels, 40, 20)}).ok());
  const StoreSnapshot snapshot = *store->Snapshot();
  EXPECT_EQ(snapshot.faast().labels_size(), 6);
  EXPECT_EQ(snapshot.faast().published().labels(), 5u);
  EXPECT_EQ(snapshot.faast().pending_examples(), 20u);
  auto failing = FailingBackend();
  std::unique_ptr<Store> restored = Restore(snapshot, failing.get());
  ASSERT_NE(restored, nullptr);
  failing->fail_gemm = failing->fail_syrk = false;
  failing->fail_eigen = failing->fail_cholesky = false;
  ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
  EXPECT_EQ(Info(*store), Info(*restored));
  EXPECT_EQ(CompileStats(*restored).pending_examples(), 20u);
  for (Store* s : {static_cast<Store*>(store.get()), restored.get()}) {
    absl::StatusOr<adapt::v1::CompileResponse> c = CompileNow(*s);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->version(), 2u);
    EXPECT_EQ(c->faast().compiled_examples(), 60.0);
    EXPECT_EQ(c->faast().pending_examples(), 0u);
  }
  ExpectSamePredictions(*store, *restored, keys_, 60, kDim);
  EXPECT_EQ(restored->Predict(keys_.data(), 1, kDim, 6)->label_names->size(), 6u);
}

// A state as written before G went as its upper triangle: G whole (dim × dim).
void WholeG(adapt::v1::FaastState* state) {
  const int64_t d = state->dim();
  std::vector<double> whole(d * d);
  int k = 0;
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = i; j < d; ++j) whole[i * d + j] = whole[j * d + i] = state->g_upper(k++);
  }
  state->clear_g_upper();
  state->mutable_g()->Add(whole.begin(), whole.end());
}

// A state written with G whole (before it went as its upper triangle) restores to the same
// store, and is written back in the new form.
TEST_F(FaastSnapshotTest, AStateWithGWholeStillRestores) {
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 0, 40)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  const StoreSnapshot current = *store->Snapshot();
  StoreSnapshot old = current;
  WholeG(old.mutable_faast());
  ASSERT_EQ(old.faast().g_size(), kDim * kDim);
  std::unique_ptr<Store> restored = Restore(old, backend_.get());
  ASSERT_NE(restored, nullptr);
  ExpectSamePredictions(*store, *restored, keys_, 40, kDim);
  EXPECT_EQ(restored->Snapshot()->SerializeAsString(), current.SerializeAsString());
}

// Each mutation of a good snapshot must be refused with InvalidArgument naming the field.
TEST_F(FaastSnapshotTest, InconsistentSnapshotsAreInvalidArgument) {
  auto store = MakeStore(LabelSpec(), backend_.get());
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(keys_, kDim, labels_, 0, 8)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  const StoreSnapshot good = *store->Snapshot();
  ASSERT_TRUE(good.faast().raw_kept());
  ASSERT_TRUE(good.faast().has_published());
  struct Mutation {
    std::string field;
    std::function<void(StoreSnapshot*)> apply;
  };
  const std::vector<Mutation> mutations = {
      {"snapshot.faast.g_upper",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_g_upper()->RemoveLast(); }},
      {"snapshot.faast.c", [](StoreSnapshot* s) { s->mutable_faast()->add_c(1.0); }},
      {"snapshot.faast.g_upper", [](StoreSnapshot* s) { s->mutable_faast()->set_g_upper(1, NAN); }},
      {"snapshot.faast.g_upper", [](StoreSnapshot* s) { s->mutable_faast()->add_g(1.0); }},
      // The form written before G went as its upper triangle: G whole, which must be symmetric.
      {"snapshot.faast.g",
       [](StoreSnapshot* s) {
         WholeG(s->mutable_faast());
         s->mutable_faast()->set_g(1, 123.0);
       }},
      {"snapshot.faast.g",
       [](StoreSnapshot* s) {
         WholeG(s->mutable_faast());
         s->mutable_faast()->mutable_g()->RemoveLast();
       }},
      {"snapshot.faast.columns", [](StoreSnapshot* s) { s->mutable_faast()->add_labels("x"); }},
      {"snapshot.faast.labels[1]",
       [](StoreSnapshot* s) { s->mutable_faast()->set_labels(1, s->faast().labels(0)); }},
      {"snapshot.faast.raw_weights", [](StoreSnapshot* s) { s->mutable_faast()->set_examples(9); }},
      {"snapshot.faast.raw_keys",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_raw_keys()->RemoveLast(); }},
      {"snapshot.faast.raw_targets",
       [](StoreSnapshot* s) { s->mutable_faast()->set_raw_targets(0, 0.5); }},
      {"snapshot.faast.raw_weights",
       [](StoreSnapshot* s) { s->mutable_faast()->set_raw_weights(0, -1.0); }},
      {"snapshot.faast.raw_keys",
       [](StoreSnapshot* s) { s->mutable_faast()->set_raw_kept(false); }},
      {"snapshot.faast.dim", [](StoreSnapshot* s) { s->mutable_faast()->set_dim(kDim + 1); }},
      {"snapshot.faast.weighted_examples",
       [](StoreSnapshot* s) { s->mutable_faast()->set_weighted_examples(INFINITY); }},
      {"snapshot.faast.prequential_correct",
       [](StoreSnapshot* s) { s->mutable_faast()->set_prequential_correct(5); }},
      {"snapshot.faast.published.s",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_published()->add_s(0.0); }},
      {"snapshot.faast.published.s",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_published()->set_s(3, NAN); }},
      {"snapshot.faast.published.columns",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_published()->set_columns(1); }},
      {"snapshot.faast.published.labels",
       [](StoreSnapshot* s) { s->mutable_faast()->mutable_published()->set_labels(9); }},
      {"snapshot.faast.published", [](StoreSnapshot* s) { s->mutable_faast()->set_version(0); }},
      {"snapshot.faast.published.compile.compiled_examples",
       [](StoreSnapshot* s) {
         s->mutable_faast()->mutable_published()->mutable_compile()->set_compiled_examples(NAN);
       }},
      {"snapshot.faast.published.compile.effective_rank",
       [](StoreSnapshot* s) {
         s->mutable_faast()->mutable_published()->mutable_compile()->set_effective_rank(kDim + 1);
       }},
      {"snapshot.faast", [](StoreSnapshot* s) { s->clear_faast(); }},
      {"spec.faast.rcond",
       [](StoreSnapshot* s) { s->mutable_spec()->mutable_faast()->set_rcond(3); }},
  };
  for (const Mutation& m : mutations) {
    StoreSnapshot bad = good;
    m.apply(&bad);
    absl::StatusOr<std::unique_ptr<Store>> r = RestoreStore(bad, backend_.get());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << m.field;
    EXPECT_TRUE(StartsWithField(r.status().message(), m.field));
  }
  StoreSnapshot falcon = good;
  falcon.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
  // A faast state under a falcon spec does not hold together.
  EXPECT_EQ(RestoreStore(falcon, backend_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd
