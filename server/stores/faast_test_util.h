// Test helpers for the faast store: random data, independent float64 references (LAPACKE
// dgesdd for the pseudo-inverse, dgesv for ridge), a backend that can be told to fail, and
// store shortcuts. Test-only; thread-compatible.
//
// Layout: row-major; keys n × d, targets n × m, weights S d × m.
#ifndef ADAPTD_SERVER_STORES_FAAST_TEST_UTIL_H_
#define ADAPTD_SERVER_STORES_FAAST_TEST_UTIL_H_

#include <lapacke.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/stores/faast_store.h"
#include "server/stores/store.h"
#include "server/stores/store_factory.h"

namespace adaptd::faast_test {

// Float values (the store's input type), so that their float64 copies are exact.
inline std::vector<float> RandomFloats(std::mt19937_64& rng, int64_t n, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(scale * normal(rng));
  return out;
}

inline std::vector<double> ToDoubles(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// Keys of rank `rank`: (n × rank)·(rank × d) in float64, then rounded to float (the rounding
// keeps the rank numerically tiny-but-nonzero, which the cut-off must drop).
inline std::vector<float> LowRankFloats(std::mt19937_64& rng, int64_t n, int64_t d, int64_t rank) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> a(n * rank), b(rank * d);
  for (double& x : a) x = normal(rng);
  for (double& x : b) x = normal(rng);
  std::vector<float> out(n * d);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      double s = 0;
      for (int64_t k = 0; k < rank; ++k) s += a[i * rank + k] * b[k * d + j];
      out[i * d + j] = static_cast<float>(s);
    }
  }
  return out;
}

inline double RelError(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline std::vector<double> OneHot(const std::vector<int>& ids, int64_t m) {
  std::vector<double> v(ids.size() * m, 0.0);
  for (size_t r = 0; r < ids.size(); ++r) v[r * m + ids[r]] = 1.0;
  return v;
}

// S = K̃⁺Ṽ with K̃ = W^½K, Ṽ = W^½V (empty `w`: all ones), keeping σ ≥ eps·σ_max (and σ > 0),
// from LAPACKE_dgesdd on K̃ itself.
inline std::vector<double> PinvReference(const std::vector<double>& k, int64_t n, int64_t d,
                                         const std::vector<double>& v, int64_t m,
                                         const std::vector<double>& w, double eps) {
  std::vector<double> kt = k, vt = v;
  for (int64_t r = 0; r < n; ++r) {
    const double sw = w.empty() ? 1.0 : std::sqrt(w[r]);
    for (int64_t i = 0; i < d; ++i) kt[r * d + i] *= sw;
    for (int64_t j = 0; j < m; ++j) vt[r * m + j] *= sw;
  }
  const int64_t p = std::min(n, d);
  std::vector<double> s(p), u(n * p), vtr(p * d);
  const lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', n, d, kt.data(), d, s.data(),
                                         u.data(), p, vtr.data(), d);
  EXPECT_EQ(info, 0);
  std::vector<double> out(d * m, 0.0);
  for (int64_t i = 0; i < p; ++i) {
    if (!(s[i] > 0) || s[i] < eps * s[0]) continue;
    // out += v_i (1/σ_i) (u_iᵀ Ṽ)
    std::vector<double> proj(m, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < m; ++j) proj[j] += u[r * p + i] * vt[r * m + j];
    }
    for (int64_t a = 0; a < d; ++a) {
      const double f = vtr[i * d + a] / s[i];
      for (int64_t j = 0; j < m; ++j) out[a * m + j] += f * proj[j];
    }
  }
  return out;
}

// S solving (KᵀWK + λI) S = KᵀWV by LU (LAPACKE_dgesv), all in float64.
inline std::vector<double> RidgeReference(const std::vector<double>& k, int64_t n, int64_t d,
                                          const std::vector<double>& v, int64_t m,
                                          const std::vector<double>& w, double lambda) {
  std::vector<double> a(d * d, 0.0), b(d * m, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const double wr = w.empty() ? 1.0 : w[r];
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j) a[i * d + j] += wr * k[r * d + i] * k[r * d + j];
      for (int64_t j = 0; j < m; ++j) b[i * m + j] += wr * k[r * d + i] * v[r * m + j];
    }
  }
  for (int64_t i = 0; i < d; ++i) a[i * d + i] += lambda;
  std::vector<lapack_int> piv(d);
  EXPECT_EQ(LAPACKE_dgesv(LAPACK_ROW_MAJOR, d, m, a.data(), d, piv.data(), b.data(), m), 0);
  return b;
}

// A backend that forwards to the CPU one and fails the operations it is told to.
class FlakyBackend final : public kernels::Backend {
 public:
  FlakyBackend() : cpu_(kernels::MakeCpuBackend()) {}
  std::atomic<bool> fail_syrk{false}, fail_gemm{false}, fail_eigen{false}, fail_cholesky{false};

  std::string_view name() const override { return "flaky"; }

 protected:
  bool SupportsImpl(const kernels::OpCall& call) const override { return cpu_->Supports(call); }
  absl::Status GemmImpl(kernels::Trans ta, kernels::Trans tb, int64_t m, int64_t n, int64_t k,
                        double alpha, const double* a, int64_t lda, const double* b, int64_t ldb,
                        double beta, double* c, int64_t ldc) override {
    if (fail_gemm) return absl::InternalError("injected gemm failure");
    return cpu_->Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  absl::Status GemmImpl(kernels::Trans ta, kernels::Trans tb, int64_t m, int64_t n, int64_t k,
                        float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                        float beta, float* c, int64_t ldc) override {
    if (fail_gemm) return absl::InternalError("injected gemm failure");
    return cpu_->Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  absl::Status SyrkUpperImpl(int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                             double beta, double* c, int64_t ldc) override {
    if (fail_syrk) return absl::InternalError("injected syrk failure");
    return cpu_->SyrkUpper(n, k, alpha, a, lda, beta, c, ldc);
  }
  absl::Status SymmetricEigenImpl(int64_t n, double* a, double* w) override {
    if (fail_eigen) return absl::InternalError("injected eigen failure");
    return cpu_->SymmetricEigen(n, a, w);
  }
  absl::Status CholeskySolveImpl(int64_t n, int64_t m, double* a, double* b) override {
    if (fail_cholesky) return absl::FailedPreconditionError("injected: not positive definite");
    return cpu_->CholeskySolve(n, m, a, b);
  }

 private:
  std::unique_ptr<kernels::Backend> cpu_;
};

inline adapt::v1::StoreSpec LabelSpec(uint32_t dim = 0) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.set_dim(dim);
  spec.mutable_faast();
  return spec;
}

inline adapt::v1::StoreSpec VectorSpec(uint32_t m, uint32_t dim = 0) {
  adapt::v1::StoreSpec spec = LabelSpec(dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  spec.mutable_output()->set_dim(m);
  return spec;
}

inline std::unique_ptr<FaastStore> MakeStore(const adapt::v1::StoreSpec& spec,
                                             kernels::Backend* backend) {
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return nullptr;
  return std::unique_ptr<FaastStore>(static_cast<FaastStore*>(store->release()));
}

inline ExampleBatch LabelBatch(const std::vector<float>& keys, int64_t dim,
                               std::vector<std::string> labels, int64_t first = 0,
                               int64_t rows = -1) {
  if (rows < 0) rows = static_cast<int64_t>(labels.size()) - first;
  ExampleBatch b;
  b.rows = rows;
  b.dim = dim;
  b.keys.assign(keys.begin() + first * dim, keys.begin() + (first + rows) * dim);
  b.labels.assign(labels.begin() + first, labels.begin() + first + rows);
  return b;
}

inline ExampleBatch VectorBatch(const std::vector<float>& keys, int64_t dim,
                                const std::vector<float>& targets, int64_t m, int64_t first,
                                int64_t rows) {
  ExampleBatch b;
  b.rows = rows;
  b.dim = dim;
  b.keys.assign(keys.begin() + first * dim, keys.begin() + (first + rows) * dim);
  b.targets.assign(targets.begin() + first * m, targets.begin() + (first + rows) * m);
  return b;
}

// One transaction holding `batches`, committed.
inline absl::StatusOr<CommitResult> Apply(Store& store, TxnKind kind,
                                          const std::vector<ExampleBatch>& batches) {
  std::unique_ptr<Txn> txn = store.Begin(kind);
  for (const ExampleBatch& b : batches) {
    if (absl::Status s = txn->Add(b); !s.ok()) return s;
  }
  return store.Commit(*txn);
}

inline absl::StatusOr<adapt::v1::CompileResponse> CompileNow(
    Store& store, const adapt::v1::FaastParams& overrides = adapt::v1::FaastParams()) {
  adapt::v1::CompileRequest request;
  *request.mutable_faast() = overrides;
  return store.Compile(request);
}

// Everything observable about a store, for "unchanged" checks.
inline std::string Fingerprint(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  info.mutable_faast()->clear_compile_seconds();
  absl::StatusOr<adapt::v1::StoreSnapshot> snap = store.Snapshot();
  EXPECT_TRUE(snap.ok());
  return info.SerializeAsString() + "|" + (snap.ok() ? snap->SerializeAsString() : "");
}

}  // namespace adaptd::faast_test

#endif  // ADAPTD_SERVER_STORES_FAAST_TEST_UTIL_H_
