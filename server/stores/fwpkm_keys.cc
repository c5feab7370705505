#include "server/stores/fwpkm_keys.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "kernels/cpu/best_list.h"

namespace adaptd {

uint64_t FwpkmRng::Next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double FwpkmRng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double FwpkmRng::Normal() {
  const double u1 = 1.0 - Uniform();  // (0, 1]
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

FwpkmProjection::FwpkmProjection(uint64_t seed, int64_t dim, int64_t key_dim)
    : dim_(dim), key_dim_(key_dim) {
  if (dim == key_dim) return;
  FwpkmRng rng(seed ^ 0x70726F6A65637400ull);  // a stream apart from the sub-keys'
  matrix_.resize(static_cast<size_t>(key_dim * dim));
  for (float& x : matrix_) x = static_cast<float>(rng.Normal());
}

void FwpkmProjection::Apply(const float* x, float* q) const {
  if (matrix_.empty()) {
    std::copy(x, x + dim_, q);
  } else {
    for (int64_t r = 0; r < key_dim_; ++r) {
      const float* p = matrix_.data() + r * dim_;
      double s = 0;
      for (int64_t c = 0; c < dim_; ++c) s += static_cast<double>(p[c]) * x[c];
      q[r] = static_cast<float>(s);
    }
  }
  double norm2 = 0;
  for (int64_t r = 0; r < key_dim_; ++r) norm2 += static_cast<double>(q[r]) * q[r];
  if (norm2 == 0) return;
  const double inv = 1.0 / std::sqrt(norm2);
  for (int64_t r = 0; r < key_dim_; ++r) q[r] = static_cast<float>(q[r] * inv);
}

FwpkmSubKeys::FwpkmSubKeys(int n, int half, uint64_t seed) : n_(n), half_(half) {
  FwpkmRng rng(seed);
  const double bound = 1.0 / std::sqrt(2.0 * half);
  for (int m = 0; m < 2; ++m) {
    t_[m].resize(static_cast<size_t>(n) * half);
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < half; ++c)
        at(m, i, c) = static_cast<float>((2 * rng.Uniform() - 1) * bound);
    }
  }
}

void FwpkmSubKeys::Distances(int m, const float* q_half, float* d2) const {
  std::fill(d2, d2 + n_, 0.0f);
  const float* t = t_[m].data();
  for (int c = 0; c < half_; ++c) {
    const float qc = q_half[c];
    const float* row = t + static_cast<size_t>(c) * n_;
    for (int i = 0; i < n_; ++i) {
      const float diff = qc - row[i];
      d2[i] += diff * diff;
    }
  }
}

namespace {

// The k² pairs of the two halves' selections → the top-k slots and their softmax weights.
void CombineHalves(int n, int k, FwpkmAddress* out) {
  out->k = k;
  int size = 0;
  for (int a = 0; a < k; ++a) {
    for (int b = 0; b < k; ++b) {
      const float s = out->sub_score[0][a] + out->sub_score[1][b];
      const uint32_t slot = static_cast<uint32_t>(out->sub[0][a]) * n + out->sub[1][b];
      // Later b have no better half-2 score: once the sum falls strictly below the k-th,
      // nothing further in this row can enter.
      if (size == k && s < out->score[k - 1]) break;
      kernels::InsertBest(s, slot, k, out->score.data(), out->slot.data(), &size);
    }
  }
  double total = 0;
  std::array<double, kFwpkmMaxTopK> e;
  for (int i = 0; i < k; ++i)
    total += (e[i] = std::exp(static_cast<double>(out->score[i]) - out->score[0]));
  for (int i = 0; i < k; ++i) out->weight[i] = static_cast<float>(e[i] / total);
}

}  // namespace

void FwpkmAddressOf(const FwpkmSubKeys& keys, const float* q, int k, float eps,
                    FwpkmScratch* scratch, FwpkmAddress* out) {
  FwpkmAddressBatch(keys, q, 1, k, eps, scratch, out, kernels::HostBackend());
}

void FwpkmAddressBatch(const FwpkmSubKeys& keys, const float* q, int64_t count, int k, float eps,
                       FwpkmScratch* scratch, FwpkmAddress* out, kernels::Backend& backend) {
  const int n = keys.n(), half = keys.half();
  scratch->sub_idx.resize(static_cast<size_t>(count) * 2 * k);
  scratch->sub_score.resize(static_cast<size_t>(count) * 2 * k);
  kernels::ProductKeyQuery query;
  query.count = count;
  query.half = half;
  query.n = n;
  query.k = k;
  query.eps = eps;
  query.q = q;
  query.ldq = 2 * int64_t{half};
  query.tables[0] = keys.table(0);
  query.tables[1] = keys.table(1);
  query.idx = scratch->sub_idx.data();
  query.score = scratch->sub_score.data();
  absl::Status status = backend.ProductKeyScores(query);
  if (!status.ok() && &backend != &kernels::HostBackend()) {
    // A device failure: the host answers instead (reads and chunk updates cannot fail).
    status = kernels::HostBackend().ProductKeyScores(query);
  }
  if (!status.ok()) {
    // The checks cannot fail on the parameters FwpkmParams admits, and the host's scoring
    // cannot fail otherwise: a failure here is a broken invariant.
    std::fprintf(stderr, "FwpkmAddressBatch: %s\n", status.ToString().c_str());
    std::abort();
  }
  for (int64_t t = 0; t < count; ++t) {
    for (int m = 0; m < 2; ++m) {
      const size_t at = static_cast<size_t>((t * 2 + m) * k);
      std::copy_n(scratch->sub_idx.data() + at, k, out[t].sub[m].data());
      std::copy_n(scratch->sub_score.data() + at, k, out[t].sub_score[m].data());
    }
    CombineHalves(n, k, out + t);
  }
}

float FwpkmGate(const FwpkmAddress& a, bool gated) {
  if (!gated || a.k == 1) return 1.0f;
  double sq = 0;
  for (int i = 0; i < a.k; ++i) sq += static_cast<double>(a.weight[i]) * a.weight[i];
  const double g = (a.k * sq - 1.0) / (a.k - 1.0);
  return static_cast<float>(std::clamp(g, 0.0, 1.0));
}

}  // namespace adaptd
