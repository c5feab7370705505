// CPU backend: OpenBLAS for the products, LAPACKE for the decompositions.
#include <cblas.h>
#include <lapacke.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/backend.h"

namespace adaptd::kernels {
namespace {

CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

absl::Status CheckDims(int64_t m, int64_t n, int64_t k) {
  if (m < 0 || n < 0 || k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("negative matrix dimension: ", m, "x", n, "x", k));
  }
  return absl::OkStatus();
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool Supports(Op) const override { return true; }
  void SetThreads(int threads) override {
    if (threads > 0) openblas_set_num_threads(threads);
  }

  absl::Status Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                    double* c, int64_t ldc) override {
    if (auto s = CheckDims(m, n, k); !s.ok()) return s;
    if (m == 0 || n == 0) return absl::OkStatus();
    cblas_dgemm(CblasRowMajor, ToCblas(ta), ToCblas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
    return absl::OkStatus();
  }

  absl::Status Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                    int64_t ldc) override {
    if (auto s = CheckDims(m, n, k); !s.ok()) return s;
    if (m == 0 || n == 0) return absl::OkStatus();
    cblas_sgemm(CblasRowMajor, ToCblas(ta), ToCblas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
    return absl::OkStatus();
  }

  absl::Status SyrkUpper(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                         double beta, double* c, int64_t ldc) override {
    if (auto s = CheckDims(n, n, k); !s.ok()) return s;
    if (n == 0) return absl::OkStatus();
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, alpha, a, lda, beta, c, ldc);
    return absl::OkStatus();
  }

  absl::Status SymmetricEigen(int64_t n, double* a, double* w) override {
    if (n < 0) return absl::InvalidArgumentError("negative matrix dimension");
    if (n == 0) return absl::OkStatus();
    const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
    if (info != 0) {
      return absl::InternalError(absl::StrCat("LAPACKE_dsyevd failed, info=", info));
    }
    return absl::OkStatus();
  }

  absl::Status CholeskySolve(int64_t n, int64_t m, double* a, double* b) override {
    if (auto s = CheckDims(n, m, 0); !s.ok()) return s;
    if (n == 0) return absl::OkStatus();
    lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, a, n);
    if (info > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("matrix is not positive definite (leading minor ", info, " of ", n, ")"));
    }
    if (info < 0) return absl::InternalError(absl::StrCat("LAPACKE_dpotrf failed, info=", info));
    if (m == 0) return absl::OkStatus();
    info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'U', n, m, a, n, b, m);
    if (info != 0) return absl::InternalError(absl::StrCat("LAPACKE_dpotrs failed, info=", info));
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
  return std::make_unique<CpuBackend>();
}

}  // namespace adaptd::kernels
