// Base stores for faast and falcon (docs/BASE_STORES.md) at the Store interface: a faast store
// with a base solves S = (G + λI)⁻¹(C + λ·S_base), checked against a float64 LU solve of the
// normal equations on random keys (fewer and more examples than dimensions, rank-deficient
// keys, huge and tiny norms, decay); label columns are the union; the copy survives a
// snapshot; a refresh replaces it; a falcon store starts from its base's state.
#include <lapacke.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/falcon_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using faast_test::Apply;
using faast_test::CompileNow;
using faast_test::LabelBatch;
using faast_test::RandomFloats;
using faast_test::RelError;
using faast_test::VectorBatch;

// (Σ w_r k_r k_rᵀ + λI) S = Σ w_r k_r v_rᵀ + λ·prior, by LU in float64 (d × m, row-major).
std::vector<double> PriorRidge(const std::vector<double>& k, int64_t n, int64_t d,
                               const std::vector<double>& v, int64_t m,
                               const std::vector<double>& w, double lambda,
                               const std::vector<double>& prior) {
  std::vector<double> a(d * d, 0.0), b(d * m, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j) a[i * d + j] += w[r] * k[r * d + i] * k[r * d + j];
      for (int64_t j = 0; j < m; ++j) b[i * m + j] += w[r] * k[r * d + i] * v[r * m + j];
    }
  }
  for (int64_t i = 0; i < d; ++i) a[i * d + i] += lambda;
  for (int64_t i = 0; i < d * m; ++i) b[i] += lambda * prior[i];
  std::vector<lapack_int> piv(d);
  EXPECT_EQ(LAPACKE_dgesv(LAPACK_ROW_MAJOR, d, m, a.data(), d, piv.data(), b.data(), m), 0);
  return b;
}

adapt::v1::StoreSpec RidgeSpec(bool labels, uint32_t m, double ridge) {
  adapt::v1::StoreSpec spec = labels ? faast_test::LabelSpec() : faast_test::VectorSpec(m);
  spec.mutable_faast()->set_ridge(ridge);
  return spec;
}

// The published read-out of `store` (d × columns) and its label names.
std::pair<std::vector<double>, std::vector<std::string>> Published(const Store& store) {
  absl::StatusOr<BaseReadout> r = store.ExportBase();
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  return {r->s, r->label_names};
}

class FaastBaseTest : public ::testing::Test {
 protected:
  // A vector base of width m on d-dim keys, compiled from 40 random pairs.
  std::unique_ptr<Store> VectorBase(int64_t d, int64_t m) {
    std::unique_ptr<Store> base = faast_test::MakeStore(RidgeSpec(false, m, 0.5), backend_.get());
    const std::vector<float> k = RandomFloats(rng_, 40 * d), v = RandomFloats(rng_, 40 * m);
    EXPECT_TRUE(Apply(*base, TxnKind::kAdapt, {VectorBatch(k, d, v, m, 0, 40)}).ok());
    EXPECT_TRUE(CompileNow(*base).ok());
    return base;
  }

  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
  std::mt19937_64 rng_{20261202};
};

// Zero examples: S = S_base exactly, published at once as version 1. Then each case adds
// examples and compiles; the result must equal the prior-ridge solve of the same data.
TEST_F(FaastBaseTest, VectorStoreSolvesTowardsTheBase) {
  struct Case {
    const char* name;
    int64_t d, n;
    double key_scale, ridge, decay;
    int64_t rank;  // < d: rank-deficient keys
  };
  const Case cases[] = {
      {"few_shot", 12, 5, 1.0, 0.3, 1.0, 12},       {"gram", 6, 50, 1.0, 0.3, 1.0, 6},
      {"rank_deficient", 10, 30, 1.0, 0.1, 1.0, 3}, {"huge_keys", 6, 40, 1e4, 1e6, 1.0, 6},
      {"tiny_keys", 6, 40, 1e-4, 1e-8, 1.0, 6},     {"decay_few_shot", 12, 7, 1.0, 0.2, 0.9, 12},
      {"decay_gram", 5, 60, 1.0, 0.2, 0.97, 5},
  };
  const int64_t m = 3;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Store> base = VectorBase(c.d, m);
    const auto [s_base, unused] = Published(*base);
    adapt::v1::StoreSpec spec = RidgeSpec(false, m, c.ridge);
    if (c.decay < 1) spec.mutable_faast()->set_decay(c.decay);
    std::unique_ptr<Store> store = faast_test::MakeStore(spec, backend_.get());
    absl::StatusOr<BaseReadout> copy = base->ExportBase();
    ASSERT_TRUE(copy.ok());
    ASSERT_TRUE(store->StartFromBase(*copy).ok());
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    EXPECT_EQ(info.version(), 1u);
    EXPECT_EQ(info.faast().base_version(), copy->version);
    EXPECT_LT(RelError(Published(*store).first, s_base), 1e-15);

    std::vector<float> k = c.rank < c.d ? faast_test::LowRankFloats(rng_, c.n, c.d, c.rank)
                                        : RandomFloats(rng_, c.n * c.d);
    for (float& x : k) x = static_cast<float>(x * c.key_scale);
    const std::vector<float> v = RandomFloats(rng_, c.n * m);
    // Two commits, so decay applies per example across them.
    const int64_t half = c.n / 2;
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(k, c.d, v, m, 0, half)}).ok());
    ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(k, c.d, v, m, half, c.n - half)}).ok());
    absl::StatusOr<adapt::v1::CompileResponse> done = CompileNow(*store);
    ASSERT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->faast().base_version(), copy->version);
    std::vector<double> w(c.n);
    for (int64_t r = 0; r < c.n; ++r) w[r] = std::pow(c.decay, static_cast<double>(c.n - 1 - r));
    const std::vector<double> want = PriorRidge(faast_test::ToDoubles(k), c.n, c.d,
                                                faast_test::ToDoubles(v), m, w, c.ridge, s_base);
    EXPECT_LT(RelError(Published(*store).first, want), 1e-9);
    // The base matters: the plain ridge solve is elsewhere.
    EXPECT_GT(RelError(Published(*store).first,
                       PriorRidge(faast_test::ToDoubles(k), c.n, c.d, faast_test::ToDoubles(v), m,
                                  w, c.ridge, std::vector<double>(c.d * m, 0.0))),
              1e-6);
  }
}

// Labels are the union: the store's own labels after the base's; a label the base lacks starts
// at zero in S_base, one only the base knows keeps the base's column. Forget returns to S_base.
TEST_F(FaastBaseTest, LabelColumnsAreTheUnion) {
  const int64_t d = 8;
  std::unique_ptr<Store> base = faast_test::MakeStore(RidgeSpec(true, 0, 0.5), backend_.get());
  const std::vector<float> kb = RandomFloats(rng_, 30 * d);
  std::vector<std::string> lb;
  for (int i = 0; i < 30; ++i)
    lb.push_back(i % 3 == 0 ? "billing" : (i % 3 == 1 ? "returns" : "x"));
  ASSERT_TRUE(Apply(*base, TxnKind::kAdapt, {LabelBatch(kb, d, lb)}).ok());
  ASSERT_TRUE(CompileNow(*base).ok());
  const auto [s_base, base_labels] = Published(*base);
  ASSERT_EQ(base_labels, (std::vector<std::string>{"billing", "returns", "x"}));

  const double ridge = 0.7;
  std::unique_ptr<Store> store = faast_test::MakeStore(RidgeSpec(true, 0, ridge), backend_.get());
  ASSERT_TRUE(store->StartFromBase(*base->ExportBase()).ok());
  const int64_t n = 20;
  const std::vector<float> k = RandomFloats(rng_, n * d);
  std::vector<std::string> labels;
  for (int i = 0; i < n; ++i) labels.push_back(i % 2 == 0 ? "returns" : "shipping");
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {LabelBatch(k, d, labels)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  const auto [s, names] = Published(*store);
  ASSERT_EQ(names, (std::vector<std::string>{"billing", "returns", "x", "shipping"}));
  const int64_t m = 4;
  std::vector<double> prior(d * m, 0.0), v(n * m, 0.0);
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < 3; ++j) prior[i * m + j] = s_base[i * 3 + j];
  }
  const std::map<std::string, int> column = {
      {"billing", 0}, {"returns", 1}, {"x", 2}, {"shipping", 3}};
  for (int64_t r = 0; r < n; ++r) v[r * m + column.at(labels[r])] = 1.0;
  const std::vector<double> want =
      PriorRidge(faast_test::ToDoubles(k), n, d, v, m, std::vector<double>(n, 1.0), ridge, prior);
  EXPECT_LT(RelError(s, want), 1e-9);

  // Forget every example: back to S_base (with a zero column for the store's own label).
  ASSERT_TRUE(Apply(*store, TxnKind::kForget, {LabelBatch(k, d, labels)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  EXPECT_LT(RelError(Published(*store).first, prior), 1e-12);
}

// The copy is the store's own data: a snapshot carries it, the base may change afterwards,
// and only a refresh takes the base's new version.
TEST_F(FaastBaseTest, SnapshotKeepsTheCopyAndRefreshReplacesIt) {
  const int64_t d = 6, m = 2;
  std::unique_ptr<Store> base = VectorBase(d, m);
  std::unique_ptr<Store> store = faast_test::MakeStore(RidgeSpec(false, m, 0.4), backend_.get());
  ASSERT_TRUE(store->StartFromBase(*base->ExportBase()).ok());
  const std::vector<float> k = RandomFloats(rng_, 9 * d), v = RandomFloats(rng_, 9 * m);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(k, d, v, m, 0, 9)}).ok());
  ASSERT_TRUE(CompileNow(*store).ok());

  absl::StatusOr<adapt::v1::StoreSnapshot> snap = store->Snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->faast().has_prior());
  absl::StatusOr<std::unique_ptr<Store>> restored = RestoreStore(*snap, backend_.get());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(faast_test::Fingerprint(**restored), faast_test::Fingerprint(*store));
  ASSERT_TRUE(CompileNow(**restored).ok());
  EXPECT_LT(RelError(Published(**restored).first, Published(*store).first), 1e-15);

  // A snapshot whose copy has the wrong size, or that lost it, does not restore.
  adapt::v1::StoreSnapshot broken = *snap;
  broken.mutable_faast()->mutable_prior()->mutable_s()->RemoveLast();
  EXPECT_EQ(RestoreStore(broken, backend_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
  broken = *snap;
  broken.mutable_spec()->set_base("acme/base");
  broken.mutable_faast()->clear_prior();
  EXPECT_EQ(RestoreStore(broken, backend_.get()).status().code(),
            absl::StatusCode::kInvalidArgument);

  // The base learns more; the store does not move until it refreshes.
  const std::vector<double> before = Published(*store).first;
  const std::vector<float> kb = RandomFloats(rng_, 30 * d), vb = RandomFloats(rng_, 30 * m);
  ASSERT_TRUE(Apply(*base, TxnKind::kAdapt, {VectorBatch(kb, d, vb, m, 0, 30)}).ok());
  ASSERT_TRUE(CompileNow(*base).ok());
  ASSERT_TRUE(CompileNow(*store).ok());
  EXPECT_EQ(Published(*store).first, before);
  absl::StatusOr<BaseReadout> fresh = base->ExportBase();
  ASSERT_TRUE(fresh.ok());
  absl::StatusOr<adapt::v1::CompileResponse> refreshed =
      store->CompileWithBase(adapt::v1::CompileRequest(), *fresh);
  ASSERT_TRUE(refreshed.ok()) << refreshed.status();
  EXPECT_EQ(refreshed->faast().base_version(), fresh->version);
  const std::vector<double> want =
      PriorRidge(faast_test::ToDoubles(k), 9, d, faast_test::ToDoubles(v), m,
                 std::vector<double>(9, 1.0), 0.4, fresh->s);
  EXPECT_LT(RelError(Published(*store).first, want), 1e-9);
}

TEST_F(FaastBaseTest, RefusalsLeaveTheStoreAsItWas) {
  const int64_t d = 6, m = 2;
  std::unique_ptr<Store> base = VectorBase(d, m);
  const BaseReadout copy = *base->ExportBase();
  // The spectral solve has no place for a prior.
  std::unique_ptr<Store> spectral = faast_test::MakeStore(RidgeSpec(false, m, 0), backend_.get());
  absl::Status refused = spectral->StartFromBase(copy);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().substr(0, 10), "spec.base:") << refused;
  // Another width, another dimension.
  std::unique_ptr<Store> wide = faast_test::MakeStore(RidgeSpec(false, m + 1, 1), backend_.get());
  EXPECT_EQ(wide->StartFromBase(copy).code(), absl::StatusCode::kInvalidArgument);
  std::unique_ptr<Store> labels = faast_test::MakeStore(RidgeSpec(true, 0, 1), backend_.get());
  EXPECT_EQ(labels->StartFromBase(copy).code(), absl::StatusCode::kInvalidArgument);

  std::unique_ptr<Store> store = faast_test::MakeStore(RidgeSpec(false, m, 0.4), backend_.get());
  ASSERT_TRUE(store->StartFromBase(copy).ok());
  const std::string before = faast_test::Fingerprint(*store);
  EXPECT_EQ(store->StartFromBase(copy).code(), absl::StatusCode::kFailedPrecondition);
  adapt::v1::FaastParams no_ridge;
  no_ridge.set_ridge(0);
  absl::StatusOr<adapt::v1::CompileResponse> spectral_compile = CompileNow(*store, no_ridge);
  EXPECT_EQ(spectral_compile.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spectral_compile.status().message().substr(0, 11), "faast.ridge")
      << spectral_compile.status();
  BaseReadout other = copy;
  other.dim = d + 1;
  other.s.resize((d + 1) * m, 0.0);
  EXPECT_EQ(store->CompileWithBase(adapt::v1::CompileRequest(), other).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(faast_test::Fingerprint(*store), before);
  // A store without a base has nothing to refresh.
  EXPECT_EQ(spectral->CompileWithBase(adapt::v1::CompileRequest(), copy).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Falcon starts from the base's state and learns on exactly as the base itself does (variant 1
// with a constant β, so the new store's own step count does not matter). A faast base gives its
// read-out.
TEST_F(FaastBaseTest, FalconStartsFromTheBaseState) {
  const int64_t d = 5, m = 2, n = 40;
  adapt::v1::StoreSpec spec =
      falcon_test::Spec(adapt::v1::FalconParams::VARIANT_1, adapt::v1::OutputSpec::KIND_VECTOR, m);
  std::unique_ptr<Store> base = falcon_test::Make(spec, backend_.get());
  const std::vector<float> k = RandomFloats(rng_, 2 * n * d), v = RandomFloats(rng_, 2 * n * m);
  ASSERT_TRUE(Apply(*base, TxnKind::kAdapt, {VectorBatch(k, d, v, m, 0, n)}).ok());
  std::unique_ptr<Store> store = falcon_test::Make(spec, backend_.get());
  ASSERT_TRUE(store->StartFromBase(*base->ExportBase()).ok());
  EXPECT_EQ(store->ExportBase()->s, base->ExportBase()->s);
  ASSERT_TRUE(Apply(*store, TxnKind::kAdapt, {VectorBatch(k, d, v, m, n, n)}).ok());
  ASSERT_TRUE(Apply(*base, TxnKind::kAdapt, {VectorBatch(k, d, v, m, n, n)}).ok());
  EXPECT_LT(RelError(store->ExportBase()->s, base->ExportBase()->s), 1e-14);

  std::unique_ptr<Store> faast = VectorBase(d, m);
  std::unique_ptr<Store> from_faast = falcon_test::Make(spec, backend_.get());
  ASSERT_TRUE(from_faast->StartFromBase(*faast->ExportBase()).ok());
  EXPECT_EQ(from_faast->ExportBase()->s, faast->ExportBase()->s);
  // Keys normalised one way cannot start from weights of keys read another.
  adapt::v1::StoreSpec l2 = spec;
  l2.mutable_falcon()->set_key_norm(adapt::v1::FalconParams::KEY_NORM_L2);
  std::unique_ptr<Store> normalised = falcon_test::Make(l2, backend_.get());
  absl::Status refused = normalised->StartFromBase(*faast->ExportBase());
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().substr(0, 21), "spec.falcon.key_norm:") << refused;
}

}  // namespace
}  // namespace adaptd
