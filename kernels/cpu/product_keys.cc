// CPU product-key scoring (backend.h ProductKeyQuery). A few queries are scored one by one
// with the exact per-coordinate distance loop. Larger batches pack each half's sub-keys in
// panels of 32 and compute approximate distances (‖q − K_i‖² = ‖q‖² + ‖K_i‖² − 2 q·K_i,
// vectorised) for tiles of queries; then every sub-key whose approximate d² lies within a
// rounding bound of the selection threshold is recomputed with the exact loop, and the selection
// runs on those exact values: the result is the one-by-one result bit for bit. With AVX-512 and
// at least 512 sub-keys, the approximate values are filtered as they are computed (a running
// upper bound on each row's k-th smallest), so only a few dozen per row are kept; otherwise
// each row's values are stored whole and the k-th smallest is found through group minima.
// Batches with enough work are split by query over OpenBLAS's thread count.
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <system_error>
#include <thread>
#include <vector>

#include "kernels/cpu/best_list.h"
#include "kernels/cpu/cpu_ops.h"

namespace adaptd::kernels::cpu {
namespace {

inline float IdwScore(float d2, float eps) { return -std::log(eps + d2); }

typedef float V16 __attribute__((vector_size(64)));
typedef float V16u __attribute__((vector_size(64), aligned(4)));
constexpr int kLanes = 16;

bool HasAvx512() {
  __builtin_cpu_init();  // this runs during static initialisation
  return __builtin_cpu_supports("avx512f");
}
const bool kAvx512 = HasAvx512();

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

// Inserts x into the ascending list top[0, *size) of at most k (dropping the largest when full).
inline void InsertSorted(float x, int k, float* top, int* size) {
  if (*size == k && !(x < top[k - 1])) return;
  int pos = *size < k ? (*size)++ : k - 1;
  while (pos > 0 && x < top[pos - 1]) {
    top[pos] = top[pos - 1];
    --pos;
  }
  top[pos] = x;
}

// The ascending list in the `live` lanes with x inserted (the last entry dropped); unchanged when
// x is not below the last entry.
__attribute__((target("avx512f"), always_inline)) inline __m512 InsertIntoList(__m512 list, float x,
                                                                               __mmask16 live,
                                                                               __m512i up) {
  const __m512 xv = _mm512_set1_ps(x);
  const __mmask16 gt = _mm512_cmp_ps_mask(list, xv, _CMP_GT_OQ) & live;
  const __mmask16 first = gt & static_cast<__mmask16>(~(gt << 1));
  list = _mm512_mask_permutexvar_ps(list, gt, up, list);
  return _mm512_mask_blend_ps(first, list, xv);
}

// KthSmallestScan's pass over v[from, n) once its list (k ≤ 16, no NaN) is full: the list in
// one vector; a block of 16 is compared with the list's last entry at once, and each value at or
// below it is inserted with a compare, a masked lane shift and a blend, without a branch on the
// value (a value not below the last entry leaves the list as it is).
__attribute__((target("avx512f"))) float ScanFullListAvx512(const float* v, int n, int from, int k,
                                                            const float* top) {
  const __m512i up = _mm512_set_epi32(14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0);
  const __mmask16 live = static_cast<__mmask16>((1u << k) - 1);
  const __m512i last_lane = _mm512_set1_epi32(k - 1);
  __m512 list = _mm512_mask_loadu_ps(_mm512_set1_ps(INFINITY), live, top);
  int i = from;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 last = _mm512_mask_permutexvar_ps(list, 0xFFFF, last_lane, list);
    unsigned m = _mm512_cmp_ps_mask(_mm512_loadu_ps(v + i), last, _CMP_LE_OQ);
    while (m != 0) {
      list = InsertIntoList(list, v[i + __builtin_ctz(m)], live, up);
      m &= m - 1;
    }
  }
  for (; i < n; ++i) list = InsertIntoList(list, v[i], live, up);
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, list);
  return lanes[k - 1];
}

// The k-th smallest of v[0, n) (k ≤ n) by insertion into a sorted list of k. Once the list is
// full, blocks of 16 with no value at or below its last entry are passed over with one vector
// compare (such values are not inserted either way).
float KthSmallestScan(const float* v, int n, int k) {
  std::array<float, kProductKeyMaxK> top;
  top[k - 1] = INFINITY;  // returned only when n < k
  int size = 0;
  int i = 0;
  bool nan = false;
  for (; i < n && size < k; ++i) {
    nan = nan || std::isnan(v[i]);
    InsertSorted(v[i], k, top.data(), &size);
  }
  if (i == n) return top[k - 1];
  if (kAvx512 && k <= kLanes && !nan) return ScanFullListAvx512(v, n, i, k, top.data());
  while (i < n) {
    const int next = NextBlockAtMost(v, n, i, top[k - 1]);
    const int end = next + kLanes <= n ? next + kLanes : n;
    for (int j = next; j < end; ++j) InsertSorted(v[j], k, top.data(), &size);
    i = end;
  }
  return top[k - 1];
}

// KthSmallestScan for values known to be finite (no NaN), k ≤ 16, with AVX-512: every value goes
// through the vector insertion, with no scalar start.
float KthSmallestFinite(const float* v, int n, int k) {
  if (!kAvx512 || k > kLanes || n < k) return KthSmallestScan(v, n, k);
  const std::array<float, kLanes> empty = {
      INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY,
      INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
  return ScanFullListAvx512(v, n, 0, k, empty.data());
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

// The k-th smallest of v[0, n) (k ≤ n); `buf` and `ids` hold n entries. For long inputs a
// bound from the group minima leaves only the values at or below it to rank: they are kept,
// ascending by index, in buf and ids (*kept of them), and *bound is set; otherwise *bound is −∞
// and nothing is kept.
float KthSmallest(const float* v, int n, int k, float* buf, int32_t* ids, int* kept, float* bound) {
  *kept = 0;
  *bound = -INFINITY;
  const int groups = n >= 4 * kLanes * kLanes ? GroupMins(v, n, buf) : 0;
  if (groups < 4 * k) return KthSmallestScan(v, n, k);
  const float limit = KthSmallestScan(buf, groups, k);
  int count = 0;
  int i = 0;
  while (i < n) {
    const int next = NextBlockAtMost(v, n, i, limit);
    const int end = next + kLanes <= n ? next + kLanes : n;
    for (int j = next; j < end; ++j) {
      buf[count] = v[j];
      ids[count] = j;
      count += v[j] <= limit ? 1 : 0;
    }
    i = end;
  }
  *kept = count;
  *bound = limit;
  return KthSmallestScan(buf, count, k);
}

// A tile of 4 query halves: rows q + (r0 + r)·stride for r < rb, the rows past rb repeating the
// last, and their ‖q‖².
struct QueryTile {
  const float* q[4];
  float qq[4];
};

QueryTile MakeTile(const float* q, int64_t stride, int r0, int rb, int half) {
  QueryTile tile;
  for (int r = 0; r < 4; ++r) {
    tile.q[r] = q + (r0 + std::min(r, rb - 1)) * stride;
    float sum = 0;
    for (int c = 0; c < half; ++c) sum += tile.q[r][c] * tile.q[r][c];
    tile.qq[r] = sum;
  }
  return tile;
}

// The sub-key table t (half × n, dimension-major) in panels of 32 sub-keys: panel p holds
// half rows of 32 consecutive floats, t[c·n + 32p + j] at packed[(p·half + c)·32 + j], the last
// panel padded with zeros. A column of t steps n floats per coordinate, and at n a multiple of
// 1,024 every step lands in one L1 set; a panel steps 128 bytes.
void PackPanels(const float* t, int n, int half, float* packed) {
  const int full = n / 32;
  for (int c = 0; c < half; ++c) {
    const float* src = t + static_cast<size_t>(c) * n;
    for (int p = 0; p < full; ++p) {
      float* dst = packed + (static_cast<size_t>(p) * half + c) * 32;
      for (int j = 0; j < 32; ++j) dst[j] = src[32 * p + j];
    }
    if (full * 32 < n) {
      float* dst = packed + (static_cast<size_t>(full) * half + c) * 32;
      for (int j = 0; j < 32; ++j) dst[j] = 32 * full + j < n ? src[32 * full + j] : 0.0f;
    }
  }
}

// Whether `packed` holds PackPanels(t, n, half) already, bit for bit (a read of both, no write:
// the panels stay shared with the cores that read them in the previous call).
bool PanelsMatch(const float* t, int n, int half, const float* packed) {
  const int full = n / 32;
  uint32_t diff = 0;
  for (int c = 0; c < half; ++c) {
    const float* src = t + static_cast<size_t>(c) * n;
    for (int p = 0; p < full; ++p) {
      const float* dst = packed + (static_cast<size_t>(p) * half + c) * 32;
      for (int j = 0; j < 32; ++j) {
        uint32_t a, b;
        std::memcpy(&a, src + 32 * p + j, sizeof a);
        std::memcpy(&b, dst + j, sizeof b);
        diff |= a ^ b;
      }
    }
    for (int i = 32 * full; i < n; ++i) {
      uint32_t a, b;
      std::memcpy(&a, src + i, sizeof a);
      std::memcpy(&b, packed + (static_cast<size_t>(full) * half + c) * 32 + (i - 32 * full),
                  sizeof b);
      diff |= a ^ b;
    }
  }
  return diff == 0;
}

// d[r·n + i] = ‖q_r‖² + ‖K_i‖² − 2·q_r·K_i (float, any rounding: an approximation of d²) for
// nb query halves q_r = q + r·stride, sub-keys in panels (PackPanels), norms knorm (n). Tiles
// of 4 queries × 16 sub-keys; a pass over 8 panels stays in L1 while every query of the block
// runs over it.
__attribute__((target_clones("avx2", "default"))) void ApproxDistances(const float* q,
                                                                       int64_t stride, int nb,
                                                                       const float* packed,
                                                                       const float* knorm, int n,
                                                                       int half, float* d) {
  constexpr int kRows = 4, kPanelsPerPass = 8;
  const int panels = (n + 31) / 32;
  for (int p0 = 0; p0 < panels; p0 += kPanelsPerPass) {
    const int p1 = std::min(panels, p0 + kPanelsPerPass);
    for (int r0 = 0; r0 < nb; r0 += kRows) {
      const int rb = std::min(kRows, nb - r0);
      const QueryTile tile = MakeTile(q, stride, r0, rb, half);
      const float *q0 = tile.q[0], *q1 = tile.q[1], *q2 = tile.q[2], *q3 = tile.q[3];
      const float* qq = tile.qq;
      for (int p = p0; p < p1; ++p) {
        for (int h = 0; h < 32; h += kLanes) {
          const int i = 32 * p + h;
          if (i >= n) break;
          V16 a0 = {}, a1 = {}, a2 = {}, a3 = {};
          const float* panel = packed + static_cast<size_t>(p) * half * 32 + h;
          for (int c = 0; c < half; ++c) {
            const V16 kv = *reinterpret_cast<const V16u*>(panel + c * 32);
            a0 += q0[c] * kv;
            a1 += q1[c] * kv;
            a2 += q2[c] * kv;
            a3 += q3[c] * kv;
          }
          const int width = std::min(kLanes, n - i);
          float kn[kLanes] = {};
          std::copy_n(knorm + i, width, kn);
          const V16 knv = *reinterpret_cast<const V16u*>(kn);
          const V16 acc[kRows] = {a0, a1, a2, a3};
          for (int rr = 0; rr < rb; ++rr) {
            const V16 v = qq[rr] + knv - 2.0f * acc[rr];
            float* out = d + static_cast<size_t>(r0 + rr) * n + i;
            if (width == kLanes) {
              *reinterpret_cast<V16u*>(out) = v;
            } else {
              for (int j = 0; j < width; ++j) out[j] = v[j];
            }
          }
        }
      }
    }
  }
}

// The dot products of 4 query halves q[r] with the 32 sub-keys of a panel (PackPanels): lo[r]
// for sub-keys 0–15, hi[r] for 16–31. Eight independent accumulators fed by two sub-key loads
// and four broadcasts per coordinate.
struct PanelDots {
  __m512 lo[4], hi[4];
};

__attribute__((target("avx512f"), always_inline)) inline PanelDots DotPanel(const float* const q[4],
                                                                            const float* panel,
                                                                            int half) {
  PanelDots r;
#pragma GCC unroll 4
  for (int rr = 0; rr < 4; ++rr) r.lo[rr] = r.hi[rr] = _mm512_setzero_ps();
  for (int c = 0; c < half; ++c) {
    const __m512 k0 = _mm512_loadu_ps(panel + c * 32);
    const __m512 k1 = _mm512_loadu_ps(panel + c * 32 + 16);
#pragma GCC unroll 4
    for (int rr = 0; rr < 4; ++rr) {
      const __m512 t = _mm512_set1_ps(q[rr][c]);
      r.lo[rr] = _mm512_fmadd_ps(t, k0, r.lo[rr]);
      r.hi[rr] = _mm512_fmadd_ps(t, k1, r.hi[rr]);
    }
  }
  return r;
}

// Panel p's lanes: the masks of its real sub-keys (m0: 0–15, m1: 16–31; the last panel may be
// short) and their norms.
struct PanelLanes {
  __mmask16 m0, m1;
  __m512 kn0, kn1;
};

__attribute__((target("avx512f"), always_inline)) inline PanelLanes LanesOf(const float* knorm,
                                                                            int n, int p) {
  const int i = 32 * p;
  const int width = std::min(32, n - i);
  PanelLanes l;
  l.m0 = width >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << width) - 1);
  l.m1 =
      width >= 32 ? 0xFFFF : (width <= 16 ? 0 : static_cast<__mmask16>((1u << (width - 16)) - 1));
  l.kn0 = _mm512_maskz_loadu_ps(l.m0, knorm + i);
  l.kn1 = _mm512_maskz_loadu_ps(l.m1, knorm + i + 16);
  return l;
}

// ApproxDistances with AVX-512 over the packed table: tiles of 4 queries × 32 sub-keys; a pass
// over 8 panels (16 KB at half = 16) stays in L1 while every query of the block runs over it.
__attribute__((target("avx512f"))) void ApproxDistancesAvx512(const float* q, int64_t stride,
                                                              int nb, const float* packed,
                                                              const float* knorm, int n, int half,
                                                              float* d) {
  constexpr int kRows = 4, kPanelsPerPass = 8;
  const int panels = (n + 31) / 32;
  const __m512 two = _mm512_set1_ps(2.0f);
  for (int p0 = 0; p0 < panels; p0 += kPanelsPerPass) {
    const int p1 = std::min(panels, p0 + kPanelsPerPass);
    for (int r0 = 0; r0 < nb; r0 += kRows) {
      const int rb = std::min(kRows, nb - r0);
      const QueryTile tile = MakeTile(q, stride, r0, rb, half);
      for (int p = p0; p < p1; ++p) {
        const PanelDots dots = DotPanel(tile.q, packed + static_cast<size_t>(p) * half * 32, half);
        const PanelLanes lanes = LanesOf(knorm, n, p);
        for (int rr = 0; rr < rb; ++rr) {
          const __m512 base = _mm512_set1_ps(tile.qq[rr]);
          float* out = d + static_cast<size_t>(r0 + rr) * n + 32 * p;
          _mm512_mask_storeu_ps(out, lanes.m0,
                                _mm512_fnmadd_ps(two, dots.lo[rr], _mm512_add_ps(base, lanes.kn0)));
          _mm512_mask_storeu_ps(out + 16, lanes.m1,
                                _mm512_fnmadd_ps(two, dots.hi[rr], _mm512_add_ps(base, lanes.kn1)));
        }
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

// Scratch for one range of queries (block × n approximate distances and the candidates).
struct Scratch {
  std::vector<float> d2, cand_d2;
  std::vector<int32_t> cand, list_ids;
};

// What every range of a call reads: per half, the sub-key norms, their maximum and the table
// in panels.
struct Prepared {
  std::array<std::vector<float>, 2> knorm, packed;
  std::array<float, 2> kmax{};
  int n = 0, half = 0;  // the shape the panels were packed for
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

namespace {

constexpr float kUnit = 0x1.0p-24f;  // float's unit roundoff

// |approximate − exact| ≤ 4(half + 3)·u·(‖q‖² + ‖K_i‖²) for any summation order, FMA or not
// (the exact values are float too); twice that, and a doubled relative margin, make the
// candidates a superset of every sub-key within SelectHalf's margin.
inline float CandidateDelta(int half, float qq, float kmax) {
  return 8.0f * (half + 4) * kUnit * (qq + kmax);
}

// The largest approximate d² a candidate may have when the k-th smallest approximate d² is
// `kth`. Non-decreasing in kth (each float operation is), so a limit taken from any upper bound
// on the k-th smallest admits every candidate.
inline float CandidateLimit(float kth, float eps, float delta) {
  return (eps + kth + delta) * (1.0f + 2e-5f) - eps + 2.0f * delta;
}

// Exact d² of the candidates cand[0, nc) (ascending), with Distances' arithmetic (coordinates in
// order from 0) read from the panels (the same values as the table), then the row's selection.
void RankCandidates(const float* qh, const float* packed, int half, const int32_t* cand, int nc,
                    int k, float eps, bool finite, float* cand_d2, int32_t* idx, float* score) {
  for (int j = 0; j < nc; ++j) {
    const float* col = packed + static_cast<size_t>(cand[j] / 32) * half * 32 + cand[j] % 32;
    float s = 0.0f;
    for (int c = 0; c < half; ++c) {
      const float diff = qh[c] - col[c * 32];
      s += diff * diff;
    }
    cand_d2[j] = s;
  }
  const float kth = finite ? KthSmallestFinite(cand_d2, nc, k) : KthSmallestScan(cand_d2, nc, k);
  RankWithinMargin(cand, cand_d2, nc, kth, k, eps, idx, score);
}

// Keeps, in order, the entries of (vals, ids)[0, *count) at or below `limit`.
void KeepAtMost(float limit, float* vals, int32_t* ids, int* count) {
  int kept = 0;
  for (int j = 0; j < *count; ++j) {
    vals[kept] = vals[j];
    ids[kept] = ids[j];
    kept += vals[j] <= limit ? 1 : 0;
  }
  *count = kept;
}

// One row of FilteredDistancesAvx512: its list, the list's tightening threshold, its limit,
// ‖q‖² and CandidateDelta.
struct FilterRow {
  float* vals;
  int32_t* ids;
  int count, cap;
  float limit, qq, delta;
};

// Appends to the row's list, compressed, the approximate d² of a panel (dot products lo, hi;
// lanes and norms `lanes` of the panel's sub-keys id0, id1) at or below its limit; whether
// the list then passes its threshold. Compresses in registers and stores whole vectors (the
// lists have 32 entries of slack), whether or not any lane passed: a compress straight to
// memory is microcoded and slow on some CPUs.
__attribute__((target("avx512f"), always_inline)) inline bool AppendAtMost(
    FilterRow& row, __m512 lo, __m512 hi, const PanelLanes& lanes, __m512i id0, __m512i id1) {
  const __m512 base = _mm512_set1_ps(row.qq);
  const __m512 l = _mm512_set1_ps(row.limit);
  const __m512 two = _mm512_set1_ps(2.0f);
  const __m512 d0 = _mm512_fnmadd_ps(two, lo, _mm512_add_ps(base, lanes.kn0));
  const __m512 d1 = _mm512_fnmadd_ps(two, hi, _mm512_add_ps(base, lanes.kn1));
  const __mmask16 s0 = _mm512_mask_cmp_ps_mask(lanes.m0, d0, l, _CMP_LE_OQ);
  const __mmask16 s1 = _mm512_mask_cmp_ps_mask(lanes.m1, d1, l, _CMP_LE_OQ);
  // No branch on whether anything passed (it rarely does, at no predictable panel).
  int c = row.count;
  _mm512_storeu_ps(row.vals + c, _mm512_maskz_compress_ps(s0, d0));
  _mm512_storeu_si512(row.ids + c, _mm512_maskz_compress_epi32(s0, id0));
  c += __builtin_popcount(s0);
  _mm512_storeu_ps(row.vals + c, _mm512_maskz_compress_ps(s1, d1));
  _mm512_storeu_si512(row.ids + c, _mm512_maskz_compress_epi32(s1, id1));
  row.count = c + __builtin_popcount(s1);
  return row.count > row.cap;
}

// The approximate d² of 4 query halves (rows past the caller's count repeat its last) against
// every sub-key, filtered as they are computed. Each row first stores its first 256 values
// whole; the k-th smallest of their 16 lane-wise minima bounds the row's k-th smallest from
// above (k groups hold a value at or below it), and the row keeps only values at or below
// CandidateLimit of its bound, tightened to CandidateLimit of the k-th smallest kept whenever the
// list passes `cap` entries. Each row's list (vals, ids; capacity n + 32) ends holding,
// ascending by id, every sub-key at or below CandidateLimit of that row's true approximate k-th
// smallest, and those k smallest. Needs n ≥ 512, k ≤ 8 and finite approximate values
// (‖q‖² + max ‖K‖² well inside float's range).
__attribute__((target("avx512f"))) void FilteredDistancesAvx512(
    const float* const q[4], const float* packed, const float* knorm, int n, int half, int k,
    float eps, const float* delta, float* const vals[4], int32_t* const ids[4], int* count) {
  constexpr int kRows = 4, kFirstPanels = 8;
  const int panels = (n + 31) / 32;
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  FilterRow rows[kRows];
  for (int rr = 0; rr < kRows; ++rr) {
    float sum = 0;
    for (int c = 0; c < half; ++c) sum += q[rr][c] * q[rr][c];
    rows[rr] = FilterRow{vals[rr], ids[rr], 0, 64, INFINITY, sum, delta[rr]};
  }
  const auto keep = [&](FilterRow& row, float kth) {
    row.limit = std::min(row.limit, CandidateLimit(kth, eps, row.delta));
    KeepAtMost(row.limit, row.vals, row.ids, &row.count);
    row.cap = std::max(row.cap, 2 * row.count);  // many ties: tighten less often
  };
  for (int p = 0; p < panels; ++p) {
    const PanelDots dots = DotPanel(q, packed + static_cast<size_t>(p) * half * 32, half);
    const PanelLanes lanes = LanesOf(knorm, n, p);
    const int i = 32 * p;
    const __m512i id0 = _mm512_add_epi32(iota, _mm512_set1_epi32(i));
    const __m512i id1 = _mm512_add_epi32(iota, _mm512_set1_epi32(i + 16));
    bool over = false;
#pragma GCC unroll 4
    for (int rr = 0; rr < kRows; ++rr) {
      over = AppendAtMost(rows[rr], dots.lo[rr], dots.hi[rr], lanes, id0, id1) || over;
    }
    if (p >= kFirstPanels && over) {
      for (FilterRow& row : rows) {
        if (row.count > row.cap) keep(row, KthSmallestFinite(row.vals, row.count, k));
      }
    }
    if (p == kFirstPanels - 1) {
      for (FilterRow& row : rows) {
        __m512 mins = _mm512_loadu_ps(row.vals);
        for (int v = 1; v < 2 * kFirstPanels; ++v) {
          mins = _mm512_mask_min_ps(mins, 0xFFFF, mins, _mm512_loadu_ps(row.vals + 16 * v));
        }
        alignas(64) float lanes[kLanes];
        _mm512_store_ps(lanes, mins);
        keep(row, KthSmallestFinite(lanes, kLanes, k));
      }
    }
  }
  for (int rr = 0; rr < kRows; ++rr) count[rr] = rows[rr].count;
}

// Queries [begin, end) of p, both halves.
void ScoreRange(const ProductKeyQuery& p, const Prepared& prep, bool avx512, int64_t begin,
                int64_t end, Scratch& scratch) {
  const int n = p.n, half = p.half, k = p.k;
  const float eps = p.eps;
  // Queries per block: the block's approximate distances (block × n floats) stay near 256 KB,
  // in L2 beside the panels.
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 16) / n, 4, 256);
  // With AVX-512 and n ≥ 512 rows are filtered as their distances are computed
  // (FilteredDistancesAvx512), where the values are finite.
  const bool filtered = avx512 && n >= 512 && k <= 8;
  const size_t row = filtered ? n + 32 : n;  // a filtered list has 32 entries of slack
  scratch.d2.resize((filtered ? 4 : block) * row);
  scratch.list_ids.resize(filtered ? 4 * row : 0);
  scratch.cand.resize(n);
  scratch.cand_d2.resize(n);
  float* g = scratch.d2.data();
  int32_t* cand = scratch.cand.data();
  float* cand_d2 = scratch.cand_d2.data();
  for (int m = 0; m < 2; ++m) {
    const float* knorm = prep.knorm[m].data();
    const float kmax = prep.kmax[m];
    const float* packed = prep.packed[m].data();
    int64_t b0 = begin;
    while (b0 < end) {
      if (filtered) {
        const int rb = static_cast<int>(std::min<int64_t>(4, end - b0));
        const float* q[4];
        float delta[4];
        bool finite = true;
        for (int rr = 0; rr < 4; ++rr) {
          q[rr] = p.q + (b0 + std::min(rr, rb - 1)) * p.ldq + m * half;
          float qq = 0;
          for (int c = 0; c < half; ++c) qq += q[rr][c] * q[rr][c];
          delta[rr] = CandidateDelta(half, qq, kmax);
          // |2 q·K| ≤ ‖q‖² + ‖K‖²: far from float's limit, no value overflows.
          finite = finite && qq + kmax < 0x1.0p120f;
        }
        if (finite) {
          float* vals[4];
          int32_t* ids[4];
          int count[4];
          for (int rr = 0; rr < 4; ++rr) {
            vals[rr] = g + rr * row;
            ids[rr] = scratch.list_ids.data() + rr * row;
          }
          FilteredDistancesAvx512(q, packed, knorm, n, half, k, eps, delta, vals, ids, count);
          for (int rr = 0; rr < rb; ++rr) {
            const float approx_kth = KthSmallestFinite(vals[rr], count[rr], k);
            const float limit = CandidateLimit(approx_kth, eps, delta[rr]);
            int nc = 0;
            for (int j = 0; j < count[rr]; ++j) {
              cand[nc] = ids[rr][j];
              nc += vals[rr][j] <= limit ? 1 : 0;
            }
            const int64_t at = ((b0 + rr) * 2 + m) * k;
            RankCandidates(q[rr], packed, half, cand, nc, k, eps, true, cand_d2, p.idx + at,
                           p.score + at);
          }
          b0 += rb;
          continue;
        }
      }
      // Unfiltered: a block of rows (four when filtering was declined for them) in full.
      const int nb = static_cast<int>(std::min(filtered ? 4 : block, end - b0));
      const float* qb = p.q + b0 * p.ldq + m * half;
      if (avx512) {
        ApproxDistancesAvx512(qb, p.ldq, nb, packed, knorm, n, half, g);
      } else {
        ApproxDistances(qb, p.ldq, nb, packed, knorm, n, half, g);
      }
      for (int r = 0; r < nb; ++r) {
        const float* qh = qb + r * p.ldq;
        float qq = 0;
        for (int c = 0; c < half; ++c) qq += qh[c] * qh[c];
        const float* d = g + static_cast<size_t>(r) * n;
        const float delta = CandidateDelta(half, qq, kmax);
        int kept = 0;
        float bound = 0;
        const float approx_kth = KthSmallest(d, n, k, cand_d2, cand, &kept, &bound);
        const float limit = CandidateLimit(approx_kth, eps, delta);
        int nc = 0;
        if (limit <= bound) {
          // Every candidate is among the values KthSmallest kept (at or below its bound).
          for (int j = 0; j < kept; ++j) {
            cand[nc] = cand[j];
            nc += cand_d2[j] <= limit ? 1 : 0;
          }
        } else {
          int i = 0;
          while (i < n) {
            const int next = NextBlockAtMost(d, n, i, limit);
            const int end_j = next + kLanes <= n ? next + kLanes : n;
            for (int j = next; j < end_j; ++j) {
              cand[nc] = j;
              nc += d[j] <= limit ? 1 : 0;
            }
            i = end_j;
          }
        }
        const int64_t at = ((b0 + r) * 2 + m) * k;
        RankCandidates(qh, packed, half, cand, nc, k, eps, false, cand_d2, p.idx + at,
                       p.score + at);
      }
      b0 += nb;
    }
  }
}

}  // namespace

void ProductKeyScores(const ProductKeyQuery& p) {
  ProductKeyScoresWith(p, true, openblas_get_num_threads());
}

void ProductKeyScoresWith(const ProductKeyQuery& p, bool avx512, int threads) {
  avx512 = avx512 && kAvx512;
  // Scratch of the calling thread, one per range, reused across calls.
  thread_local std::vector<Scratch> scratch(1);
  thread_local Prepared prep;
  const int n = p.n, half = p.half;
  // A few queries do not pay for the sub-key norms (one query's worth of work per half).
  if (p.count < 4) {
    ScoreOneByOne(p, scratch[0]);
    return;
  }
  for (int m = 0; m < 2; ++m) {
    const float* t = p.tables[m];
    const size_t packed_size = static_cast<size_t>((n + 31) / 32) * 32 * half;
    // Reads between writes ask about the same sub-keys call after call: when the panels of the
    // previous call still match, they and the norms are kept (rewriting them would take every
    // line of them from the cores that read them last).
    if (prep.n == n && prep.half == half && prep.packed[m].size() == packed_size &&
        PanelsMatch(t, n, half, prep.packed[m].data())) {
      continue;
    }
    std::vector<float>& knorm = prep.knorm[m];
    knorm.assign(n, 0.0f);
    for (int c = 0; c < half; ++c) {
      const float* row = t + static_cast<size_t>(c) * n;
      for (int i = 0; i < n; ++i) knorm[i] += row[i] * row[i];
    }
    prep.kmax[m] = *std::max_element(knorm.begin(), knorm.end());
    prep.packed[m].resize(packed_size);
    PackPanels(t, n, half, prep.packed[m].data());
  }
  prep.n = n;
  prep.half = half;
  // Ranges of queries over OpenBLAS's thread count, a thread for every 2^21 multiply-adds of
  // distances at least; each range's results are the one-by-one results, so the split does
  // not change them.
  const int64_t work = p.count * n * int64_t{half} * 2;
  const int parts =
      static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(threads, work >> 21), 1, p.count / 4));
  if (static_cast<int>(scratch.size()) < parts) scratch.resize(parts);
  std::vector<std::thread> helpers;
  std::vector<int> here;  // ranges no thread could be started for: run by the caller
  helpers.reserve(parts - 1);
  for (int t = 1; t < parts; ++t) {
    try {
      helpers.emplace_back(ScoreRange, std::cref(p), std::cref(prep), avx512, p.count * t / parts,
                           p.count * (t + 1) / parts, std::ref(scratch[t]));
    } catch (const std::system_error&) {
      here.push_back(t);
    }
  }
  ScoreRange(p, prep, avx512, 0, p.count / parts, scratch[0]);
  for (int t : here) {
    ScoreRange(p, prep, avx512, p.count * t / parts, p.count * (t + 1) / parts, scratch[t]);
  }
  for (std::thread& t : helpers) t.join();
}

}  // namespace adaptd::kernels::cpu
