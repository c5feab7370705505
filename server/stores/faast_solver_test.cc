// SolveFaast against independent float64 references (dgesdd pseudo-inverse, dgesv ridge).
#include "server/stores/faast_solver.h"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"

namespace adaptd {
namespace {

using faast_test::PinvReference;
using faast_test::RelError;
using faast_test::RidgeReference;

// Reference accuracy: G squares κ(K), so S from G carries about κ(K_kept)²·1e-16 relative
// error; every case here keeps κ(K_kept) ≤ 1e3 (or far smaller), so 1e-8 leaves margin.
constexpr double kTol = 1e-8;

// Statistics built by plain loops (independent of the store's ingestion): G upper, Cᵀ, raw.
FaastStatistics BuildStats(const std::vector<double>& k, int64_t n, int64_t d,
                           const std::vector<double>& v, int64_t m, const std::vector<double>& w,
                           bool keep_raw) {
  FaastStatistics st;
  st.labels = false;
  st.columns = m;
  st.Allocate(d);
  for (int64_t r = 0; r < n; ++r) {
    const double wr = w.empty() ? 1.0 : w[r];
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = i; j < d; ++j) st.g[i * d + j] += wr * k[r * d + i] * k[r * d + j];
      for (int64_t j = 0; j < m; ++j) st.ct[j * d + i] += wr * k[r * d + i] * v[r * m + j];
    }
    st.weighted_examples += wr;
  }
  st.examples = n;
  st.raw_kept = keep_raw;
  if (keep_raw) {
    st.raw.rows = n;
    st.raw.keys = k;
    st.raw.targets = v;
    st.raw.weights = w.empty() ? std::vector<double>(n, 1.0) : w;
  }
  return st;
}

struct Case {
  std::string name;
  int64_t n, d, m;
  int64_t rank;  // 0: full
  double scale;
  bool few_shot;
  bool repeated = false;  // every key appears twice (with different targets)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class SolverReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(SolverReferenceTest, SpectralMatchesSvdReference) {
  const Case& c = GetParam();
  std::mt19937_64 rng(1234 + c.n * 7 + c.d);
  std::vector<float> kf = c.rank > 0 ? faast_test::LowRankFloats(rng, c.n, c.d, c.rank)
                                     : faast_test::RandomFloats(rng, c.n * c.d);
  for (float& x : kf) x = static_cast<float>(x * c.scale);
  if (c.repeated) {
    for (int64_t r = c.n / 2; r < c.n; ++r) {
      std::copy_n(kf.begin() + (r - c.n / 2) * c.d, c.d, kf.begin() + r * c.d);
    }
  }
  const std::vector<double> k = faast_test::ToDoubles(kf);
  const std::vector<double> v = faast_test::ToDoubles(faast_test::RandomFloats(rng, c.n * c.m));
  auto backend = kernels::MakeCpuBackend();
  FaastSolverParams params;  // ε = N^-1
  absl::StatusOr<FaastSolution> got =
      SolveFaast(BuildStats(k, c.n, c.d, v, c.m, {}, c.few_shot), params, backend.get());
  ASSERT_TRUE(got.ok()) << got.status();
  const double eps = 1.0 / static_cast<double>(c.n);
  const std::vector<double> want = PinvReference(k, c.n, c.d, v, c.m, {}, eps);
  EXPECT_LT(RelError(got->s, want), kTol);
  EXPECT_EQ(got->solver, c.few_shot ? "few_shot" : "spectral");
  EXPECT_DOUBLE_EQ(got->cutoff, eps);
  const int64_t distinct = c.repeated ? c.n / 2 : c.n;
  const int64_t expected_rank = c.rank > 0 ? c.rank : std::min(distinct, c.d);
  EXPECT_EQ(got->effective_rank, expected_rank);
  EXPECT_GE(got->condition_number, 1.0);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SolverReferenceTest,
    ::testing::Values(Case{"NAboveD", 120, 30, 4, 0, 1.0, false},
                      Case{"NBelowDGram", 12, 40, 3, 0, 1.0, false},
                      Case{"NBelowDFewShot", 12, 40, 3, 0, 1.0, true},
                      Case{"RankDeficient", 80, 32, 3, 6, 1.0, false},
                      Case{"RankDeficientFewShot", 20, 32, 3, 6, 1.0, true},
                      Case{"TinyKeys", 90, 24, 2, 0, 1e-6, false},
                      Case{"TinyKeysFewShot", 10, 24, 2, 0, 1e-6, true},
                      Case{"HugeKeys", 90, 24, 2, 0, 1e6, false},
                      Case{"HugeKeysFewShot", 10, 24, 2, 0, 1e6, true},
                      Case{"HugeKeysRankDeficient", 60, 24, 2, 5, 1e6, false},
                      Case{"RepeatedKeys", 80, 24, 3, 0, 1.0, false, true},
                      Case{"RepeatedKeysFewShot", 16, 24, 3, 0, 1.0, true, true}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Orthonormal columns (n × p) by twice-repeated modified Gram-Schmidt.
std::vector<double> Orthonormal(std::mt19937_64& rng, int64_t n, int64_t p) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(n * p);
  for (double& x : q) x = normal(rng);
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t j = 0; j < p; ++j) {
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t r = 0; r < n; ++r) dot += q[r * p + i] * q[r * p + j];
        for (int64_t r = 0; r < n; ++r) q[r * p + j] -= dot * q[r * p + i];
      }
      double norm = 0;
      for (int64_t r = 0; r < n; ++r) norm += q[r * p + j] * q[r * p + j];
      for (int64_t r = 0; r < n; ++r) q[r * p + j] /= std::sqrt(norm);
    }
  }
  return q;
}

// K = U diag(σ) Vᵀ with half the σ in [1e-2, 1] and half in [1e-8, 1e-5]: rcond 1e-3 must drop
// exactly the small half, not a fixed rank.
TEST(SolverTest, RcondDropsGenuinelySmallDirections) {
  const int64_t n = 50, d = 20, m = 3;
  std::mt19937_64 rng(99);
  const std::vector<double> u = Orthonormal(rng, n, d), vv = Orthonormal(rng, d, d);
  std::vector<double> sigma(d);
  for (int64_t i = 0; i < d; ++i) {
    sigma[i] = i < d / 2 ? std::pow(10.0, -2.0 * i / (d / 2 - 1))
                         : std::pow(10.0, -5.0 - 3.0 * (i - d / 2) / (d / 2 - 1));
  }
  std::vector<double> k(n * d, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t a = 0; a < d; ++a) {
      for (int64_t i = 0; i < d; ++i) k[r * d + a] += u[r * d + i] * sigma[i] * vv[a * d + i];
    }
  }
  const std::vector<double> v = faast_test::ToDoubles(faast_test::RandomFloats(rng, n * m));
  auto backend = kernels::MakeCpuBackend();
  FaastSolverParams params;
  params.rcond = 1e-3;
  for (bool few_shot : {false, true}) {
    // Few-shot needs rows < dim: use the first d/2 rows then (rank ≤ 10, still graded).
    const int64_t rows = few_shot ? d / 2 : n;
    std::vector<double> kr(k.begin(), k.begin() + rows * d), vr(v.begin(), v.begin() + rows * m);
    absl::StatusOr<FaastSolution> got =
        SolveFaast(BuildStats(kr, rows, d, vr, m, {}, few_shot), params, backend.get());
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<double> want = PinvReference(kr, rows, d, vr, m, {}, 1e-3);
    EXPECT_LT(RelError(got->s, want), kTol) << "few_shot=" << few_shot;
    if (!few_shot) {
      EXPECT_EQ(got->effective_rank, d / 2);
    }
    EXPECT_DOUBLE_EQ(got->cutoff, 1e-3);
  }
}

TEST(SolverTest, WeightedFewShotEqualsGramPathAndReference) {
  const int64_t n = 14, d = 30, m = 4;
  std::mt19937_64 rng(7);
  const std::vector<double> k = faast_test::ToDoubles(faast_test::RandomFloats(rng, n * d));
  const std::vector<double> v = faast_test::ToDoubles(faast_test::RandomFloats(rng, n * m));
  std::vector<double> w(n);
  for (int64_t r = 0; r < n; ++r) w[r] = std::pow(0.8, static_cast<double>(n - 1 - r));
  auto backend = kernels::MakeCpuBackend();
  FaastSolverParams params;
  params.alpha = 0.8;
  absl::StatusOr<FaastSolution> gram =
      SolveFaast(BuildStats(k, n, d, v, m, w, false), params, backend.get());
  absl::StatusOr<FaastSolution> few =
      SolveFaast(BuildStats(k, n, d, v, m, w, true), params, backend.get());
  ASSERT_TRUE(gram.ok() && few.ok());
  double weighted = 0;
  for (double x : w) weighted += x;
  const std::vector<double> want =
      PinvReference(k, n, d, v, m, w, std::pow(weighted, -params.alpha));
  EXPECT_LT(RelError(gram->s, want), kTol);
  EXPECT_LT(RelError(few->s, want), kTol);
  EXPECT_LT(RelError(few->s, gram->s), kTol);
  EXPECT_EQ(few->effective_rank, gram->effective_rank);
  EXPECT_NEAR(few->condition_number, gram->condition_number, 1e-6 * gram->condition_number);
}

TEST(SolverTest, RidgeMatchesDirectSolveOnBothPaths) {
  auto backend = kernels::MakeCpuBackend();
  std::mt19937_64 rng(21);
  for (int64_t n : {60, 9}) {
    const int64_t d = 25, m = 3;
    const std::vector<double> k = faast_test::ToDoubles(faast_test::RandomFloats(rng, n * d));
    const std::vector<double> v = faast_test::ToDoubles(faast_test::RandomFloats(rng, n * m));
    FaastSolverParams params;
    params.ridge = 0.3;
    const std::vector<double> want = RidgeReference(k, n, d, v, m, {}, params.ridge);
    for (bool few_shot : {false, true}) {
      if (few_shot && n >= d) continue;
      absl::StatusOr<FaastSolution> got =
          SolveFaast(BuildStats(k, n, d, v, m, {}, few_shot), params, backend.get());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LT(RelError(got->s, want), kTol) << "n=" << n << " few_shot=" << few_shot;
      EXPECT_EQ(got->solver, few_shot ? "few_shot" : "ridge");
      EXPECT_EQ(got->effective_rank, d);
      EXPECT_GE(got->condition_number, 1.0);
    }
  }
}

TEST(SolverTest, RidgeNotPositiveDefiniteIsFailedPrecondition) {
  faast_test::FlakyBackend backend;
  backend.fail_cholesky = true;
  std::mt19937_64 rng(3);
  const std::vector<double> k = faast_test::ToDoubles(faast_test::RandomFloats(rng, 40 * 8));
  const std::vector<double> v = faast_test::ToDoubles(faast_test::RandomFloats(rng, 40));
  FaastSolverParams params;
  params.ridge = 1e-3;
  absl::StatusOr<FaastSolution> got =
      SolveFaast(BuildStats(k, 40, 8, v, 1, {}, false), params, &backend);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StartsWith(got.status().message(), "ridge solve failed: ")) << got.status();
  EXPECT_TRUE(
      absl::EndsWith(got.status().message(),
                     "compile with a larger faast.ridge, or ridge = 0 for the spectral filter"))
      << got.status();
}

TEST(SolverTest, NoExamplesGiveZeroWeights) {
  auto backend = kernels::MakeCpuBackend();
  FaastStatistics st;
  st.labels = false;
  st.columns = 2;
  st.Allocate(5);
  absl::StatusOr<FaastSolution> got = SolveFaast(st, FaastSolverParams(), backend.get());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->s, std::vector<double>(10, 0.0));
  EXPECT_EQ(got->effective_rank, 0u);
}

TEST(SolverTest, CutoffFollowsRcondOrCount) {
  FaastSolverParams p;
  EXPECT_DOUBLE_EQ(FaastCutoff(p, 100), 0.01);
  p.alpha = 0.5;
  EXPECT_DOUBLE_EQ(FaastCutoff(p, 100), 0.1);
  EXPECT_DOUBLE_EQ(FaastCutoff(p, 0.25), 1.0);  // capped: the top direction is kept
  EXPECT_DOUBLE_EQ(FaastCutoff(p, 0), 1.0);
  p.rcond = 1e-4;
  EXPECT_DOUBLE_EQ(FaastCutoff(p, 100), 1e-4);
}

}  // namespace
}  // namespace adaptd
