#include "kernels/cpu/narrow_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define ADAPTD_NARROW_X86 1
#endif

namespace adaptd::kernels::cpu {
namespace {

// One tile's results (R rows × panels·width floats, row-major) into C.
void WriteTile(const float* tile, int rows, int64_t stride, int64_t n, float alpha, float beta,
               float* c, int64_t ldc) {
  for (int r = 0; r < rows; ++r) {
    const float* src = tile + r * stride;
    float* dst = c + r * ldc;
    if (beta == 0.0f) {
      for (int64_t j = 0; j < n; ++j) dst[j] = alpha * src[j];  // C is not read (as BLAS)
    } else {
      for (int64_t j = 0; j < n; ++j) dst[j] = alpha * src[j] + beta * dst[j];
    }
  }
}

struct Shape {
  int64_t n, k;
  float alpha, beta;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
};

#if ADAPTD_NARROW_X86

// R rows × P panels of 16 columns, accumulated over k in registers.
template <int P, int R>
__attribute__((target("avx512f"))) void Tile512(const Shape& s, int64_t row) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  // Masked loads read B in place: the last panel's lanes past n are zero and never touched.
  __mmask16 mask[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
    const int64_t lanes = std::clamp<int64_t>(s.n - p * 16, 0, 16);
    mask[p] = static_cast<__mmask16>((1u << lanes) - 1u);
  }
  const float* a = s.a + row * s.lda;
  for (int64_t i = 0; i < s.k; ++i) {
    __m512 b[P];
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) b[p] = _mm512_maskz_loadu_ps(mask[p], s.b + i * s.ldb + p * 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * s.lda + i]);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(x, b[p], acc[r][p]);
    }
  }
  alignas(64) float tile[R * P * 16];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) _mm512_store_ps(tile + (r * P + p) * 16, acc[r][p]);
  }
  WriteTile(tile, R, P * 16, s.n, s.alpha, s.beta, s.c + row * s.ldc, s.ldc);
}

// R rows × P panels of 8 columns.
template <int P, int R>
__attribute__((target("avx2,fma"))) void Tile256(const Shape& s, int64_t row) {
  __m256 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[r][p] = _mm256_setzero_ps();
  }
  __m256i mask[P];
#pragma GCC unroll 16
  for (int p = 0; p < P; ++p) {
    alignas(32) int32_t lanes[8];
    for (int j = 0; j < 8; ++j) lanes[j] = p * 8 + j < s.n ? -1 : 0;
    mask[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
  }
  const float* a = s.a + row * s.lda;
  for (int64_t i = 0; i < s.k; ++i) {
    __m256 b[P];
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) b[p] = _mm256_maskload_ps(s.b + i * s.ldb + p * 8, mask[p]);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_set1_ps(a[r * s.lda + i]);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) acc[r][p] = _mm256_fmadd_ps(x, b[p], acc[r][p]);
    }
  }
  alignas(32) float tile[R * P * 8];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) _mm256_store_ps(tile + (r * P + p) * 8, acc[r][p]);
  }
  WriteTile(tile, R, P * 8, s.n, s.alpha, s.beta, s.c + row * s.ldc, s.ldc);
}

// Rows [begin, end) in tiles of R rows, the rest one row at a time.
template <int P, int R, bool kWide>
void Rows(const Shape& s, int64_t begin, int64_t end) {
  int64_t row = begin;
  for (; row + R <= end; row += R) {
    if constexpr (kWide) {
      Tile512<P, R>(s, row);
    } else {
      Tile256<P, R>(s, row);
    }
  }
  for (; row < end; ++row) {
    if constexpr (kWide) {
      Tile512<P, 1>(s, row);
    } else {
      Tile256<P, 1>(s, row);
    }
  }
}

using RowsFn = void (*)(const Shape&, int64_t, int64_t);

// Tiles of at most 24 accumulators (AVX-512 has 32 registers) and 12 (AVX2 has 16, and needs
// P + 1 more for B and the broadcast key).
RowsFn RowsFor(NarrowIsa isa, int panels) {
  if (isa == NarrowIsa::kAvx512) return panels == 1 ? Rows<1, 8, true> : Rows<2, 12, true>;
  switch (panels) {
    case 1:
      return Rows<1, 8, false>;
    case 2:
      return Rows<2, 6, false>;
    case 3:
      return Rows<3, 4, false>;
    default:
      return Rows<4, 3, false>;
  }
}

bool Supported(NarrowIsa isa) {
  switch (isa) {
    case NarrowIsa::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case NarrowIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case NarrowIsa::kNone:
      return false;
  }
  return false;
}

#else

bool Supported(NarrowIsa) { return false; }

#endif

}  // namespace

NarrowIsa BestNarrowIsa() {
  static const NarrowIsa best = [] {
    if (Supported(NarrowIsa::kAvx512)) return NarrowIsa::kAvx512;
    if (Supported(NarrowIsa::kAvx2)) return NarrowIsa::kAvx2;
    return NarrowIsa::kNone;
  }();
  return best;
}

bool NarrowGemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc, NarrowIsa isa,
                int threads) {
#if ADAPTD_NARROW_X86
  if (n < 1 || n > kNarrowMaxColumns || m < 1 || k < 1 || !Supported(isa)) {
    return false;
  }
  const int width = isa == NarrowIsa::kAvx512 ? 16 : 8;
  const int panels = static_cast<int>((n + width - 1) / width);
  const Shape shape{n, k, alpha, beta, a, lda, b, ldb, c, ldc};
  const RowsFn rows = RowsFor(isa, panels);
  // A thread for every 2^22 multiply-adds at least, up to OpenBLAS's count.
  if (threads <= 0) threads = openblas_get_num_threads();
  const int64_t work = m * k * panels * width;
  const int64_t useful = std::max<int64_t>(1, work >> 22);
  const int parts = static_cast<int>(std::clamp<int64_t>(threads, 1, std::min(useful, m)));
  std::vector<std::thread> helpers;
  helpers.reserve(parts - 1);
  for (int t = 1; t < parts; ++t) {
    helpers.emplace_back(rows, std::cref(shape), m * t / parts, m * (t + 1) / parts);
  }
  rows(shape, 0, m / parts);
  for (std::thread& t : helpers) t.join();
  return true;
#else
  (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta,
      (void)c, (void)ldc, (void)isa, (void)threads;
  return false;
#endif
}

}  // namespace adaptd::kernels::cpu
