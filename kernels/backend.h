// The compute backend: the dense linear algebra that stores and encoders run. One interface,
// a CPU implementation (OpenBLAS + LAPACKE) and a CUDA one (cuBLAS + cuSOLVER).
//
// Layout: every matrix is row-major with an explicit leading dimension (elements between the
// starts of two rows). Pointers are host memory; a device backend stages them itself.
// Thread safety: a Backend may be called from several threads at once unless its
// documentation says otherwise.
#ifndef ADAPTD_KERNELS_BACKEND_H_
#define ADAPTD_KERNELS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace adaptd::kernels {

enum class Op {
  kGemm,
  kSyrk,
  kSymmetricEigen,
  kCholeskySolve,
};

enum class Trans { kNo, kYes };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  // Whether this backend runs `op` itself; callers fall back to the CPU where it does not.
  virtual bool Supports(Op op) const = 0;

  // C (m×n) = alpha·op(A)·op(B) + beta·C, with op(A) m×k and op(B) k×n.
  virtual absl::Status Gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k,
                            double alpha, const double* a, int64_t lda, const double* b,
                            int64_t ldb, double beta, double* c, int64_t ldc) = 0;
  virtual absl::Status Gemm(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                            float beta, float* c, int64_t ldc) = 0;

  // The upper triangle of C (n×n) = alpha·AᵀA + beta·C, with A k×n (k rows of n features).
  // The strictly lower triangle of C is not referenced.
  virtual absl::Status SyrkUpper(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                                 double beta, double* c, int64_t ldc) = 0;

  // Eigendecomposition of the symmetric n×n matrix A (upper triangle read). On return `a`
  // holds the orthonormal eigenvectors as columns (a[i·n + j] is entry i of vector j) and
  // `w` the n eigenvalues in ascending order.
  virtual absl::Status SymmetricEigen(int64_t n, double* a, double* w) = 0;

  // Solves A X = B for a symmetric positive definite A (n×n, upper triangle read; overwritten
  // by its Cholesky factor) and B (n×m, overwritten by X). FailedPrecondition when A is not
  // positive definite.
  virtual absl::Status CholeskySolve(int64_t n, int64_t m, double* a, double* b) = 0;
};

// The CPU backend. `threads` > 0 sets OpenBLAS's thread count (process-wide); 0 leaves it.
std::unique_ptr<Backend> MakeCpuBackend(int threads = 0);

// The CUDA backend on `device`. Unavailable when the build has no CUDA or no device is present.
absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device = 0);

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_BACKEND_H_
