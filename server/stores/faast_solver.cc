#include "server/stores/faast_solver.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace adaptd {
namespace {

using kernels::Backend;
using kernels::Trans;

// Gemm that also handles an empty inner dimension (the product is zero).
absl::Status Product(Backend* backend, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k,
                     const double* a, int64_t lda, const double* b, int64_t ldb, double* c,
                     int64_t ldc) {
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
    return absl::OkStatus();
  }
  return backend->Gemm(ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// Index of the first kept eigenpair: eigenvalues come ascending, the kept ones are a suffix.
int64_t FirstKept(const std::vector<double>& w, double eps) {
  const int64_t n = static_cast<int64_t>(w.size());
  if (n == 0 || !(w[n - 1] > 0)) return n;
  const double threshold = eps * eps * w[n - 1];
  int64_t first = n;
  while (first > 0 && w[first - 1] >= threshold && w[first - 1] > 0) --first;
  return first;
}

// out (n × m) = Q_k Λ_k⁻¹ Q_kᵀ op(B) with Q the eigenvectors (columns) of an n × n matrix and
// Q_k its columns from `first` on. op(B) is n × m.
absl::Status FilteredApply(Backend* backend, int64_t n, int64_t m, const std::vector<double>& q,
                           const std::vector<double>& w, int64_t first, const double* b,
                           Trans trans_b, int64_t ldb, double* out) {
  const int64_t k = n - first;
  const double* qk = q.data() + first;
  std::vector<double> t(k * m);
  RETURN_IF_ERROR(Product(backend, Trans::kYes, trans_b, k, m, n, qk, n, b, ldb, t.data(), m));
  for (int64_t i = 0; i < k; ++i) {
    const double inv = 1.0 / w[first + i];
    for (int64_t j = 0; j < m; ++j) t[i * m + j] *= inv;
  }
  return Product(backend, Trans::kNo, Trans::kNo, n, m, k, qk, n, t.data(), m, out, m);
}

void SetSpectralStats(const std::vector<double>& w, int64_t first, double eps, FaastSolution* out) {
  const int64_t n = static_cast<int64_t>(w.size());
  out->effective_rank = static_cast<uint32_t>(n - first);
  out->cutoff = eps;
  out->condition_number = first < n ? std::sqrt(w[n - 1] / w[first]) : 0.0;
}

// max r_ii / min r_ii of the Cholesky factor left in the upper triangle of `a` (n × n).
double FactorConditionBound(const std::vector<double>& a, int64_t n) {
  double lo = INFINITY, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = std::abs(a[i * n + i]);
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  return n > 0 && lo > 0 ? hi / lo : 0.0;
}

absl::Status RidgeFailure(const absl::Status& s, double ridge) {
  if (s.code() != absl::StatusCode::kFailedPrecondition) return s;
  return absl::FailedPreconditionError(absl::StrCat(
      "ridge solve failed: G + ridge·I is not positive definite with ridge = ", ridge, " (",
      s.message(), "); compile with a larger faast.ridge, or ridge = 0 for the spectral filter"));
}

absl::StatusOr<FaastSolution> SolveGram(FaastStatistics& st, const FaastSolverParams& params,
                                        Backend* backend) {
  const int64_t d = st.dim, m = st.columns;
  FaastSolution out;
  out.s.assign(d * m, 0.0);
  if (params.ridge > 0) {
    out.solver = "ridge";
    for (int64_t i = 0; i < d; ++i) st.g[i * d + i] += params.ridge;
    std::vector<double> b(d * m);  // C = ctᵀ, plus ridge·S_base with a base
    const bool prior = st.has_prior();
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t i = 0; i < d; ++i) {
        b[i * m + j] = st.ct[j * d + i] + (prior ? params.ridge * st.prior_t[j * d + i] : 0.0);
      }
    }
    absl::Status s = backend->CholeskySolve(d, m, st.g.data(), b.data());
    if (!s.ok()) return RidgeFailure(s, params.ridge);
    out.s = std::move(b);
    out.effective_rank = static_cast<uint32_t>(d);
    out.condition_number = FactorConditionBound(st.g, d);
    return out;
  }
  out.solver = "spectral";
  const double eps = FaastCutoff(params, st.weighted_examples);
  std::vector<double> w(d);
  RETURN_IF_ERROR(backend->SymmetricEigen(d, st.g.data(), w.data()));
  const int64_t first = FirstKept(w, eps);
  SetSpectralStats(w, first, eps, &out);
  RETURN_IF_ERROR(
      FilteredApply(backend, d, m, st.g, w, first, st.ct.data(), Trans::kYes, d, out.s.data()));
  return out;
}

absl::StatusOr<FaastSolution> SolveFewShot(FaastStatistics& st, const FaastSolverParams& params,
                                           Backend* backend) {
  const int64_t d = st.dim, m = st.columns, n = st.raw.rows;
  FaastRawPairs& raw = st.raw;
  // K̃ = W^½K in place; Ṽ = W^½V (one-hot rows for labels).
  std::vector<double> v(n * m, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const double sw = std::sqrt(raw.weights[r]);
    for (int64_t i = 0; i < d; ++i) raw.keys[r * d + i] *= sw;
    if (st.labels) {
      v[r * m + raw.label_ids[r]] = sw;
    } else {
      for (int64_t j = 0; j < m; ++j) v[r * m + j] = sw * raw.targets[r * m + j];
    }
  }
  std::vector<double> gram(n * n);
  RETURN_IF_ERROR(Product(backend, Trans::kNo, Trans::kYes, n, n, d, raw.keys.data(), d,
                          raw.keys.data(), d, gram.data(), n));
  FaastSolution out;
  out.solver = "few_shot";
  std::vector<double> r(n * m);  // (M + ridge·I)⁻¹Ṽ or U_k Λ_k⁻¹ U_kᵀ Ṽ
  const bool prior = st.has_prior() && params.ridge > 0;
  if (prior) {
    // With a base: S = S_base + K̃ᵀ(M + ridge·I)⁻¹(Ṽ − K̃ S_base), the same as
    // (G + ridge·I)⁻¹(C + ridge·S_base).
    std::vector<double> pulled(n * m);
    RETURN_IF_ERROR(Product(backend, Trans::kNo, Trans::kYes, n, m, d, raw.keys.data(), d,
                            st.prior_t.data(), d, pulled.data(), m));
    for (int64_t i = 0; i < n * m; ++i) v[i] -= pulled[i];
  }
  if (params.ridge > 0) {
    for (int64_t i = 0; i < n; ++i) gram[i * n + i] += params.ridge;
    r = v;
    absl::Status s = backend->CholeskySolve(n, m, gram.data(), r.data());
    if (!s.ok()) return RidgeFailure(s, params.ridge);
    out.effective_rank = static_cast<uint32_t>(d);
    out.condition_number = FactorConditionBound(gram, n);
  } else {
    const double eps = FaastCutoff(params, st.weighted_examples);
    std::vector<double> w(n);
    RETURN_IF_ERROR(backend->SymmetricEigen(n, gram.data(), w.data()));
    const int64_t first = FirstKept(w, eps);
    SetSpectralStats(w, first, eps, &out);
    RETURN_IF_ERROR(
        FilteredApply(backend, n, m, gram, w, first, v.data(), Trans::kNo, m, r.data()));
  }
  out.s.assign(d * m, 0.0);
  RETURN_IF_ERROR(Product(backend, Trans::kYes, Trans::kNo, d, m, n, raw.keys.data(), d, r.data(),
                          m, out.s.data(), m));
  if (prior) {
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < m; ++j) out.s[i * m + j] += st.prior_t[j * d + i];
    }
  }
  return out;
}

}  // namespace

double FaastCutoff(const FaastSolverParams& params, double weighted_examples) {
  if (params.rcond.has_value()) return *params.rcond;
  if (!(weighted_examples > 0)) return 1.0;
  return std::min(1.0, std::pow(weighted_examples, -params.alpha));
}

absl::StatusOr<FaastSolution> SolveFaast(FaastStatistics stats, const FaastSolverParams& params,
                                         Backend* backend) {
  if (stats.examples == 0 || stats.dim == 0) {
    FaastSolution out;
    out.s.assign(stats.dim * stats.columns, 0.0);
    if (stats.has_prior() && params.ridge > 0) {  // (0 + ridge·I)⁻¹ ridge·S_base = S_base
      const int64_t d = stats.dim, m = stats.columns;
      for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = 0; j < m; ++j) out.s[i * m + j] = stats.prior_t[j * d + i];
      }
      out.effective_rank = static_cast<uint32_t>(d);
    }
    out.solver = params.ridge > 0 ? "ridge" : "spectral";
    out.cutoff = params.ridge > 0 ? 0.0 : FaastCutoff(params, stats.weighted_examples);
    return out;
  }
  if (stats.raw_kept && stats.raw.rows > 0) return SolveFewShot(stats, params, backend);
  return SolveGram(stats, params, backend);
}

}  // namespace adaptd
