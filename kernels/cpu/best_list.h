// A short best-first list of (score, id) pairs kept by insertion: the order every top-k of the
// project uses (higher score first, ties to the smaller id). Shared by the CPU product-key
// scoring (product_keys.cc) and FwPKM's slot selection (server/stores/fwpkm_keys.cc).
// Header-only; pure.
#ifndef ADAPTD_KERNELS_CPU_BEST_LIST_H_
#define ADAPTD_KERNELS_CPU_BEST_LIST_H_

#include <cstdint>

namespace adaptd::kernels {

// a before b: higher score, then smaller id.
inline bool Better(float sa, int64_t a, float sb, int64_t b) {
  return sa > sb || (sa == sb && a < b);
}

// Inserts (s, id) into the sorted list (`*size` entries, capacity k) if it belongs there.
template <typename Id>
inline void InsertBest(float s, Id id, int k, float* scores, Id* ids, int* size) {
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

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_CPU_BEST_LIST_H_
