// Backend's public methods (backend.h): validate once (op_checks.h), answer empty calls, then
// run the call on the backend that supports it (this one, or HostBackend()).
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "kernels/backend.h"
#include "kernels/op_checks.h"

namespace adaptd::kernels {
namespace {

// a·b, saturating at INT64_MAX (both ≥ 0): extents only feed comparisons against limits.
int64_t Product(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<int64_t>::max() / b ? std::numeric_limits<int64_t>::max() : a * b;
}

int64_t Largest(std::initializer_list<int64_t> values) { return std::max(values); }

}  // namespace

template <typename T>
absl::Status Backend::GemmChecked(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha,
                                  const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                                  int64_t ldc) {
  if (auto s = CheckGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc); !s.ok()) return s;
  if (m == 0 || n == 0) return absl::OkStatus();
  return RunnerFor({Op::kGemm, Largest({m, n, k})})
      .GemmImpl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

absl::Status Backend::Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                           const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                           double* c, int64_t ldc) {
  return GemmChecked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

absl::Status Backend::Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                           float* c, int64_t ldc) {
  return GemmChecked(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

absl::Status Backend::SyrkUpper(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                                double beta, double* c, int64_t ldc) {
  if (auto s = CheckSyrk(n, k, a, lda, c, ldc); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  return RunnerFor({Op::kSyrk, Largest({n, k})}).SyrkUpperImpl(n, k, alpha, a, lda, beta, c, ldc);
}

absl::Status Backend::SymmetricEigen(int64_t n, double* a, double* w) {
  if (auto s = CheckSymmetricEigen(n, a, w); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  return RunnerFor({Op::kSymmetricEigen, n}).SymmetricEigenImpl(n, a, w);
}

absl::Status Backend::CholeskySolve(int64_t n, int64_t m, double* a, double* b) {
  if (auto s = CheckCholeskySolve(n, m, a, b); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  return RunnerFor({Op::kCholeskySolve, Largest({n, m})}).CholeskySolveImpl(n, m, a, b);
}

template <typename T>
absl::Status Backend::GemvChecked(Trans trans, int64_t m, int64_t n, T alpha, const T* a,
                                  int64_t lda, const T* x, T beta, T* y) {
  if (auto s = CheckGemv(trans, m, n, a, lda, x, y); !s.ok()) return s;
  if ((trans == Trans::kNo ? m : n) == 0) return absl::OkStatus();
  return RunnerFor({Op::kGemv, Largest({m, n})}).GemvImpl(trans, m, n, alpha, a, lda, x, beta, y);
}

absl::Status Backend::Gemv(Trans trans, int64_t m, int64_t n, float alpha, const float* a,
                           int64_t lda, const float* x, float beta, float* y) {
  return GemvChecked(trans, m, n, alpha, a, lda, x, beta, y);
}

absl::Status Backend::Gemv(Trans trans, int64_t m, int64_t n, double alpha, const double* a,
                           int64_t lda, const double* x, double beta, double* y) {
  return GemvChecked(trans, m, n, alpha, a, lda, x, beta, y);
}

absl::Status Backend::SyrkUpperAccumulate(int64_t n, int64_t k, double alpha, const float* a,
                                          int64_t lda, double beta, double* c, int64_t ldc) {
  if (auto s = CheckSyrkAccumulate(n, k, a, lda, c, ldc); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  return RunnerFor({Op::kSyrkAccumulate, Largest({n, k})})
      .SyrkUpperAccumulateImpl(n, k, alpha, a, lda, beta, c, ldc);
}

absl::Status Backend::TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k,
                           int32_t* idx, float* val) {
  if (auto s = CheckTopK(rows, n, x, ldx, k, idx, val); !s.ok()) return s;
  if (rows == 0 || k == 0) return absl::OkStatus();
  return RunnerFor({Op::kTopK, Largest({rows, n}), n, k}).TopKImpl(rows, n, x, ldx, k, idx, val);
}

absl::Status Backend::RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha,
                                    const float* src, int64_t lds, float* dst, int64_t ldd,
                                    int64_t dst_count) {
  if (auto s = CheckRowScatterAdd(rows, n, dst_rows, src, lds, dst, ldd, dst_count); !s.ok())
    return s;
  if (rows == 0 || n == 0) return absl::OkStatus();
  const int64_t extent = Largest({rows, n, dst_count, Product(rows, n), Product(dst_count, n)});
  return RunnerFor({Op::kRowScatterAdd, extent})
      .RowScatterAddImpl(rows, n, dst_rows, alpha, src, lds, dst, ldd, dst_count);
}

absl::Status Backend::GroupedGemm(std::span<const GemmGroup> groups) {
  if (auto s = CheckGroupedGemm(groups); !s.ok()) return s;
  int64_t extent = 0;
  bool any = false;
  for (const GemmGroup& g : groups) {
    if (g.m == 0 || g.n == 0) continue;
    any = true;
    extent = std::max(extent, Largest({g.m, g.n, g.k}));
  }
  if (!any) return absl::OkStatus();
  return RunnerFor({Op::kGroupedGemm, extent}).GroupedGemmImpl(groups);
}

template <typename T>
absl::Status Backend::FalconChunkStepChecked(const FalconChunk<T>& chunk) {
  if (auto s = CheckFalconChunk(chunk); !s.ok()) return s;
  if (chunk.m == 0) return absl::OkStatus();  // no column: S and the predictions are empty
  int64_t pairs = 0;
  for (int64_t w : chunk.window) pairs += w;
  OpCall call{Op::kFalconChunkStep, Largest({chunk.d, chunk.m, chunk.h + chunk.c, pairs})};
  call.steps = chunk.c;
  return RunnerFor(call).FalconChunkStepImpl(chunk);
}

absl::Status Backend::FalconChunkStep(const FalconChunk<float>& chunk) {
  return FalconChunkStepChecked(chunk);
}

absl::Status Backend::FalconChunkStep(const FalconChunk<double>& chunk) {
  return FalconChunkStepChecked(chunk);
}

absl::Status Backend::ProductKeyScores(const ProductKeyQuery& query) {
  if (auto s = CheckProductKeyQuery(query); !s.ok()) return s;
  if (query.count == 0) return absl::OkStatus();
  const int64_t rows = Product(query.count, 2);
  const int64_t extent = Largest({rows, Product(rows, query.half), Product(rows, query.n)});
  return RunnerFor({Op::kProductKeyScores, extent, query.n, query.k}).ProductKeyScoresImpl(query);
}

}  // namespace adaptd::kernels
