// Products with few output columns, C (m×n) = alpha·A (m×k)·B (k×n) + beta·C with n ≤ 32 and
// neither operand transposed: the shape of scoring many keys against a read-out with few
// labels (faast Predict). BLAS packs all of A for such a product, which doubles its memory
// traffic; this kernel streams each row of A once and keeps a tile of C in registers, reading B
// in place (masked loads past n). Runs on x86-64 with AVX-512 or AVX2 + FMA, splitting the rows
// over the threads OpenBLAS is set to use; elsewhere it declines and the caller uses sgemm.
// Each element of C is one chain of fused multiply-adds over k in order, whatever the row's
// tile, thread or form: a row's result does not depend on the other rows of the call, and the
// AVX2 and AVX-512 forms give the same bits.
// Thread safety: reentrant.
// Layout: row-major with leading dimensions, as backend.h.
#ifndef ADAPTD_KERNELS_CPU_NARROW_GEMM_H_
#define ADAPTD_KERNELS_CPU_NARROW_GEMM_H_

#include <cstdint>

namespace adaptd::kernels::cpu {

// The instruction sets the kernel has a form for.
enum class NarrowIsa { kNone, kAvx2, kAvx512 };

// The best form this CPU runs (kNone: the kernel declines every call).
NarrowIsa BestNarrowIsa();

// The widest n the kernel takes.
inline constexpr int64_t kNarrowMaxColumns = 32;

// Computes the product and returns true, or returns false (nothing written) when the shape is
// outside the kernel's (n > kNarrowMaxColumns, m < 1, k < 1) or `isa` is kNone or
// not supported by this CPU. `threads` ≤ 0: OpenBLAS's thread count.
bool NarrowGemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                NarrowIsa isa = BestNarrowIsa(), int threads = 0);

}  // namespace adaptd::kernels::cpu

#endif  // ADAPTD_KERNELS_CPU_NARROW_GEMM_H_
