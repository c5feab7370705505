// Chunk-parallel Falcon ingest: the same updates as FalconRecurrent (falcon_rules.h), applied
// a chunk of C pairs at a time with matrix products on the backend. Within a chunk, with
// G = cumsum(log γ) and S₀ the state at the chunk start:
//   residual variants (1, 2, 3): the residuals of every window pair against the state before
//   its step solve a unit lower-triangular system (the gated delta rule's
//   T = (I + tril(diag(β)KKᵀ ⊙ Γ, −1))⁻¹, built from the Gram XXᵀ and the decays e^{G_t−G_s},
//   solved by forward substitution); B = 1 for 1 and 2, the rank-B block for 3;
//   target variants (1A, 2A, 3A): the masked form, predictions (XXᵀ ⊙ M)V + Diag(e^G) X S₀;
//   then S ← e^{G_C} S₀ + Xᵀ Z with Z the decayed, η-weighted residuals (or targets).
// Variants 2 and 2A solve one system per group of columns that share β. Every decay factor
// is e^{difference} ≤ 1 (never the renormalised form that divides by cumulative decays).
// Each chunk runs as kernels::Backend::FalconChunkStep (the host arithmetic is in
// kernels/cpu/falcon_chunk.cc); this file schedules the chunks and derives their rates.
//
// Thread safety: pure functions over caller-owned data; the backend must be thread-safe if
// shared. Layout: as falcon_rules.h.
#ifndef ADAPTD_SERVER_STORES_FALCON_CHUNKED_H_
#define ADAPTD_SERVER_STORES_FALCON_CHUNKED_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/backend.h"
#include "server/stores/falcon_params.h"
#include "server/stores/falcon_rules.h"

namespace adaptd {

// Applies `rows` pairs, `chunk` (≥ 1) at a time. `predictions` (rows × columns, may be null)
// receives S_{t−1}ᵀx_t for every pair. On a backend error `memory` may be partly updated: the
// caller works on a copy.
template <typename T>
absl::Status FalconChunked(const FalconConfig& config, int64_t chunk, const T* keys,
                           const T* targets, int64_t rows, FalconMemoryT<T>* memory,
                           typename FalconMemoryT<T>::Value* predictions,
                           kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_CHUNKED_H_
