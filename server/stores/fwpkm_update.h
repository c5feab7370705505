// The FwPKM chunk update (docs/ALGORITHMS.md section 3.4): every item of a chunk is read with
// the state the previous chunk left; then the sparse value update, then the addressing update
// of the sub-keys. Pure functions over FwpkmSubKeys and FwpkmValues; the caller holds the store's
// write lock.
//
// Value step. The loss is L = Σ_t g_t/(2·S_t)·‖y_t − v̂_t‖² with S_t = Σ_i s'²_{t,i}: the
// paper's Σ_t ½ g_t‖y_t − v̂_t‖² with each item's term divided by S_t, a constant of the
// address (it does not depend on V). The row gradient Σ_t (g_t·s'_{t,i}/S_t)(v̂_t − y_t) is
// divided by the row's read count in the chunk and V_i ← V_i − η·∇. With one writer and η = 1
// the next read returns the target exactly (the "memory rewrite"); the plain gradient would
// move the readout only S_t ∈ [1/k, 1] of the way.
// Addressing step. L_addr = −H(p̄¹) − H(p̄²) over the chunk, the selections held fixed;
// K^m ← K^m − lr·∇L_addr on the selected sub-keys.
// Layout: queries items × key_dim, targets items × width, gradients rows × width (row-major).
#ifndef ADAPTD_SERVER_STORES_FWPKM_UPDATE_H_
#define ADAPTD_SERVER_STORES_FWPKM_UPDATE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kernels/backend.h"
#include "server/stores/fwpkm_keys.h"
#include "server/stores/fwpkm_values.h"

namespace adaptd {

struct FwpkmChunkParams {
  int k = 8;
  float eps = 1e-3f;
  double value_lr = 1.0;
  double addressing_lr = 1.0;
  bool gated = false;
};

// A chunk of queued items: each item's query and its target, a label column (label stores)
// or a row of `width` floats.
struct FwpkmChunkView {
  int64_t items = 0;
  int64_t key_dim = 0;
  const float* queries = nullptr;
  const int32_t* labels = nullptr;
  const float* targets = nullptr;
};

// out[0, width) = v̂ = Σ_i s'_i V_i.
void FwpkmReadout(const FwpkmValues& values, const FwpkmAddress& a, double* out);
// Before reading addresses[t] of addresses[0, count) in order: prefetches the slot map's entries
// of a later address and the value rows of a nearer one, so a large store's reads overlap their
// cache misses.
void FwpkmPrefetchAhead(const FwpkmValues& values, const FwpkmAddress* addresses, int64_t count,
                        int64_t t);

// Accumulates the value gradient over a chunk, one item at a time.
class FwpkmValueGradient {
 public:
  explicit FwpkmValueGradient(int64_t width) : width_(width) {}
  // Item with address `a`, gate g and error v̂ − y (`width` values).
  void Add(const FwpkmAddress& a, float gate, const double* error);
  int64_t rows() const { return static_cast<int64_t>(slots_.size()); }
  uint32_t slot(int64_t r) const { return slots_[r]; }
  int32_t reads(int64_t r) const { return reads_[r]; }
  const double* grad(int64_t r) const { return grad_.data() + r * width_; }

 private:
  int64_t width_;
  std::vector<uint32_t> slots_;
  std::vector<int32_t> reads_;
  std::vector<double> grad_;
  absl::flat_hash_map<uint32_t, int64_t> index_;
};

// L_addr and its gradient with respect to the selected sub-keys (rows ids[m][r], `half`
// doubles each), recomputed in float64 from the sub-keys with the addresses' selections.
struct FwpkmKeyGradient {
  double loss = 0;
  std::array<std::vector<int32_t>, 2> ids;
  std::array<std::vector<double>, 2> grad;
};
FwpkmKeyGradient FwpkmAddressingGradient(const FwpkmSubKeys& keys, const float* queries,
                                         const std::vector<FwpkmAddress>& addresses, float eps);

// Adds each item's per-half softmax over its selected sub-keys into usage[m] (n each).
void FwpkmAddUsage(const std::vector<FwpkmAddress>& addresses, int n,
                   std::array<std::vector<double>, 2>* usage);

// Applies one chunk: reads, value update, addressing update. `values` must already be as wide
// as the targets (labels: every label column present).
// The chunk's addressing runs on `backend` (FwpkmAddressBatch).
void FwpkmApplyChunk(const FwpkmChunkParams& params, const FwpkmChunkView& chunk,
                     FwpkmSubKeys* keys, FwpkmValues* values,
                     std::array<std::vector<double>, 2>* usage, kernels::Backend& backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_UPDATE_H_
