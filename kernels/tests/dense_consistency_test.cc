// GEMV, float-input SYRK with float64 accumulation, and grouped GEMM: the CPU against float64
// loops, the backend under test against the CPU. Tolerances are relative to the sum of the
// magnitudes of the terms of each output (Σ|alpha·a·x| + |beta·y|): float results 1e-5 (CPU)
// and 2e-5 (device), double results and the float64-accumulated SYRK 1e-12. Every case pads
// the leading dimensions with sentinels that must survive, and covers empty and one-row shapes
// and inputs scaled by 1e-20 and 1e20.
#include <limits>

#include "kernels/tests/consistency_util.h"

namespace adaptd::kernels {
namespace {

template <typename T>
struct GemvCase {
  Trans trans;
  int64_t m, n;
  double scale;
  T beta;
};

template <typename T>
void CheckGemv(Backend& cpu, Backend& dut, const GemvCase<T>& c, double tol) {
  SCOPED_TRACE(testing::Message() << "trans=" << (c.trans == Trans::kYes) << " m=" << c.m
                                  << " n=" << c.n << " scale=" << c.scale << " beta=" << c.beta);
  std::mt19937_64 rng(c.m * 7919 + c.n * 31 + (c.trans == Trans::kYes));
  const int64_t lda = c.n + 3;
  const int64_t x_len = c.trans == Trans::kNo ? c.n : c.m,
                y_len = c.trans == Trans::kNo ? c.m : c.n;
  auto a = RandomVector<T>(std::max<int64_t>(c.m * lda, 1), rng, c.scale);
  auto x = RandomVector<T>(std::max<int64_t>(x_len, 1), rng);
  auto y0 = RandomVector<T>(std::max<int64_t>(y_len, 1), rng);
  if (c.beta == T(0)) std::fill(y0.begin(), y0.end(), std::numeric_limits<T>::quiet_NaN());
  const T alpha = T(0.75);
  std::vector<double> want(y_len), scale(y_len);
  for (int64_t i = 0; i < y_len; ++i) {
    double sum = 0, mag = 0;
    for (int64_t l = 0; l < x_len; ++l) {
      const double av = c.trans == Trans::kNo ? a[i * lda + l] : a[l * lda + i];
      sum += av * x[l];
      mag += std::abs(av * x[l]);
    }
    const double old = c.beta == T(0) ? 0.0 : static_cast<double>(c.beta) * y0[i];
    want[i] = alpha * sum + old;
    scale[i] = std::abs(alpha) * mag + std::abs(old) + std::numeric_limits<double>::min();
  }
  auto y_cpu = y0, y_dut = y0;
  ASSERT_TRUE(
      cpu.Gemv(c.trans, c.m, c.n, alpha, a.data(), lda, x.data(), c.beta, y_cpu.data()).ok());
  const absl::Status s =
      dut.Gemv(c.trans, c.m, c.n, alpha, a.data(), lda, x.data(), c.beta, y_dut.data());
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t i = 0; i < y_len; ++i) {
    ASSERT_TRUE(Near(y_cpu[i], want[i], tol, scale[i])) << "cpu vs float64, y[" << i << "]";
    ASSERT_TRUE(Near(y_dut[i], y_cpu[i], 2 * tol, scale[i])) << "backend vs cpu, y[" << i << "]";
  }
}

TEST_F(ConsistencyTest, Gemv) {
  const int64_t shapes[][2] = {{0, 5}, {5, 0}, {1, 1}, {7, 5}, {130, 67}};
  for (Trans trans : {Trans::kNo, Trans::kYes}) {
    for (const auto& sh : shapes) {
      for (double scale : {1e-20, 1.0, 1e20}) {
        CheckGemv<float>(cpu(), under_test(), {trans, sh[0], sh[1], scale, 0.0f}, 1e-5);
        CheckGemv<float>(cpu(), under_test(), {trans, sh[0], sh[1], scale, -0.5f}, 1e-5);
        CheckGemv<double>(cpu(), under_test(), {trans, sh[0], sh[1], scale, 0.0}, 1e-12);
        CheckGemv<double>(cpu(), under_test(), {trans, sh[0], sh[1], scale, 2.0}, 1e-12);
      }
    }
  }
  float y = 0;
  EXPECT_EQ(under_test().Gemv(Trans::kNo, 2, 3, 1.0f, &y, 1, &y, 0.0f, &y).code(),
            absl::StatusCode::kInvalidArgument)
      << "lda below the row length";
}

void CheckSyrkAccumulate(Backend& cpu, Backend& dut, int64_t n, int64_t k, double beta,
                         double scale) {
  SCOPED_TRACE(testing::Message() << "n=" << n << " k=" << k << " beta=" << beta
                                  << " scale=" << scale);
  std::mt19937_64 rng(n * 131 + k);
  const int64_t lda = n + 2, ldc = n + 1;
  // Entries near 1 + small: float accumulation would lose the small parts (error ~1e-7·k).
  auto a = RandomVector<float>(std::max<int64_t>(k * lda, 1), rng, 1e-3);
  for (float& v : a) v = static_cast<float>((1.0 + v) * scale);
  auto c0 = RandomVector<double>(std::max<int64_t>(n * ldc, 1), rng);
  const double alpha = 1.25;
  auto c_cpu = c0, c_dut = c0;
  ASSERT_TRUE(cpu.SyrkUpperAccumulate(n, k, alpha, a.data(), lda, beta, c_cpu.data(), ldc).ok());
  const absl::Status s =
      dut.SyrkUpperAccumulate(n, k, alpha, a.data(), lda, beta, c_dut.data(), ldc);
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t at = i * ldc + j;
      if (j < i || j >= n) {
        ASSERT_EQ(c_cpu[at], c0[at]) << "cpu wrote outside the upper triangle at " << i << "," << j;
        ASSERT_EQ(c_dut[at], c0[at])
            << "backend wrote outside the upper triangle at " << i << "," << j;
        continue;
      }
      double sum = 0, mag = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double p = static_cast<double>(a[l * lda + i]) * a[l * lda + j];
        sum += p;
        mag += std::abs(p);
      }
      const double old = beta == 0 ? 0.0 : beta * c0[at];
      const double want = alpha * sum + old;
      const double sc = alpha * mag + std::abs(old) + std::numeric_limits<double>::min();
      ASSERT_TRUE(Near(c_cpu[at], want, 1e-12, sc)) << "cpu vs float64 at " << i << "," << j;
      ASSERT_TRUE(Near(c_dut[at], c_cpu[at], 1e-12, sc)) << "backend vs cpu at " << i << "," << j;
    }
  }
}

TEST_F(ConsistencyTest, SyrkUpperAccumulateSumsInFloat64) {
  const int64_t shapes[][2] = {{0, 3}, {1, 1}, {5, 0}, {17, 300}, {64, 1000}};
  for (const auto& sh : shapes) {
    for (double beta : {0.0, 1.0, 0.5}) {
      CheckSyrkAccumulate(cpu(), under_test(), sh[0], sh[1], beta, 1.0);
    }
    CheckSyrkAccumulate(cpu(), under_test(), sh[0], sh[1], 1.0, 1e-15);
    CheckSyrkAccumulate(cpu(), under_test(), sh[0], sh[1], 1.0, 1e15);
  }
}

TEST_F(ConsistencyTest, GroupedGemm) {
  std::mt19937_64 rng(5);
  // {m, n, k}: empty, one-row, k = 0, small (own loop), large (SGEMM), wide.
  const int64_t shapes[][3] = {{0, 4, 3},  {3, 0, 2}, {1, 1, 1},   {2, 16, 0},    {4, 16, 256},
                               {1, 5, 33}, {8, 9, 7}, {9, 16, 64}, {40, 70, 300}, {3, 100, 5}};
  const double scales[] = {1.0, 1e-20, 1e20};
  struct Data {
    std::vector<float> a, b, c_cpu, c_dut;
    double scale;
  };
  std::vector<Data> data;
  std::vector<GemmGroup> cpu_groups, dut_groups;
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    Data d;
    d.scale = scales[i % 3];
    d.a = RandomVector<float>(std::max<int64_t>(m * (k + 1), 1), rng, d.scale);
    d.b = RandomVector<float>(std::max<int64_t>(k * (n + 2), 1), rng);
    d.c_cpu.assign(std::max<int64_t>(m * (n + 3), 1), -7.0f);
    d.c_dut = d.c_cpu;
    data.push_back(std::move(d));
  }
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    Data& d = data[i];
    cpu_groups.push_back({m, n, k, d.a.data(), k + 1, d.b.data(), n + 2, d.c_cpu.data(), n + 3});
    dut_groups.push_back({m, n, k, d.a.data(), k + 1, d.b.data(), n + 2, d.c_dut.data(), n + 3});
  }
  ASSERT_TRUE(cpu().GroupedGemm(cpu_groups).ok());
  const absl::Status s = under_test().GroupedGemm(dut_groups);
  ASSERT_TRUE(s.ok()) << s;
  for (size_t g = 0; g < std::size(shapes); ++g) {
    const int64_t m = shapes[g][0], n = shapes[g][1], k = shapes[g][2];
    const Data& d = data[g];
    SCOPED_TRACE(testing::Message() << "group " << g << ": " << m << "x" << n << "x" << k);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n + 3; ++j) {
        const int64_t at = i * (n + 3) + j;
        if (j >= n) {
          ASSERT_EQ(d.c_cpu[at], -7.0f) << "cpu wrote padding";
          ASSERT_EQ(d.c_dut[at], -7.0f) << "backend wrote padding";
          continue;
        }
        double sum = 0, mag = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double p = static_cast<double>(d.a[i * (k + 1) + l]) * d.b[l * (n + 2) + j];
          sum += p;
          mag += std::abs(p);
        }
        mag += std::numeric_limits<double>::min();
        ASSERT_TRUE(Near(d.c_cpu[at], sum, 1e-5, mag)) << "cpu vs float64 at " << i << "," << j;
        ASSERT_TRUE(Near(d.c_dut[at], d.c_cpu[at], 2e-5, mag))
            << "backend vs cpu at " << i << "," << j;
      }
    }
  }
  // No groups at all, and a bad group (nothing written, InvalidArgument naming it).
  EXPECT_TRUE(under_test().GroupedGemm({}).ok());
  std::vector<GemmGroup> bad = {cpu_groups[4]};
  bad[0].lda = 2;
  const absl::Status rejected = under_test().GroupedGemm(bad);
  EXPECT_EQ(rejected.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rejected.message().find("groups[0].a"), std::string_view::npos) << rejected;
}

TEST_F(ConsistencyTest, SupportsAnswersEveryOp) {
  for (Op op : kAllOps) {
    EXPECT_FALSE(OpName(op).empty());
    if (!on_device()) {
      EXPECT_TRUE(under_test().Supports(op)) << OpName(op);
    }
  }
  under_test().SetThreads(1);  // the CPU's OpenBLAS count; ignored by device backends
  under_test().SetThreads(0);
}

}  // namespace
}  // namespace adaptd::kernels
