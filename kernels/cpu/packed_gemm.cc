#include "kernels/cpu/packed_gemm.h"

#include <cblas.h>

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define ADAPTD_PACKED_X86 1
#endif

namespace adaptd::kernels::cpu {
namespace {

struct Job {
  int64_t n, k;
  const float* panels;
  const float* a;
  int64_t lda;
  float beta;
  float* c;
  int64_t ldc;
};

#if ADAPTD_PACKED_X86

// A's rows are taken in chunks of about 512 KiB (they stay in L2 while every panel passes over
// them), each chunk in blocks of at most `max_rows` rows.
int64_t ChunkRows(int64_t k, int max_rows) {
  const int64_t fit = (int64_t{1} << 17) / k;
  return std::max<int64_t>(max_rows, fit / max_rows * max_rows);
}

// R rows × one panel of 32 columns (two vectors), accumulated over k in registers.
template <int R>
__attribute__((target("avx512f"))) void Block512(const Job& j, int64_t row, int64_t panel) {
  const int64_t col = panel * 32;
  const int64_t lanes = std::min<int64_t>(j.n - col, 32);
  const __mmask16 m0 = lanes >= 16 ? 0xffff : static_cast<__mmask16>((1u << lanes) - 1u);
  const __mmask16 m1 = lanes > 16 ? static_cast<__mmask16>((1u << (lanes - 16)) - 1u) : 0;
  const float* a = j.a + row * j.lda;
  float* c = j.c + row * j.ldc + col;
  __m512 acc0[R], acc1[R];
  const __m512 beta = _mm512_set1_ps(j.beta);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    if (j.beta == 0.0f) {  // C is not read (as BLAS)
      acc0[r] = _mm512_setzero_ps();
      acc1[r] = _mm512_setzero_ps();
    } else {
      acc0[r] = _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m0, c + r * j.ldc));
      acc1[r] = _mm512_mul_ps(beta, _mm512_maskz_loadu_ps(m1, c + r * j.ldc + 16));
    }
  }
  const float* w = j.panels + panel * j.k * 32;
  for (int64_t i = 0; i < j.k; ++i) {
    const __m512 w0 = _mm512_loadu_ps(w + i * 32);
    const __m512 w1 = _mm512_loadu_ps(w + i * 32 + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * j.lda + i]);
      acc0[r] = _mm512_fmadd_ps(x, w0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(x, w1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(c + r * j.ldc, m0, acc0[r]);
    _mm512_mask_storeu_ps(c + r * j.ldc + 16, m1, acc1[r]);
  }
}

// R rows × one panel of 16 columns (two vectors of 8).
template <int R>
__attribute__((target("avx2,fma"))) void Block256(const Job& j, int64_t row, int64_t panel) {
  const int64_t col = panel * 16;
  alignas(32) int32_t lanes[16];
  for (int x = 0; x < 16; ++x) lanes[x] = col + x < j.n ? -1 : 0;
  const __m256i m0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes));
  const __m256i m1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lanes + 8));
  const float* a = j.a + row * j.lda;
  float* c = j.c + row * j.ldc + col;
  __m256 acc0[R], acc1[R];
  const __m256 beta = _mm256_set1_ps(j.beta);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    if (j.beta == 0.0f) {
      acc0[r] = _mm256_setzero_ps();
      acc1[r] = _mm256_setzero_ps();
    } else {
      acc0[r] = _mm256_mul_ps(beta, _mm256_maskload_ps(c + r * j.ldc, m0));
      acc1[r] = _mm256_mul_ps(beta, _mm256_maskload_ps(c + r * j.ldc + 8, m1));
    }
  }
  const float* w = j.panels + panel * j.k * 16;
  for (int64_t i = 0; i < j.k; ++i) {
    const __m256 w0 = _mm256_loadu_ps(w + i * 16);
    const __m256 w1 = _mm256_loadu_ps(w + i * 16 + 8);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_set1_ps(a[r * j.lda + i]);
      acc0[r] = _mm256_fmadd_ps(x, w0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(x, w1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    _mm256_maskstore_ps(c + r * j.ldc, m0, acc0[r]);
    _mm256_maskstore_ps(c + r * j.ldc + 8, m1, acc1[r]);
  }
}

using BlockFn = void (*)(const Job&, int64_t, int64_t);

// Blocks of at most 24 accumulators with AVX-512 (32 registers) and 12 with AVX2 (16, and
// three more for the panel's two vectors and the broadcast element of A).
constexpr BlockFn kBlocks512[] = {nullptr,      Block512<1>,  Block512<2>, Block512<3>, Block512<4>,
                                  Block512<5>,  Block512<6>,  Block512<7>, Block512<8>, Block512<9>,
                                  Block512<10>, Block512<11>, Block512<12>};
constexpr BlockFn kBlocks256[] = {nullptr,     Block256<1>, Block256<2>, Block256<3>,
                                  Block256<4>, Block256<5>, Block256<6>};

bool Supported(NarrowIsa isa) {
  const NarrowIsa best = BestNarrowIsa();
  switch (isa) {
    case NarrowIsa::kAvx512:
      return best == NarrowIsa::kAvx512;
    case NarrowIsa::kAvx2:
      return best != NarrowIsa::kNone;
    case NarrowIsa::kNone:
      return false;
  }
  return false;
}

// Rows [0, m) against every panel: chunks of rows, every panel over a chunk, the chunk in blocks
// of balanced size (13 rows: 7 + 6, not 12 + 1).
void Panels(const Job& j, NarrowIsa isa, int64_t m, int64_t panels) {
  const bool wide = isa == NarrowIsa::kAvx512;
  const BlockFn* blocks = wide ? kBlocks512 : kBlocks256;
  const int max_rows = wide ? 12 : 6;
  const int64_t chunk = ChunkRows(j.k, max_rows);
  for (int64_t r0 = 0; r0 < m; r0 += chunk) {
    const int64_t rows = std::min(chunk, m - r0);
    const int64_t count = (rows + max_rows - 1) / max_rows;
    for (int64_t p = 0; p < panels; ++p) {
      int64_t row = r0;
      for (int64_t b = 0; b < count; ++b) {
        const int64_t size = (r0 + rows - row) / (count - b);
        blocks[size](j, row, p);
        row += size;
      }
    }
  }
}

#else

bool Supported(NarrowIsa) { return false; }

#endif

}  // namespace

std::optional<PackedWeights> PackedWeights::Pack(const float* w, int64_t n, int64_t k, int64_t ldw,
                                                 NarrowIsa isa) {
  if (n < 1 || k < 1 || ldw < k || !Supported(isa)) return std::nullopt;
  PackedWeights p(n, k, isa);
  const int width = p.width();
  const int64_t panels = (n + width - 1) / width;
  p.panels_.assign(static_cast<size_t>(panels * k * width), 0.0f);
  for (int64_t panel = 0; panel < panels; ++panel) {
    float* dst = p.panels_.data() + panel * k * width;
    for (int64_t x = 0; x < width && panel * width + x < n; ++x) {
      const float* src = w + (panel * width + x) * ldw;
      for (int64_t i = 0; i < k; ++i) dst[i * width + x] = src[i];
    }
  }
  return p;
}

void PackedWeights::Multiply(int64_t m, const float* a, int64_t lda, float beta, float* c,
                             int64_t ldc) const {
#if ADAPTD_PACKED_X86
  if (m < 1) return;
  const Job job{n_, k_, panels_.data(), a, lda, beta, c, ldc};
  Panels(job, isa_, m, (n_ + width() - 1) / width());
#else
  (void)m, (void)a, (void)lda, (void)beta, (void)c, (void)ldc;
#endif
}

bool PackedWeights::Pays(int64_t m) { return m <= (openblas_get_num_threads() > 1 ? 48 : 96); }

}  // namespace adaptd::kernels::cpu
