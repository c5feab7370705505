// The argument checks of Backend's public methods (backend.h): one set for every backend, so
// that each rejects the same calls with the same InvalidArgument message (the argument's name,
// then the reason) before touching any memory. The BLAS-backed ops also refuse dimensions and
// leading dimensions beyond 32 bits: OpenBLAS, LAPACKE, cuBLAS and cuSOLVER all take int.
// Thread safety: stateless.
#ifndef ADAPTD_KERNELS_OP_CHECKS_H_
#define ADAPTD_KERNELS_OP_CHECKS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/backend.h"

namespace adaptd::kernels {

// m×n matrix stored row-major with leading dimension ld (`name` names it in messages).
absl::Status CheckMatrix(const char* name, int64_t rows, int64_t cols, const void* data,
                         int64_t ld);
// A count or dimension: not negative.
absl::Status CheckCount(const char* name, int64_t value);
// A dimension or leading dimension handed to BLAS / LAPACK: at most INT32_MAX.
absl::Status CheckBlasInt(const char* name, int64_t value);

absl::Status CheckGemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, const void* a,
                       int64_t lda, const void* b, int64_t ldb, const void* c, int64_t ldc);
absl::Status CheckSyrk(int64_t n, int64_t k, const void* a, int64_t lda, const void* c,
                       int64_t ldc);
absl::Status CheckSymmetricEigen(int64_t n, const double* a, const double* w);
absl::Status CheckCholeskySolve(int64_t n, int64_t m, const double* a, const double* b);
absl::Status CheckGemv(Trans trans, int64_t m, int64_t n, const void* a, int64_t lda, const void* x,
                       const void* y);
absl::Status CheckSyrkAccumulate(int64_t n, int64_t k, const float* a, int64_t lda, const double* c,
                                 int64_t ldc);
absl::Status CheckTopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                       const int32_t* idx, const float* val);
// Also checks every index against dst_count.
absl::Status CheckRowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, const float* src,
                                int64_t lds, const float* dst, int64_t ldd, int64_t dst_count);
absl::Status CheckGroupedGemm(std::span<const GemmGroup> groups);
template <typename T>
absl::Status CheckFalconChunk(const FalconChunk<T>& chunk);
absl::Status CheckProductKeyQuery(const ProductKeyQuery& query);

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_OP_CHECKS_H_
