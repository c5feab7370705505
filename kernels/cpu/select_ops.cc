// CPU top-k and row scatter-add.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace adaptd::kernels::cpu {
namespace {

// The rank of (value, index) as one unsigned integer, larger = better: the value's order (NaN
// lowest, −0 equal to +0) in the high half, the complemented index in the low half (so ties go
// to the lower index). Selection then compares integers only.
inline uint64_t RankKey(float v, int32_t i) {
  const float z = v + 0.0f;  // −0 → +0
  uint32_t bits;
  std::memcpy(&bits, &z, sizeof bits);
  // Sign-magnitude to an unsigned order (negatives reversed, below positives), without branches;
  // never 0 for a number, so NaN takes 0.
  const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u;
  const uint32_t order = v == v ? bits ^ flip : 0u;
  return (uint64_t{order} << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(i));
}

inline int32_t IndexOf(uint64_t key) {
  return static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(key));
}

// Up to this k a sorted list with insertion wins over a heap.
constexpr int kInsertionMaxK = 32;

void TopKRow(const float* x, int64_t n, int k, int32_t* idx, float* val,
             std::vector<uint64_t>& best) {
  best.clear();
  if (k <= kInsertionMaxK) {
    best.resize(k);
    int size = 0;
    uint64_t worst = 0;
    for (int32_t i = 0; i < n; ++i) {
      const uint64_t key = RankKey(x[i], i);
      if (size == k && key <= worst) continue;
      int pos = size < k ? size++ : k - 1;
      while (pos > 0 && key > best[pos - 1]) {
        best[pos] = best[pos - 1];
        --pos;
      }
      best[pos] = key;
      worst = best[size - 1];
    }
  } else {
    // A min-heap of the k best so far: its top is the worst kept.
    const auto worse = std::greater<uint64_t>();
    for (int32_t i = 0; i < k; ++i) best.push_back(RankKey(x[i], i));
    std::make_heap(best.begin(), best.end(), worse);
    for (int32_t i = k; i < n; ++i) {
      const uint64_t key = RankKey(x[i], i);
      if (key <= best.front()) continue;
      std::pop_heap(best.begin(), best.end(), worse);
      best.back() = key;
      std::push_heap(best.begin(), best.end(), worse);
    }
    std::sort(best.begin(), best.end(), worse);
  }
  for (int r = 0; r < k; ++r) {
    idx[r] = IndexOf(best[r]);
    val[r] = x[idx[r]];
  }
}

}  // namespace

void TopK(int64_t rows, int64_t n, const float* x, int64_t ldx, int k, int32_t* idx, float* val) {
  if (k == 0) return;
  std::vector<uint64_t> best;
  best.reserve(k);
  for (int64_t r = 0; r < rows; ++r) {
    TopKRow(x + r * ldx, n, k, idx + r * k, val + r * k, best);
  }
}

void RowScatterAdd(int64_t rows, int64_t n, const int64_t* dst_rows, float alpha, const float* src,
                   int64_t lds, float* dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * lds;
    float* d = dst + dst_rows[r] * ldd;
    for (int64_t j = 0; j < n; ++j) d[j] += alpha * s[j];
  }
}

}  // namespace adaptd::kernels::cpu
