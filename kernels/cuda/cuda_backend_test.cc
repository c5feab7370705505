// The CUDA backend against the CPU backend (the reference) on random inputs, with padded leading
// dimensions and garbage in every region an op must not read. Tolerances are relative to the
// largest reference entry (or |λ|max): double GEMM/SYRK 1e-12, float GEMM 1e-5, eigenvalues
// 1e-10, Cholesky solution 1e-10, Falcon chunk step (S and predictions) 1e-10 in double and
// 1e-4 in float. Every test that needs a device skips itself when none is present
// (MakeCudaBackend answers Unavailable), or fails instead when the environment sets
// ADAPTD_REQUIRE_CUDA=1 (as kernels/cuda/check_on_gpu.sh does, so a driver too old for this
// runtime cannot pass as a clean skip).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"

namespace adaptd::kernels {
namespace {

template <typename T>
std::vector<T> Random(int64_t count, std::mt19937_64& rng) {
  std::normal_distribution<T> dist;
  std::vector<T> v(count);
  for (T& x : v) x = dist(rng);
  return v;
}

template <typename T>
double MaxAbs(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

// A random symmetric n×n matrix; with `spd`, RᵀR + n·I (positive definite).
std::vector<double> RandomSymmetric(int64_t n, bool spd, std::mt19937_64& rng) {
  const auto r = Random<double>(n * n, rng);
  std::vector<double> a(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (!spd) {
        a[i * n + j] = r[i * n + j] + r[j * n + i];
        continue;
      }
      double dot = i == j ? static_cast<double>(n) : 0.0;
      for (int64_t l = 0; l < n; ++l) dot += r[l * n + i] * r[l * n + j];
      a[i * n + j] = dot;
    }
  }
  return a;
}

// `full` with its strictly lower triangle overwritten by values no backend may read.
std::vector<double> UpperOnly(int64_t n, const std::vector<double>& full) {
  std::vector<double> a = full;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) a[i * n + j] = 1e6 + static_cast<double>(i * n + j);
  }
  return a;
}

bool CudaRequired() {
  const char* value = std::getenv("ADAPTD_REQUIRE_CUDA");
  return value != nullptr && std::string(value) == "1";
}

TEST(MakeCudaBackendTest, NegativeDeviceIsInvalidArgument) {
  EXPECT_EQ(MakeCudaBackend(-1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MakeCudaBackendTest, ReturnsBackendOrUnavailableWithoutCrashing) {
  auto made = MakeCudaBackend(0);
  if (!made.ok()) {
    EXPECT_FALSE(CudaRequired()) << "ADAPTD_REQUIRE_CUDA=1 but " << made.status();
    EXPECT_EQ(made.status().code(), absl::StatusCode::kUnavailable) << made.status();
    EXPECT_FALSE(made.status().message().empty());
    return;
  }
  EXPECT_EQ((*made)->name(), "cuda");
  for (Op op : {Op::kGemm, Op::kSyrk, Op::kSymmetricEigen, Op::kCholeskySolve}) {
    EXPECT_TRUE((*made)->Supports(op));
  }
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = MakeCudaBackend(0);
    if (absl::IsUnavailable(made.status()) && !CudaRequired()) {
      GTEST_SKIP() << "no CUDA device, skipping: " << made.status();
    }
    ASSERT_TRUE(made.ok()) << made.status();
    cuda_ = *std::move(made);
    cpu_ = MakeCpuBackend();
  }

  // One GEMM on both backends with every leading dimension padded by 3; the padding holds a
  // sentinel that must survive.
  template <typename T>
  void CheckGemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T beta, double tol) {
    SCOPED_TRACE(testing::Message() << "ta=" << (ta == Trans::kYes) << " tb=" << (tb == Trans::kYes)
                                    << " m=" << m << " n=" << n << " k=" << k << " beta=" << beta);
    std::mt19937_64 rng(m * 1000003 + n * 1009 + k);
    const int64_t a_rows = ta == Trans::kNo ? m : k, a_cols = ta == Trans::kNo ? k : m;
    const int64_t b_rows = tb == Trans::kNo ? k : n, b_cols = tb == Trans::kNo ? n : k;
    const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = n + 3;
    auto a = Random<T>(a_rows * lda, rng);
    auto b = Random<T>(b_rows * ldb, rng);
    auto c_cpu = Random<T>(m * ldc, rng);
    auto c_gpu = c_cpu;
    const T alpha = T(1.5);
    ASSERT_TRUE(
        cpu_->Gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c_cpu.data(), ldc)
            .ok());
    const absl::Status s =
        cuda_->Gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c_gpu.data(), ldc);
    ASSERT_TRUE(s.ok()) << s;
    const double scale = std::max(MaxAbs(c_cpu), 1.0);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        if (j < n) {
          ASSERT_NEAR(c_gpu[i * ldc + j], c_cpu[i * ldc + j], tol * scale) << i << "," << j;
        } else {
          ASSERT_EQ(c_gpu[i * ldc + j], c_cpu[i * ldc + j]) << "padding " << i << "," << j;
        }
      }
    }
  }

  std::unique_ptr<Backend> cuda_;
  std::unique_ptr<Backend> cpu_;
};

constexpr Trans kTrans[] = {Trans::kNo, Trans::kYes};
constexpr int64_t kShapes[][3] = {{1, 1, 1}, {7, 5, 9}, {64, 33, 130}, {200, 150, 300}};

TEST_F(CudaBackendTest, GemmDoubleMatchesCpu) {
  for (Trans ta : kTrans) {
    for (Trans tb : kTrans) {
      for (const auto& s : kShapes) {
        CheckGemm<double>(ta, tb, s[0], s[1], s[2], -0.5, 1e-12);
        CheckGemm<double>(ta, tb, s[0], s[1], s[2], 0.0, 1e-12);
      }
    }
  }
}

TEST_F(CudaBackendTest, GemmFloatMatchesCpu) {
  for (Trans ta : kTrans) {
    for (Trans tb : kTrans) {
      for (const auto& s : kShapes) CheckGemm<float>(ta, tb, s[0], s[1], s[2], 0.25f, 1e-5);
    }
  }
}

TEST_F(CudaBackendTest, GemmWithEmptyInnerDimensionScalesC) {
  CheckGemm<double>(Trans::kNo, Trans::kNo, 4, 6, 0, 2.0, 1e-15);
  CheckGemm<double>(Trans::kYes, Trans::kYes, 4, 6, 0, 0.0, 1e-15);
  std::vector<double> c(1, 7.0);
  EXPECT_TRUE(
      cuda_->Gemm(Trans::kNo, Trans::kNo, 0, 1, 3, 1.0, nullptr, 3, nullptr, 1, 0.0, c.data(), 1)
          .ok());
  EXPECT_EQ(c[0], 7.0);
}

TEST_F(CudaBackendTest, GemmIgnoresNaNInCWhenBetaIsZero) {
  std::vector<double> a = {1, 2, 3, 4}, b = {5, 6, 7, 8};
  std::vector<double> c(4, std::numeric_limits<double>::quiet_NaN());
  ASSERT_TRUE(
      cuda_->Gemm(Trans::kNo, Trans::kNo, 2, 2, 2, 1.0, a.data(), 2, b.data(), 2, 0.0, c.data(), 2)
          .ok());
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50}));
}

TEST_F(CudaBackendTest, SyrkUpperMatchesCpuAndLeavesLowerTriangle) {
  for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1}, {50, 80}, {120, 30}, {9, 0}}) {
    SCOPED_TRACE(testing::Message() << "n=" << n << " k=" << k);
    std::mt19937_64 rng(n + 17 * k);
    const int64_t lda = n + 2, ldc = n + 1;
    auto a = Random<double>(std::max<int64_t>(k, 1) * lda, rng);
    const auto c0 = Random<double>(n * ldc, rng);
    auto c_cpu = c0, c_gpu = c0;
    ASSERT_TRUE(cpu_->SyrkUpper(n, k, 2.0, a.data(), lda, 0.5, c_cpu.data(), ldc).ok());
    const absl::Status s = cuda_->SyrkUpper(n, k, 2.0, a.data(), lda, 0.5, c_gpu.data(), ldc);
    ASSERT_TRUE(s.ok()) << s;
    const double scale = std::max(MaxAbs(c_cpu), 1.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        if (j >= i && j < n) {
          ASSERT_NEAR(c_gpu[i * ldc + j], c_cpu[i * ldc + j], 1e-12 * scale) << i << "," << j;
        } else {
          ASSERT_EQ(c_gpu[i * ldc + j], c0[i * ldc + j]) << "must not change " << i << "," << j;
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, SymmetricEigenMatchesCpu) {
  for (int64_t n : {1, 2, 8, 100, 257}) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    std::mt19937_64 rng(100 + n);
    const auto sym = RandomSymmetric(n, /*spd=*/false, rng);
    auto q_cpu = UpperOnly(n, sym), q_gpu = q_cpu;
    std::vector<double> w_cpu(n), w_gpu(n);
    ASSERT_TRUE(cpu_->SymmetricEigen(n, q_cpu.data(), w_cpu.data()).ok());
    const absl::Status s = cuda_->SymmetricEigen(n, q_gpu.data(), w_gpu.data());
    ASSERT_TRUE(s.ok()) << s;
    const double lambda_max = std::max(MaxAbs(w_cpu), 1e-300);
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_NEAR(w_gpu[j], w_cpu[j], 1e-10 * lambda_max) << j;
      if (j > 0) {
        ASSERT_LE(w_gpu[j - 1], w_gpu[j]);
      }
    }
    // Eigenvectors are columns: A = Q·diag(w)·Qᵀ and QᵀQ = I.
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double rebuilt = 0, gram = 0;
        for (int64_t l = 0; l < n; ++l) {
          rebuilt += q_gpu[i * n + l] * w_gpu[l] * q_gpu[j * n + l];
          gram += q_gpu[l * n + i] * q_gpu[l * n + j];
        }
        ASSERT_NEAR(rebuilt, sym[i * n + j], 1e-10 * lambda_max) << i << "," << j;
        ASSERT_NEAR(gram, i == j ? 1.0 : 0.0, 1e-10) << i << "," << j;
      }
    }
    // Where an eigenvalue is well separated, its vector matches the CPU's up to sign.
    for (int64_t j = 0; j < n; ++j) {
      const double gap = std::min(j > 0 ? w_cpu[j] - w_cpu[j - 1] : INFINITY,
                                  j + 1 < n ? w_cpu[j + 1] - w_cpu[j] : INFINITY);
      if (gap < 1e-6 * lambda_max) continue;
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += q_gpu[i * n + j] * q_cpu[i * n + j];
      ASSERT_NEAR(std::abs(dot), 1.0, 1e-8) << "vector " << j;
    }
  }
}

TEST_F(CudaBackendTest, CholeskySolveMatchesCpu) {
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {60, 1}, {60, 7}, {150, 0}, {5, 40}}) {
    SCOPED_TRACE(testing::Message() << "n=" << n << " m=" << m);
    std::mt19937_64 rng(200 + n * 31 + m);
    const auto spd = RandomSymmetric(n, /*spd=*/true, rng);
    const auto b0 = Random<double>(n * m, rng);
    auto a_cpu = UpperOnly(n, spd), a_gpu = a_cpu;
    auto x_cpu = b0, x_gpu = b0;
    ASSERT_TRUE(cpu_->CholeskySolve(n, m, a_cpu.data(), x_cpu.data()).ok());
    const absl::Status s = cuda_->CholeskySolve(n, m, a_gpu.data(), x_gpu.data());
    ASSERT_TRUE(s.ok()) << s;
    const double a_scale = MaxAbs(spd);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i; j < n; ++j) {
        ASSERT_NEAR(a_gpu[i * n + j], a_cpu[i * n + j], 1e-12 * a_scale)
            << "factor " << i << "," << j;
      }
    }
    const double x_scale = std::max(MaxAbs(x_cpu), 1e-300);
    for (int64_t i = 0; i < n * m; ++i) ASSERT_NEAR(x_gpu[i], x_cpu[i], 1e-10 * x_scale) << i;
    // Residual against the true matrix: |A·X − B| ≤ 1e-12·(|A|·|X|·n + |B|).
    const double residual_tol = 1e-12 * (a_scale * x_scale * n + MaxAbs(b0));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < m; ++c) {
        double ax = 0;
        for (int64_t l = 0; l < n; ++l) ax += spd[i * n + l] * x_gpu[l * m + c];
        ASSERT_NEAR(ax, b0[i * m + c], residual_tol);
      }
    }
  }
}

TEST_F(CudaBackendTest, CholeskySolveRejectsIndefiniteMatrix) {
  const int64_t n = 4;
  std::vector<double> a = {2, 1, 0, 0,  //
                           0, 1, 3, 0,  //
                           0, 0, 1, 0,  //
                           0, 0, 0, 1};
  std::vector<double> b(n, 1.0);
  const absl::Status s = cuda_->CholeskySolve(n, 1, a.data(), b.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("not positive definite"), std::string::npos) << s;
}

TEST_F(CudaBackendTest, EmptyAndInvalidArguments) {
  EXPECT_TRUE(cuda_->SymmetricEigen(0, nullptr, nullptr).ok());
  EXPECT_TRUE(cuda_->CholeskySolve(0, 3, nullptr, nullptr).ok());
  EXPECT_TRUE(cuda_->SyrkUpper(0, 5, 1.0, nullptr, 0, 0.0, nullptr, 0).ok());
  double x[4] = {};
  EXPECT_EQ(cuda_->SymmetricEigen(-1, x, x).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda_->Gemm(Trans::kNo, Trans::kNo, 2, 2, -1, 1.0, x, 2, x, 2, 0.0, x, 2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda_->Gemm(Trans::kNo, Trans::kNo, 2, 2, 2, 1.0, x, 1, x, 2, 0.0, x, 2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeCudaBackend(1 << 20).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaBackendTest, ConcurrentCallersFromSeveralBackendsAgree) {
  auto second = MakeCudaBackend(0);
  ASSERT_TRUE(second.ok()) << second.status();
  const int64_t n = 96;
  std::mt19937_64 rng(7);
  const auto a = Random<double>(n * n, rng), b = Random<double>(n * n, rng);
  std::vector<double> want(n * n);
  ASSERT_TRUE(cpu_->Gemm(Trans::kNo, Trans::kYes, n, n, n, 1.0, a.data(), n, b.data(), n, 0.0,
                         want.data(), n)
                  .ok());
  const double tol = 1e-12 * MaxAbs(want);
  std::vector<absl::Status> failures(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    Backend* backend = t % 2 == 0 ? cuda_.get() : second->get();
    threads.emplace_back([&, backend, t] {
      for (int iter = 0; iter < 20 && failures[t].ok(); ++iter) {
        std::vector<double> c(n * n);
        absl::Status s = backend->Gemm(Trans::kNo, Trans::kYes, n, n, n, 1.0, a.data(), n, b.data(),
                                       n, 0.0, c.data(), n);
        for (int64_t i = 0; s.ok() && i < n * n; ++i) {
          if (std::abs(c[i] - want[i]) > tol) s = absl::InternalError("mismatch");
        }
        failures[t] = s;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const absl::Status& s : failures) EXPECT_TRUE(s.ok()) << s;
}

// FalconChunkStep on the device against the CPU backend. Keys are unit rows (as the store
// normalises them), rates η/B with B the step's window, decays in [0.8, 1]: a well-conditioned
// solve, so that the two backends' different product orders stay within float 1e-4 and double
// 1e-10 of the largest entry of S and the predictions (or 1).
struct FalconDeviceCase {
  int64_t d, m, h, c;
  bool residual;
  int groups;
  int window_mode;  // 0: every window 1; 1: up to 4 pairs; 2: anything in [1, h + t + 1]
  bool predictions;
};

template <typename T>
void CheckFalconOnDevice(Backend& cpu, Backend& cuda, const FalconDeviceCase& fc, double tol) {
  SCOPED_TRACE(testing::Message() << "d=" << fc.d << " m=" << fc.m << " h=" << fc.h << " c=" << fc.c
                                  << " residual=" << fc.residual << " groups=" << fc.groups
                                  << " window_mode=" << fc.window_mode
                                  << " predictions=" << fc.predictions << " bytes=" << sizeof(T));
  std::mt19937_64 rng(fc.d * 7919 + fc.m * 131 + fc.h * 31 + fc.c * 7 + fc.groups * 3 +
                      fc.window_mode + (fc.residual ? 1000 : 0));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t e = fc.h + fc.c;
  auto keys = Random<T>(e * fc.d, rng);
  for (int64_t i = 0; i < e; ++i) {
    double norm = 0;
    for (int64_t a = 0; a < fc.d; ++a) norm += double(keys[i * fc.d + a]) * keys[i * fc.d + a];
    for (int64_t a = 0; a < fc.d; ++a) keys[i * fc.d + a] = T(keys[i * fc.d + a] / std::sqrt(norm));
  }
  const auto targets = Random<T>(e * fc.m, rng);
  auto s0 = Random<T>(fc.d * fc.m, rng);
  for (T& x : s0) x *= T(0.5);
  std::vector<int64_t> window(fc.c);
  for (int64_t t = 0; t < fc.c; ++t) {
    const int64_t most = fc.h + t + 1;
    int64_t cap = most;
    if (fc.window_mode == 0) cap = 1;
    if (fc.window_mode == 1) cap = std::min<int64_t>(most, 4);
    window[t] = 1 + static_cast<int64_t>(rng() % cap);
  }
  if (fc.window_mode == 2) window[fc.c - 1] = fc.h + fc.c;  // the longest window there is
  // Columns dealt to groups at random, each group non-empty.
  std::vector<std::vector<int64_t>> cols(fc.groups);
  for (int64_t j = 0; j < fc.m; ++j) {
    cols[j < fc.groups ? j : static_cast<int64_t>(rng() % fc.groups)].push_back(j);
  }
  std::vector<std::vector<double>> log_gamma(fc.groups), rate(fc.groups);
  std::vector<FalconColumnGroup> groups;
  for (int g = 0; g < fc.groups; ++g) {
    for (int64_t t = 0; t < fc.c; ++t) {
      log_gamma[g].push_back(std::log(0.8 + 0.2 * unit(rng)));
      rate[g].push_back((0.01 + 0.3 * unit(rng)) / static_cast<double>(window[t]));
    }
    groups.push_back({cols[g], log_gamma[g], rate[g]});
  }
  FalconChunk<T> chunk;
  chunk.d = fc.d;
  chunk.m = fc.m;
  chunk.h = fc.h;
  chunk.c = fc.c;
  chunk.keys = keys.data();
  chunk.targets = targets.data();
  chunk.window = window;
  chunk.residual = fc.residual;
  chunk.groups = groups;
  auto s_cpu = s0, s_gpu = s0;
  const T sentinel = T(12345);
  std::vector<T> p_cpu(fc.c * fc.m, sentinel), p_gpu(fc.c * fc.m, sentinel);
  chunk.s = s_cpu.data();
  chunk.predictions = fc.predictions ? p_cpu.data() : nullptr;
  ASSERT_TRUE(cpu.FalconChunkStep(chunk).ok());
  chunk.s = s_gpu.data();
  chunk.predictions = fc.predictions ? p_gpu.data() : nullptr;
  const absl::Status st = cuda.FalconChunkStep(chunk);
  ASSERT_TRUE(st.ok()) << st;
  const double scale = std::max({1.0, MaxAbs(s_cpu), fc.predictions ? MaxAbs(p_cpu) : 0.0});
  for (size_t i = 0; i < s_cpu.size(); ++i) {
    ASSERT_NEAR(s_gpu[i], s_cpu[i], tol * scale) << "S[" << i / fc.m << "," << i % fc.m << "]";
  }
  for (size_t i = 0; i < p_cpu.size(); ++i) {
    if (!fc.predictions) {
      ASSERT_EQ(p_gpu[i], sentinel) << "prediction " << i << " written without predictions";
      continue;
    }
    ASSERT_NEAR(p_gpu[i], p_cpu[i], tol * scale)
        << "prediction t=" << i / fc.m << " column " << i % fc.m;
  }
}

TEST_F(CudaBackendTest, FalconChunkStepMatchesCpu) {
  EXPECT_TRUE(cuda_->Supports(Op::kFalconChunkStep));
  int variant = 0;
  for (bool residual : {true, false}) {
    for (int64_t h : {0, 3}) {
      for (int64_t c : {1, 7, 64}) {
        for (int groups : {1, 3}) {
          for (int window_mode : {0, 1, 2}) {
            ++variant;
            // 70 columns: two tiles of kFalconTileColumns for one group.
            const bool predictions = variant % 2 == 0;
            const FalconDeviceCase fc{16, 70, h, c, residual, groups, window_mode, predictions};
            CheckFalconOnDevice<double>(*cpu_, *cuda_, fc, 1e-10);
            CheckFalconOnDevice<float>(*cpu_, *cuda_, fc, 1e-4);
          }
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, FalconChunkStepAwkwardShapes) {
  for (bool residual : {true, false}) {
    for (bool predictions : {false, true}) {
      // No key coordinates, one column, one key coordinate, many groups of one column, and more
      // columns than a tile in each of several groups.
      for (const FalconDeviceCase& fc :
           {FalconDeviceCase{0, 5, 2, 4, residual, 2, 1, predictions},
            FalconDeviceCase{8, 1, 0, 9, residual, 1, 2, predictions},
            FalconDeviceCase{1, 4, 5, 6, residual, 4, 2, predictions},
            FalconDeviceCase{12, 33, 2, 16, residual, 33, 1, predictions},
            FalconDeviceCase{24, 300, 4, 32, residual, 3, 1, predictions}}) {
        CheckFalconOnDevice<double>(*cpu_, *cuda_, fc, 1e-10);
        CheckFalconOnDevice<float>(*cpu_, *cuda_, fc, 1e-4);
      }
    }
  }
}

TEST_F(CudaBackendTest, FalconChunkStepLongChunkRunsOnHostPath) {
  // Beyond the kernels' step limit (4096) Supports says no, and the whole step runs on the host.
  EXPECT_FALSE(cuda_->Supports({Op::kFalconChunkStep, 4101, 0, 0, 4100}));
  const FalconDeviceCase fc{4, 2, 1, 4100, true, 1, 0, true};
  CheckFalconOnDevice<double>(*cpu_, *cuda_, fc, 1e-10);
}

}  // namespace
}  // namespace adaptd::kernels
