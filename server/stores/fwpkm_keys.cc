#include "server/stores/fwpkm_keys.h"

#include <algorithm>
#include <cmath>

#include <immintrin.h>


namespace adaptd {
namespace {

// a before b: higher score, then smaller id.
inline bool Better(float sa, int64_t a, float sb, int64_t b) {
  return sa > sb || (sa == sb && a < b);
}

// Inserts (s, id) into the sorted list (`*size` entries, capacity k) if it belongs there.
template <typename Id>
inline void Insert(float s, Id id, int k, float* scores, Id* ids, int* size) {
  if (*size == k && !Better(s, id, scores[k - 1], ids[k - 1])) return;
  int pos = *size < k ? (*size)++ : k - 1;
  while (pos > 0 && Better(s, id, scores[pos - 1], ids[pos - 1])) {
    scores[pos] = scores[pos - 1];
    ids[pos] = ids[pos - 1];
    --pos;
  }
  scores[pos] = s;
  ids[pos] = id;
}

}  // namespace

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

typedef float V16 __attribute__((vector_size(64)));
typedef float V16u __attribute__((vector_size(64), aligned(4)));
constexpr int kLanes = 16;

// The first block start b ≥ from (stepping by 16, b + 16 ≤ n) whose block holds a value
// ≤ limit; the first start with b + 16 > n when none does. One vector compare per block.
__attribute__((target("avx512f"))) int NextBlockAtMostAvx512(const float* v, int n, int from,
                                                              float limit) {
  const __m512 l = _mm512_set1_ps(limit);
  int b = from;
  for (; b + kLanes <= n; b += kLanes) {
    if (_mm512_cmp_ps_mask(_mm512_loadu_ps(v + b), l, _CMP_LE_OQ) != 0) return b;
  }
  return b;
}

__attribute__((target("avx2"))) int NextBlockAtMostAvx2(const float* v, int n, int from,
                                                         float limit) {
  const __m256 l = _mm256_set1_ps(limit);
  int b = from;
  for (; b + kLanes <= n; b += kLanes) {
    const __m256 lo = _mm256_cmp_ps(_mm256_loadu_ps(v + b), l, _CMP_LE_OQ);
    const __m256 hi = _mm256_cmp_ps(_mm256_loadu_ps(v + b + 8), l, _CMP_LE_OQ);
    if (_mm256_movemask_ps(_mm256_or_ps(lo, hi)) != 0) return b;
  }
  return b;
}

int NextBlockAtMostSse(const float* v, int n, int from, float limit) {
  const __m128 l = _mm_set1_ps(limit);
  int b = from;
  for (; b + kLanes <= n; b += kLanes) {
    __m128 any = _mm_cmple_ps(_mm_loadu_ps(v + b), l);
    any = _mm_or_ps(any, _mm_cmple_ps(_mm_loadu_ps(v + b + 4), l));
    any = _mm_or_ps(any, _mm_cmple_ps(_mm_loadu_ps(v + b + 8), l));
    any = _mm_or_ps(any, _mm_cmple_ps(_mm_loadu_ps(v + b + 12), l));
    if (_mm_movemask_ps(any) != 0) return b;
  }
  return b;
}

using NextBlockFn = int (*)(const float*, int, int, float);
NextBlockFn PickNextBlock() {
  __builtin_cpu_init();  // this runs during static initialisation
  return __builtin_cpu_supports("avx512f") ? NextBlockAtMostAvx512
         : __builtin_cpu_supports("avx2")  ? NextBlockAtMostAvx2
                                           : NextBlockAtMostSse;
}
const NextBlockFn NextBlockAtMost = PickNextBlock();

// The k-th smallest of v[0, n) (k ≤ n) by insertion into a sorted list of k.
float KthSmallestScan(const float* v, int n, int k) {
  std::array<float, kFwpkmMaxTopK> top;
  top[k - 1] = INFINITY;  // returned only when n < k
  int size = 0;
  for (int i = 0; i < n; ++i) {
    const float x = v[i];
    if (size == k && !(x < top[k - 1])) continue;
    int pos = size < k ? size++ : k - 1;
    while (pos > 0 && x < top[pos - 1]) {
      top[pos] = top[pos - 1];
      --pos;
    }
    top[pos] = x;
  }
  return top[k - 1];
}

// Lane-wise minima over segments of 16 blocks of 16: mins[s·16 + l] = min of v[(16s + r)·16 + l],
// r < 16, for the whole segments of v[0, n); returns how many were written. The groups are
// disjoint, so the k-th smallest minimum bounds the k-th smallest value from above.
__attribute__((target_clones("avx512f", "avx2", "default")))
int GroupMins(const float* v, int n, float* mins) {
  constexpr int kSegment = kLanes * kLanes;
  int written = 0;
  for (int b = 0; b + kSegment <= n; b += kSegment) {
    V16 m = *reinterpret_cast<const V16u*>(v + b);
    for (int r = 1; r < kLanes; ++r) {
      const V16 x = *reinterpret_cast<const V16u*>(v + b + r * kLanes);
      m = x < m ? x : m;
    }
    *reinterpret_cast<V16u*>(mins + written) = m;
    written += kLanes;
  }
  return written;
}

// The k-th smallest of v[0, n) (k ≤ n); `buf` holds n floats. For long inputs a bound from
// the group minima leaves only the values at or below it to rank.
float KthSmallest(const float* v, int n, int k, float* buf) {
  const int groups = n >= 4 * kLanes * kLanes ? GroupMins(v, n, buf) : 0;
  if (groups < 4 * k) return KthSmallestScan(v, n, k);
  const float bound = KthSmallestScan(buf, groups, k);
  int count = 0;
  int i = 0;
  while (i < n) {
    const int next = NextBlockAtMost(v, n, i, bound);
    const int end = next + kLanes <= n ? next + kLanes : n;
    for (int j = next; j < end; ++j) {
      buf[count] = v[j];
      count += v[j] <= bound ? 1 : 0;
    }
    i = end;
  }
  return KthSmallestScan(buf, count, k);
}

// d[r·n + i] = ‖q_r‖² + ‖K_i‖² − 2·q_r·K_i (float, any rounding: an approximation of d²) for
// nb query halves q_r = q + r·stride, sub-keys t (half × n), norms knorm (n).
__attribute__((target_clones("avx512f", "avx2", "default")))
void ApproxDistances(const float* q, int64_t stride, int nb, const float* t, const float* knorm,
                     int n, int half, float* d) {
  const int nv = n / kLanes * kLanes;
  for (int r0 = 0; r0 < nb; r0 += 4) {
    const int rb = std::min(4, nb - r0);
    const float* q0 = q + r0 * stride;
    const float* q1 = q + (r0 + std::min(1, rb - 1)) * stride;
    const float* q2 = q + (r0 + std::min(2, rb - 1)) * stride;
    const float* q3 = q + (r0 + std::min(3, rb - 1)) * stride;
    float qq[4] = {0, 0, 0, 0};
    for (int c = 0; c < half; ++c) {
      qq[0] += q0[c] * q0[c];
      qq[1] += q1[c] * q1[c];
      qq[2] += q2[c] * q2[c];
      qq[3] += q3[c] * q3[c];
    }
    for (int i = 0; i < nv; i += kLanes) {
      V16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
      for (int c = 0; c < half; ++c) {
        const V16 kv = *reinterpret_cast<const V16u*>(t + static_cast<size_t>(c) * n + i);
        a0 += q0[c] * kv;
        a1 += q1[c] * kv;
        a2 += q2[c] * kv;
        a3 += q3[c] * kv;
      }
      const V16 kn = *reinterpret_cast<const V16u*>(knorm + i);
      const V16 acc[4] = {a0, a1, a2, a3};
      for (int rr = 0; rr < rb; ++rr) {
        *reinterpret_cast<V16u*>(d + static_cast<size_t>(r0 + rr) * n + i) =
            qq[rr] + kn - 2.0f * acc[rr];
      }
    }
    for (int rr = 0; rr < rb; ++rr) {
      const float* qr = q + (r0 + rr) * stride;
      for (int i = nv; i < n; ++i) {
        float dot = 0;
        for (int c = 0; c < half; ++c) dot += qr[c] * t[static_cast<size_t>(c) * n + i];
        d[static_cast<size_t>(r0 + rr) * n + i] = qq[rr] + knorm[i] - 2.0f * dot;
      }
    }
  }
}

// Ranks by (IDW score, id) every entry whose d² lies within the relative margin of `kth` (the
// k-th smallest d² over all n sub-keys): −log(ε + d²) is non-increasing in d², but rounding may
// give distinct d² one score. `ids` ascending; it must hold every id within the margin.
void RankWithinMargin(const int32_t* ids, const float* d2, int count, float kth, int k, float eps,
                      int32_t* idx, float* score) {
  const float bound = (eps + kth) * (1.0f + 1e-5f);
  int size = 0;
  for (int c = 0; c < count; ++c) {
    if (eps + d2[c] > bound) continue;
    Insert(IdwScore(d2[c], eps), ids[c], k, score, idx, &size);
  }
}

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
      Insert(s, slot, k, out->score.data(), out->slot.data(), &size);
    }
  }
  double total = 0;
  std::array<double, kFwpkmMaxTopK> e;
  for (int i = 0; i < k; ++i)
    total += (e[i] = std::exp(static_cast<double>(out->score[i]) - out->score[0]));
  for (int i = 0; i < k; ++i) out->weight[i] = static_cast<float>(e[i] / total);
}

}  // namespace

void FwpkmSelectHalf(const float* d2, int n, int k, float eps, int32_t* idx, float* score) {
  const float kth = KthSmallestScan(d2, n, k);
  const float bound = (eps + kth) * (1.0f + 1e-5f);
  int size = 0;
  for (int i = 0; i < n; ++i) {
    if (eps + d2[i] > bound) continue;
    Insert(IdwScore(d2[i], eps), i, k, score, idx, &size);
  }
}

void FwpkmAddressOf(const FwpkmSubKeys& keys, const float* q, int k, float eps,
                    FwpkmScratch* scratch, FwpkmAddress* out) {
  const int n = keys.n(), half = keys.half();
  scratch->d2.resize(n);
  for (int m = 0; m < 2; ++m) {
    keys.Distances(m, q + m * half, scratch->d2.data());
    FwpkmSelectHalf(scratch->d2.data(), n, k, eps, out->sub[m].data(), out->sub_score[m].data());
  }
  CombineHalves(n, k, out);
}

void FwpkmAddressBatch(const FwpkmSubKeys& keys, const float* q, int64_t count, int k, float eps,
                       FwpkmScratch* scratch, FwpkmAddress* out) {
  const int n = keys.n(), half = keys.half();
  const int64_t key_dim = 2 * int64_t{half};
  // A few queries do not pay for the sub-key norms (one query's worth of work per half).
  if (count < 4) {
    for (int64_t t = 0; t < count; ++t) FwpkmAddressOf(keys, q + t * key_dim, k, eps, scratch,
                                                       out + t);
    return;
  }
  // Queries per block: the block's approximate distances (block × n floats) stay near 1 MB.
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 18) / n, 4, 256);
  scratch->d2.resize(static_cast<size_t>(block) * n);
  scratch->knorm.resize(n);
  scratch->cand.resize(n);
  scratch->cand_d2.resize(n);
  float* g = scratch->d2.data();
  float* knorm = scratch->knorm.data();
  int32_t* cand = scratch->cand.data();
  float* cand_d2 = scratch->cand_d2.data();
  constexpr float kUnit = 0x1.0p-24f;  // float's unit roundoff
  for (int m = 0; m < 2; ++m) {
    const float* t = keys.table(m);
    std::fill(knorm, knorm + n, 0.0f);
    for (int c = 0; c < half; ++c) {
      const float* row = t + static_cast<size_t>(c) * n;
      for (int i = 0; i < n; ++i) knorm[i] += row[i] * row[i];
    }
    const float kmax = *std::max_element(knorm, knorm + n);
    for (int64_t b0 = 0; b0 < count; b0 += block) {
      const int nb = static_cast<int>(std::min(block, count - b0));
      const float* qb = q + b0 * key_dim + m * half;
      ApproxDistances(qb, key_dim, nb, t, knorm, n, half, g);
      for (int r = 0; r < nb; ++r) {
        const float* qh = qb + r * key_dim;
        FwpkmAddress& a = out[b0 + r];
        float qq = 0;
        for (int c = 0; c < half; ++c) qq += qh[c] * qh[c];
        const float* d = g + static_cast<size_t>(r) * n;
        // |approximate − exact| ≤ 4(half + 3)·u·(‖q‖² + ‖K_i‖²) for any summation order, FMA
        // or not (the exact values are float too); twice that, and a doubled relative margin,
        // make the candidates a superset of every sub-key within FwpkmSelectHalf's margin.
        const float delta = 8.0f * (half + 4) * kUnit * (qq + kmax);
        const float approx_kth = KthSmallest(d, n, k, cand_d2);
        const float limit = (eps + approx_kth + delta) * (1.0f + 2e-5f) - eps + 2.0f * delta;
        int nc = 0;
        int i = 0;
        while (i < n) {
          const int next = NextBlockAtMost(d, n, i, limit);
          const int end = next + kLanes <= n ? next + kLanes : n;
          for (int j = next; j < end; ++j) {
            cand[nc] = j;
            nc += d[j] <= limit ? 1 : 0;
          }
          i = end;
        }
        // Exact d², with Distances' arithmetic (coordinates in order from 0).
        for (int j = 0; j < nc; ++j) {
          const float* col = t + cand[j];
          float s = 0.0f;
          for (int c = 0; c < half; ++c) {
            const float diff = qh[c] - col[static_cast<size_t>(c) * n];
            s += diff * diff;
          }
          cand_d2[j] = s;
        }
        const float kth = KthSmallestScan(cand_d2, nc, k);
        RankWithinMargin(cand, cand_d2, nc, kth, k, eps, a.sub[m].data(), a.sub_score[m].data());
      }
    }
  }
  for (int64_t t = 0; t < count; ++t) CombineHalves(n, k, out + t);
}

float FwpkmGate(const FwpkmAddress& a, bool gated) {
  if (!gated || a.k == 1) return 1.0f;
  double sq = 0;
  for (int i = 0; i < a.k; ++i) sq += static_cast<double>(a.weight[i]) * a.weight[i];
  const double g = (a.k * sq - 1.0) / (a.k - 1.0);
  return static_cast<float>(std::clamp(g, 0.0, 1.0));
}

}  // namespace adaptd
