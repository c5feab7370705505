// CPU backend against naive float64 loops on random inputs.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"

namespace adaptd::kernels {
namespace {

std::vector<double> Random(int64_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> dist;
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(CpuBackendTest, GemmTransposedMatchesLoops) {
  std::mt19937_64 rng(1);
  const int64_t m = 7, n = 5, k = 9;
  auto a = Random(k * m, rng);  // stored k×m, used transposed
  auto b = Random(k * n, rng);
  std::vector<double> c(m * n, 1.0);
  auto backend = MakeCpuBackend();
  ASSERT_TRUE(
      backend
          ->Gemm(Trans::kYes, Trans::kNo, m, n, k, 2.0, a.data(), m, b.data(), n, 0.5, c.data(), n)
          .ok());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.5;
      for (int64_t l = 0; l < k; ++l) want += 2.0 * a[l * m + i] * b[l * n + j];
      EXPECT_NEAR(c[i * n + j], want, 1e-12);
    }
  }
}

TEST(CpuBackendTest, SyrkUpperAccumulates) {
  std::mt19937_64 rng(2);
  const int64_t n = 6, k = 4;
  auto a = Random(k * n, rng);
  std::vector<double> c(n * n, 0.0);
  auto backend = MakeCpuBackend();
  ASSERT_TRUE(backend->SyrkUpper(n, k, 1.0, a.data(), n, 0.0, c.data(), n).ok());
  ASSERT_TRUE(backend->SyrkUpper(n, k, 1.0, a.data(), n, 1.0, c.data(), n).ok());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      double want = 0;
      for (int64_t l = 0; l < k; ++l) want += 2.0 * a[l * n + i] * a[l * n + j];
      EXPECT_NEAR(c[i * n + j], want, 1e-12);
    }
  }
}

TEST(CpuBackendTest, SymmetricEigenReconstructs) {
  std::mt19937_64 rng(3);
  const int64_t n = 8;
  auto r = Random(n * n, rng);
  std::vector<double> a(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) a[i * n + j] = r[i * n + j] + r[j * n + i];
  auto q = a;
  std::vector<double> w(n);
  auto backend = MakeCpuBackend();
  ASSERT_TRUE(backend->SymmetricEigen(n, q.data(), w.data()).ok());
  for (int64_t i = 1; i < n; ++i) EXPECT_LE(w[i - 1], w[i]);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < n; ++l) sum += q[i * n + l] * w[l] * q[j * n + l];
      EXPECT_NEAR(sum, a[i * n + j], 1e-10);
    }
  }
}

TEST(CpuBackendTest, CholeskySolveSolvesAndRejectsIndefinite) {
  std::mt19937_64 rng(4);
  const int64_t n = 5, m = 2;
  auto r = Random(n * n, rng);
  std::vector<double> a(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = i == j ? 1.0 : 0.0;
      for (int64_t l = 0; l < n; ++l) sum += r[l * n + i] * r[l * n + j];
      a[i * n + j] = sum;
    }
  }
  auto b = Random(n * m, rng);
  auto factor = a;
  auto x = b;
  auto backend = MakeCpuBackend();
  ASSERT_TRUE(backend->CholeskySolve(n, m, factor.data(), x.data()).ok());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < n; ++l) sum += a[i * n + l] * x[l * m + j];
      EXPECT_NEAR(sum, b[i * m + j], 1e-10);
    }
  }
  std::vector<double> indefinite = {1, 2, 2, 1};
  std::vector<double> rhs = {1, 1};
  auto status = backend->CholeskySolve(2, 1, indefinite.data(), rhs.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace adaptd::kernels
