// Argument checks shared by every backend, so that each rejects the same calls with the same
// message (naming the argument and the reason) before touching any memory.
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
