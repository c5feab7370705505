// CPU dense products beyond plain BLAS calls: GEMV, float-input SYRK accumulated in float64,
// and the grouped GEMM (groups of at most 32 columns by the narrow kernel, other small groups by
// an own loop, larger ones by SGEMM).
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/narrow_gemm.h"

namespace adaptd::kernels::cpu {
namespace {

CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

// BLAS returns early without scaling y when the inner dimension is 0, and may propagate NaN
// from y when beta = 0; both are settled here so that y = alpha·op(A)·x + beta·y holds exactly.
template <typename T>
bool PrepareY(int64_t y_len, int64_t inner, T beta, T* y) {
  if (beta == T(0)) std::fill(y, y + y_len, T(0));
  if (inner == 0 && beta != T(0)) {
    for (int64_t i = 0; i < y_len; ++i) y[i] *= beta;
  }
  return inner > 0 && y_len > 0;
}

// Elements of A (float) converted per block before DSYRK: the block's float64 copy stays near
// 8 MB, large enough that each DSYRK call has a long inner dimension.
constexpr int64_t kSyrkBlockElements = int64_t{1} << 20;

// Groups with at most this many rows run the own loop: SGEMM's setup costs more than the work.
constexpr int64_t kSmallGroupRows = 8;

typedef float V16 __attribute__((vector_size(64)));
typedef float V16u __attribute__((vector_size(64), aligned(4)));
constexpr int kLanes = 16;

// C (m×n) = A (m×k) · B (k×n) for m ≤ kSmallGroupRows: per block of 16 columns, up to four rows
// accumulate in vector registers while the block's rows of B stream by once for them.
__attribute__((target_clones("avx512f", "avx2", "default"))) void SmallGemm(
    int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
    float* c, int64_t ldc) {
  const int64_t nv = n / kLanes * kLanes;
  for (int64_t r0 = 0; r0 < m; r0 += 4) {
    const int64_t rb = std::min<int64_t>(4, m - r0);
    const float* a0 = a + r0 * lda;
    const float* a1 = a + (r0 + std::min<int64_t>(1, rb - 1)) * lda;
    const float* a2 = a + (r0 + std::min<int64_t>(2, rb - 1)) * lda;
    const float* a3 = a + (r0 + std::min<int64_t>(3, rb - 1)) * lda;
    for (int64_t j = 0; j < nv; j += kLanes) {
      V16 c0 = {}, c1 = {}, c2 = {}, c3 = {};
      for (int64_t l = 0; l < k; ++l) {
        const V16 bv = *reinterpret_cast<const V16u*>(b + l * ldb + j);
        c0 += a0[l] * bv;
        c1 += a1[l] * bv;
        c2 += a2[l] * bv;
        c3 += a3[l] * bv;
      }
      const V16 acc[4] = {c0, c1, c2, c3};
      for (int64_t rr = 0; rr < rb; ++rr)
        *reinterpret_cast<V16u*>(c + (r0 + rr) * ldc + j) = acc[rr];
    }
    for (int64_t rr = 0; rr < rb; ++rr) {
      const float* ar = a + (r0 + rr) * lda;
      for (int64_t j = nv; j < n; ++j) {
        float sum = 0.0f;
        for (int64_t l = 0; l < k; ++l) sum += ar[l] * b[l * ldb + j];
        c[(r0 + rr) * ldc + j] = sum;
      }
    }
  }
}

}  // namespace

void Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y) {
  const int64_t y_len = trans == Trans::kNo ? m : n, inner = trans == Trans::kNo ? n : m;
  if (!PrepareY(y_len, inner, beta, y)) return;
  cblas_sgemv(CblasRowMajor, ToCblas(trans), m, n, alpha, a, std::max<int64_t>(lda, n), x, 1,
              beta == 0.0f ? 1.0f : beta, y, 1);
}

void Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y) {
  const int64_t y_len = trans == Trans::kNo ? m : n, inner = trans == Trans::kNo ? n : m;
  if (!PrepareY(y_len, inner, beta, y)) return;
  cblas_dgemv(CblasRowMajor, ToCblas(trans), m, n, alpha, a, std::max<int64_t>(lda, n), x, 1,
              beta == 0.0 ? 1.0 : beta, y, 1);
}

void SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a, int64_t lda,
                         double beta, double* c, int64_t ldc) {
  if (n == 0) return;
  if (k == 0 || alpha == 0) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0 : beta * c[i * ldc + j];
    }
    return;
  }
  const int64_t block_rows = std::max<int64_t>(64, kSyrkBlockElements / n);
  std::vector<double> block(static_cast<size_t>(std::min(k, block_rows) * n));
  for (int64_t first = 0; first < k; first += block_rows) {
    const int64_t rows = std::min(block_rows, k - first);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = a + (first + r) * lda;
      std::copy(src, src + n, block.data() + r * n);
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, rows, alpha, block.data(), n,
                first == 0 ? beta : 1.0, c, std::max<int64_t>(ldc, n));
  }
}

void GroupedGemm(std::span<const GemmGroup> groups) {
  for (const GemmGroup& g : groups) {
    if (g.m == 0 || g.n == 0) continue;
    if (g.k == 0) {
      for (int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, 0.0f);
    } else if (NarrowGemm(g.m, g.n, g.k, 1.0f, g.a, g.lda, g.b, g.ldb, 0.0f, g.c, g.ldc)) {
      // Few columns: the narrow kernel, which answers each row as a lone-row call would.
    } else if (g.m <= kSmallGroupRows) {
      SmallGemm(g.m, g.n, g.k, g.a, g.lda, g.b, g.ldb, g.c, g.ldc);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.m, g.n, g.k, 1.0f, g.a,
                  std::max(g.lda, g.k), g.b, std::max(g.ldb, g.n), 0.0f, g.c, std::max(g.ldc, g.n));
    }
  }
}

}  // namespace adaptd::kernels::cpu
