// The chunk-parallel Falcon update of one chunk (backend.h FalconChunk; the mathematics is in
// server/stores/falcon_chunked.h): the Gram and X S₀ products on the backend, the per-group
// triangular solve (residual variants) or masked predictions (target variants) on the host, in
// float64, then S ← e^{G_C} S₀ + Xᵀ Z on the backend.
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace adaptd::kernels::cpu {
namespace {

#define FALCON_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    const ::absl::Status falcon_status_ = (expr);    \
    if (!falcon_status_.ok()) return falcon_status_; \
  } while (0)

// The history pairs and the chunk's pairs as one extended list of e = h + c pairs, with the
// products every column group shares.
template <typename T>
struct Chunk {
  int64_t d = 0, m = 0, h = 0, c = 0, e = 0;
  std::span<const int64_t> window;
  const T* xe = nullptr;          // e × d keys
  const T* ve = nullptr;          // e × m targets
  std::vector<T> xs0;             // e × m: X S₀
  std::vector<T> gram;            // e × e: X Xᵀ
  std::vector<double> z;          // e × m: weights of Xᵀ in the update of S
  std::vector<double> pred;       // c × m, accumulated in float64 whatever T is
  std::vector<double> end_decay;  // per column: e^{G_C}

  int64_t First(int64_t t) const { return h + t - window[t] + 1; }
};

// The per-step rates of one column group: G (cumulative log decay), w = η/B_t, and the
// decays D[t][s] = e^{G_{t−1} − G_s} (s < t), each ≤ 1.
struct GroupRates {
  std::vector<double> g, g_prev, w, d;
};

template <typename T>
GroupRates RatesFor(const FalconColumnGroup& group, const Chunk<T>& k) {
  GroupRates r;
  r.g.resize(k.c);
  r.g_prev.resize(k.c);
  r.w.resize(k.c);
  double g = 0;
  for (int64_t t = 0; t < k.c; ++t) {
    r.g_prev[t] = g;
    g += group.log_gamma[t];
    r.g[t] = g;
    r.w[t] = group.rate[t];
  }
  // D[s+1][s] = 1 and D[t+1][s] = D[t][s]·γ_t: c exponentials instead of c²/2, each factor
  // ≤ 1, so the products only shrink (a relative error of at most c roundings).
  r.d.assign(k.c * k.c, 0.0);
  std::vector<double> gamma(k.c);
  for (int64_t t = 0; t < k.c; ++t) gamma[t] = std::exp(group.log_gamma[t]);
  for (int64_t t = 1; t < k.c; ++t) {
    double* row = r.d.data() + t * k.c;
    const double* prev = row - k.c;
    for (int64_t s = 0; s < t - 1; ++s) row[s] = prev[s] * gamma[t - 1];
    row[t - 1] = 1.0;
  }
  return r;
}

// Variants 1, 2, 3: unknowns ρ_{t,i} = v_i − S_{t−1}ᵀx_i for each step t and pair i of its
// window, by forward substitution over the steps.
template <typename T>
void SolveResiduals(const GroupRates& r, std::span<const int64_t> cols, Chunk<T>& k) {
  const int64_t q = static_cast<int64_t>(cols.size());
  std::vector<int64_t> step_of, pair_of, offset(k.c + 1, 0);
  for (int64_t t = 0; t < k.c; ++t) {
    offset[t + 1] = offset[t] + k.window[t];
    for (int64_t i = k.First(t); i <= k.h + t; ++i) {
      step_of.push_back(t);
      pair_of.push_back(i);
    }
  }
  const int64_t n = offset[k.c];
  std::vector<double> rho(n * q);
  for (int64_t t = 0; t < k.c; ++t) {
    const double start = std::exp(r.g_prev[t]);
    for (int64_t u = offset[t]; u < offset[t + 1]; ++u) {
      const int64_t i = pair_of[u];
      double* row = rho.data() + u * q;
      for (int64_t j = 0; j < q; ++j) {
        row[j] = static_cast<double>(k.ve[i * k.m + cols[j]]) -
                 start * static_cast<double>(k.xs0[i * k.m + cols[j]]);
      }
      for (int64_t v = 0; v < offset[t]; ++v) {
        const int64_t s = step_of[v];
        const double coef = r.d[t * k.c + s] * r.w[s] * k.gram[i * k.e + pair_of[v]];
        if (coef == 0) continue;
        const double* prev = rho.data() + v * q;
        for (int64_t j = 0; j < q; ++j) row[j] -= coef * prev[j];
      }
    }
    const int64_t own = offset[t + 1] - 1;  // the step's own pair is last in its window
    for (int64_t j = 0; j < q; ++j) {
      k.pred[t * k.m + cols[j]] = k.ve[(k.h + t) * k.m + cols[j]] - rho[own * q + j];
    }
  }
  const double g_end = r.g[k.c - 1];
  for (int64_t v = 0; v < n; ++v) {
    const int64_t s = step_of[v];
    const double weight = std::exp(g_end - r.g[s]) * r.w[s];
    const double* row = rho.data() + v * q;
    double* dst = k.z.data() + pair_of[v] * k.m;
    for (int64_t j = 0; j < q; ++j) dst[cols[j]] += weight * row[j];
  }
}

// Variants 1A, 2A, 3A: S_{t−1} = e^{G_{t−1}} S₀ + Σ_i A[t][i] x_i v_iᵀ (the masked form).
template <typename T>
absl::Status MaskedPredictions(const GroupRates& r, std::span<const int64_t> cols, bool whole,
                               Chunk<T>& k, Backend* backend) {
  std::vector<T> a(k.c * k.e, T(0));  // A ⊙ XXᵀ, rows of the chunk's own pairs
  std::vector<double> final_weight(k.e, 0.0);
  const double g_end = r.g[k.c - 1];
  for (int64_t t = 0; t < k.c; ++t) {
    for (int64_t s = 0; s < t; ++s) {
      const double coef = r.d[t * k.c + s] * r.w[s];
      for (int64_t i = k.First(s); i <= k.h + s; ++i) a[t * k.e + i] += static_cast<T>(coef);
    }
    for (int64_t i = k.First(t); i <= k.h + t; ++i) {
      final_weight[i] += std::exp(g_end - r.g[t]) * r.w[t];
    }
    for (int64_t i = 0; i < k.e; ++i) a[t * k.e + i] *= k.gram[(k.h + t) * k.e + i];
  }
  for (int64_t t = 0; t < k.c; ++t) {
    const double start = std::exp(r.g_prev[t]);
    for (int64_t col : cols) k.pred[t * k.m + col] = start * k.xs0[(k.h + t) * k.m + col];
  }
  if (whole) {
    std::vector<T> product(k.c * k.m);
    FALCON_RETURN_IF_ERROR(backend->Gemm(Trans::kNo, Trans::kNo, k.c, k.m, k.e, T(1), a.data(), k.e,
                                         k.ve, k.m, T(0), product.data(), k.m));
    for (int64_t i = 0; i < k.c * k.m; ++i) k.pred[i] += product[i];
  } else {
    for (int64_t t = 0; t < k.c; ++t) {
      for (int64_t i = 0; i < k.e; ++i) {
        const double coef = a[t * k.e + i];
        if (coef == 0) continue;
        for (int64_t col : cols) k.pred[t * k.m + col] += coef * k.ve[i * k.m + col];
      }
    }
  }
  for (int64_t i = 0; i < k.e; ++i) {
    for (int64_t col : cols) k.z[i * k.m + col] = final_weight[i] * k.ve[i * k.m + col];
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status FalconChunkStep(const FalconChunk<T>& chunk, Backend* backend) {
  if (chunk.m == 0) return absl::OkStatus();
  Chunk<T> k;
  k.d = chunk.d;
  k.m = chunk.m;
  k.h = chunk.h;
  k.c = chunk.c;
  k.e = k.h + k.c;
  k.window = chunk.window;
  k.xe = chunk.keys;
  k.ve = chunk.targets;
  k.xs0.assign(k.e * k.m, T(0));
  k.gram.assign(k.e * k.e, T(0));
  k.z.assign(k.e * k.m, T(0));
  k.pred.assign(k.c * k.m, T(0));
  k.end_decay.assign(k.m, 1.0);
  FALCON_RETURN_IF_ERROR(backend->Gemm(Trans::kNo, Trans::kNo, k.e, k.m, k.d, T(1), k.xe, k.d,
                                       chunk.s, k.m, T(0), k.xs0.data(), k.m));
  FALCON_RETURN_IF_ERROR(backend->Gemm(Trans::kNo, Trans::kYes, k.e, k.e, k.d, T(1), k.xe, k.d,
                                       k.xe, k.d, T(0), k.gram.data(), k.e));
  for (const FalconColumnGroup& group : chunk.groups) {
    const GroupRates r = RatesFor(group, k);
    if (chunk.residual) {
      SolveResiduals(r, group.columns, k);
    } else {
      FALCON_RETURN_IF_ERROR(
          MaskedPredictions(r, group.columns, chunk.groups.size() == 1, k, backend));
    }
    const double end = std::exp(r.g[k.c - 1]);
    for (int64_t col : group.columns) k.end_decay[col] = end;
  }
  // S ← e^{G_C} S₀ + Xᵀ Z
  for (int64_t i = 0; i < k.d; ++i) {
    T* row = chunk.s + i * k.m;
    for (int64_t j = 0; j < k.m; ++j) row[j] *= static_cast<T>(k.end_decay[j]);
  }
  const T* z = nullptr;
  std::vector<T> z_copy;
  if constexpr (std::is_same_v<T, double>) {
    z = k.z.data();
  } else {
    z_copy.assign(k.z.begin(), k.z.end());
    z = z_copy.data();
  }
  FALCON_RETURN_IF_ERROR(backend->Gemm(Trans::kYes, Trans::kNo, k.d, k.m, k.e, T(1), k.xe, k.d, z,
                                       k.m, T(1), chunk.s, k.m));
  if (chunk.predictions != nullptr) {
    for (int64_t i = 0; i < k.c * k.m; ++i) chunk.predictions[i] = static_cast<T>(k.pred[i]);
  }
  return absl::OkStatus();
}

template absl::Status FalconChunkStep<float>(const FalconChunk<float>&, Backend*);
template absl::Status FalconChunkStep<double>(const FalconChunk<double>&, Backend*);

}  // namespace adaptd::kernels::cpu
