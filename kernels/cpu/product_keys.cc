// CPU product-key scoring (backend.h ProductKeyQuery). A few queries are scored one by one
// with the exact per-coordinate distance loop; larger batches score a block of queries per
// half against every sub-key at once (‖q − K_i‖² = ‖q‖² + ‖K_i‖² − 2 q·K_i, vectorised), then
// recompute with the exact loop every sub-key whose approximate d² lies within a rounding bound
// of the selection threshold, and select on those exact values: the result is the one-by-one
// result bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "kernels/cpu/best_list.h"
#include "kernels/cpu/cpu_ops.h"

namespace adaptd::kernels::cpu {
namespace {

inline float IdwScore(float d2, float eps) { return -std::log(eps + d2); }

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
  std::array<float, kProductKeyMaxK> top;
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
__attribute__((target_clones("avx512f", "avx2", "default"))) int GroupMins(const float* v, int n,
                                                                           float* mins) {
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
__attribute__((target_clones("avx512f", "avx2", "default"))) void ApproxDistances(
    const float* q, int64_t stride, int nb, const float* t, const float* knorm, int n, int half,
    float* d) {
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
    InsertBest(IdwScore(d2[c], eps), ids[c], k, score, idx, &size);
  }
}

// d2[i] = ‖q_half − K_i‖² for every sub-key i of the dimension-major table t (half × n).
void Distances(const float* t, int n, int half, const float* q_half, float* d2) {
  std::fill(d2, d2 + n, 0.0f);
  for (int c = 0; c < half; ++c) {
    const float qc = q_half[c];
    const float* row = t + static_cast<size_t>(c) * n;
    for (int i = 0; i < n; ++i) {
      const float diff = qc - row[i];
      d2[i] += diff * diff;
    }
  }
}

// Scratch reused across calls by one thread (block × n approximate distances and the rest).
struct Scratch {
  std::vector<float> d2, knorm, cand_d2;
  std::vector<int32_t> cand;
};

void ScoreOneByOne(const ProductKeyQuery& p, Scratch& s) {
  s.d2.resize(p.n);
  for (int64_t t = 0; t < p.count; ++t) {
    for (int m = 0; m < 2; ++m) {
      Distances(p.tables[m], p.n, p.half, p.q + t * p.ldq + m * p.half, s.d2.data());
      const int64_t at = (t * 2 + m) * p.k;
      SelectHalf(s.d2.data(), p.n, p.k, p.eps, p.idx + at, p.score + at);
    }
  }
}

}  // namespace

void SelectHalf(const float* d2, int n, int k, float eps, int32_t* idx, float* score) {
  const float kth = KthSmallestScan(d2, n, k);
  const float bound = (eps + kth) * (1.0f + 1e-5f);
  int size = 0;
  for (int i = 0; i < n; ++i) {
    if (eps + d2[i] > bound) continue;
    InsertBest(IdwScore(d2[i], eps), static_cast<int32_t>(i), k, score, idx, &size);
  }
}

void ProductKeyScores(const ProductKeyQuery& p) {
  thread_local Scratch scratch;
  const int n = p.n, half = p.half, k = p.k;
  const float eps = p.eps;
  // A few queries do not pay for the sub-key norms (one query's worth of work per half).
  if (p.count < 4) {
    ScoreOneByOne(p, scratch);
    return;
  }
  // Queries per block: the block's approximate distances (block × n floats) stay near 1 MB.
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 18) / n, 4, 256);
  scratch.d2.resize(static_cast<size_t>(block) * n);
  scratch.knorm.resize(n);
  scratch.cand.resize(n);
  scratch.cand_d2.resize(n);
  float* g = scratch.d2.data();
  float* knorm = scratch.knorm.data();
  int32_t* cand = scratch.cand.data();
  float* cand_d2 = scratch.cand_d2.data();
  constexpr float kUnit = 0x1.0p-24f;  // float's unit roundoff
  for (int m = 0; m < 2; ++m) {
    const float* t = p.tables[m];
    std::fill(knorm, knorm + n, 0.0f);
    for (int c = 0; c < half; ++c) {
      const float* row = t + static_cast<size_t>(c) * n;
      for (int i = 0; i < n; ++i) knorm[i] += row[i] * row[i];
    }
    const float kmax = *std::max_element(knorm, knorm + n);
    for (int64_t b0 = 0; b0 < p.count; b0 += block) {
      const int nb = static_cast<int>(std::min(block, p.count - b0));
      const float* qb = p.q + b0 * p.ldq + m * half;
      ApproxDistances(qb, p.ldq, nb, t, knorm, n, half, g);
      for (int r = 0; r < nb; ++r) {
        const float* qh = qb + r * p.ldq;
        float qq = 0;
        for (int c = 0; c < half; ++c) qq += qh[c] * qh[c];
        const float* d = g + static_cast<size_t>(r) * n;
        // |approximate − exact| ≤ 4(half + 3)·u·(‖q‖² + ‖K_i‖²) for any summation order, FMA
        // or not (the exact values are float too); twice that, and a doubled relative margin,
        // make the candidates a superset of every sub-key within SelectHalf's margin.
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
        const int64_t at = ((b0 + r) * 2 + m) * k;
        RankWithinMargin(cand, cand_d2, nc, kth, k, eps, p.idx + at, p.score + at);
      }
    }
  }
}

}  // namespace adaptd::kernels::cpu
