// The CPU implementations of the operations that Backend implements in its base class
// (backend.h states what each computes). Arguments are already checked (op_checks.h).
// Thread safety: reentrant; ProductKeyScores keeps per-thread scratch.
// Layout: as backend.h (row-major, explicit leading dimensions).
#ifndef ADAPTD_KERNELS_CPU_CPU_OPS_H_
#define ADAPTD_KERNELS_CPU_CPU_OPS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/backend.h"

namespace adaptd::kernels::cpu {

void Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a, int64_t lda,
          const float* x, float beta, float* y);
void Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a, int64_t lda,
          const double* x, double beta, double* y);
void SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a, int64_t lda,
                         double beta, double* c, int64_t ldc);
void TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx, float* val);
void RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha, const float* src,
                   int64_t lds, float* dst, int64_t ldd);
void GroupedGemm(std::span<const GemmGroup> groups);
// Runs its products on `backend` (Gemm), the rest on the host.
template <typename T>
absl::Status FalconChunkStep(const FalconChunk<T>& chunk, Backend* backend);
// Splits large batches over OpenBLAS's thread count (a thread per range of queries).
void ProductKeyScores(const ProductKeyQuery& query);
// ProductKeyScores with the AVX-512 distance kernel only when `avx512` (and the CPU has it), and
// at most `threads` threads; the results are the same bit for bit, which tests check.
void ProductKeyScoresWith(const ProductKeyQuery& query, bool avx512, int threads);

// The k best of the n IDW scores −log(ε + d2[i]) (best first, ties to the smaller i), with the
// exact per-coordinate arithmetic ProductKeyScores uses.
void SelectHalf(const float* d2, int n, int k, float eps, int32_t* idx, float* score);

}  // namespace adaptd::kernels::cpu

#endif  // ADAPTD_KERNELS_CPU_CPU_OPS_H_
