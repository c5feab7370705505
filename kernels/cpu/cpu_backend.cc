// CPU backend: OpenBLAS for the products (and narrow_gemm.h for float products with few
// columns), LAPACKE for the decompositions, and the base class's
// host implementations (kernels/cpu/*_ops.cc) for the rest. Arguments arrive validated and
// non-empty (backend.h); it runs every call the checks admit.
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/cpu/narrow_gemm.h"

namespace adaptd::kernels {
namespace {

CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

// The leading dimension BLAS accepts for a row-major matrix of `cols` columns: the checks let a
// single row (or an empty matrix) have any, but BLAS wants at least max(1, cols) regardless.
int64_t BlasLd(int64_t ld, int64_t cols) { return std::max<int64_t>({ld, cols, 1}); }

// SGEMM or DGEMM, row-major.
template <typename T>
absl::Status BlasGemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                      int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const auto gemm = [](auto... args) {
    if constexpr (std::is_same_v<T, double>) {
      cblas_dgemm(args...);
    } else {
      cblas_sgemm(args...);
    }
  };
  gemm(CblasRowMajor, ToCblas(ta), ToCblas(tb), m, n, k, alpha, a,
       BlasLd(lda, ta == Trans::kNo ? k : m), b, BlasLd(ldb, tb == Trans::kNo ? n : k), beta, c,
       BlasLd(ldc, n));
  return absl::OkStatus();
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool RunsOnHost() const override { return true; }
  void SetThreads(int threads) override {
    if (threads > 0) openblas_set_num_threads(threads);
  }

 protected:
  bool SupportsImpl(const OpCall&) const override { return true; }

  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                        const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                        double* c, int64_t ldc) override {
    return BlasGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  absl::Status GemmImpl(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc) override {
    // Many rows against few columns (scoring keys against a read-out): the narrow kernel
    // streams A once instead of packing it.
    if (ta == Trans::kNo && tb == Trans::kNo &&
        cpu::NarrowGemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) {
      return absl::OkStatus();
    }
    return BlasGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  absl::Status SyrkUpperImpl(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                             double beta, double* c, int64_t ldc) override {
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, alpha, a, BlasLd(lda, n), beta, c,
                BlasLd(ldc, n));
    return absl::OkStatus();
  }

  absl::Status SymmetricEigenImpl(int64_t n, double* a, double* w) override {
    const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
    if (info != 0) {
      return absl::InternalError(absl::StrCat("LAPACKE_dsyevd failed, info=", info));
    }
    return absl::OkStatus();
  }

  // The row-major upper triangle of a symmetric matrix is, in memory, its column-major lower
  // triangle: factoring it column-major as L·Lᵀ leaves U = Lᵀ where a row-major 'U' factor
  // would be, without the two n × n transposes (and their scratch) of LAPACKE's row-major
  // path. The solve is then Uᵀ·Y = B and U·X = Y, as dpotrs does, with row-major TRSMs.
  absl::Status CholeskySolveImpl(int64_t n, int64_t m, double* a, double* b) override {
    const lapack_int info = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, a, n);
    if (info > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("matrix is not positive definite (leading minor ", info, " of ", n, ")"));
    }
    if (info < 0) return absl::InternalError(absl::StrCat("LAPACKE_dpotrf failed, info=", info));
    if (m == 0) return absl::OkStatus();
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, n, m, 1.0, a, n, b,
                m);
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n, m, 1.0, a, n,
                b, m);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
  return std::make_unique<CpuBackend>();
}

}  // namespace adaptd::kernels
