// FwPKM keys and addressing (docs/ALGORITHMS.md sections 3.1 and 3.2): the fixed seeded
// projection of encoder outputs to queries, the two sub-key codebooks, and product-key top-k
// with IDW scores s = −log(ε + ‖q^m − K^m_j‖²).
//
// The top-k slots equal a brute-force top-k over all N = n² slots under the scores s¹_i + s²_j,
// ties broken by the smaller slot id (slot = i·n + j); per half, ties go to the smaller sub-key.
// Thread safety: const methods may run concurrently; mutation needs exclusive access.
// Layout: a codebook is stored dimension-major, t[c·n + i] = coordinate c of sub-key i, so the
// distance loop runs over sub-keys in the inner (vectorised) loop. Queries are row-major.
#ifndef ADAPTD_SERVER_STORES_FWPKM_KEYS_H_
#define ADAPTD_SERVER_STORES_FWPKM_KEYS_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "server/stores/fwpkm_params.h"

namespace adaptd {

// SplitMix64: the same numbers on every platform and standard library, so a seed names the
// same projection and initial sub-keys everywhere (std:: distributions do not promise that).
class FwpkmRng {
 public:
  explicit FwpkmRng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();  // [0, 1)
  double Normal();   // N(0, 1), Box-Muller
 private:
  uint64_t state_;
};

// q = P·x / ‖P·x‖ with P (key_dim × dim) drawn N(0, 1) from the seed; x / ‖x‖ when dim equals
// key_dim. Queries are unit vectors because the IDW ε and the sub-key initialisation fix a scale;
// a zero input stays zero.
class FwpkmProjection {
 public:
  FwpkmProjection(uint64_t seed, int64_t dim, int64_t key_dim);
  int64_t dim() const { return dim_; }
  int64_t key_dim() const { return key_dim_; }
  void Apply(const float* x, float* q) const;
  uint64_t bytes() const { return matrix_.size() * sizeof(float); }

 private:
  int64_t dim_, key_dim_;
  std::vector<float> matrix_;  // key_dim × dim, empty for the identity
};

class FwpkmSubKeys {
 public:
  // Codebooks of n sub-keys of `half` coordinates each, drawn U(±1/√(2·half)) from the seed.
  FwpkmSubKeys(int n, int half, uint64_t seed);
  int n() const { return n_; }
  int half() const { return half_; }
  float at(int m, int i, int c) const { return t_[m][static_cast<size_t>(c) * n_ + i]; }
  float& at(int m, int i, int c) { return t_[m][static_cast<size_t>(c) * n_ + i]; }
  // Codebook m as a half × n row-major matrix (dimension-major, see Layout).
  const float* table(int m) const { return t_[m].data(); }
  // d2[i] = ‖q_half − K^m_i‖² for every sub-key i of half m.
  void Distances(int m, const float* q_half, float* d2) const;
  uint64_t bytes() const { return 2 * t_[0].size() * sizeof(float); }

 private:
  int n_, half_;
  std::array<std::vector<float>, 2> t_;
};

// One query's address: per half, the top-k sub-keys and their scores (best first); the top-k
// slots, their scores s¹+s² and softmax weights (best first).
struct FwpkmAddress {
  int k = 0;
  std::array<std::array<int32_t, kFwpkmMaxTopK>, 2> sub;
  std::array<std::array<float, kFwpkmMaxTopK>, 2> sub_score;
  std::array<uint32_t, kFwpkmMaxTopK> slot;
  std::array<float, kFwpkmMaxTopK> score;
  std::array<float, kFwpkmMaxTopK> weight;
};

// Scratch for FwpkmAddressOf and FwpkmAddressBatch, reused across calls by one thread.
struct FwpkmScratch {
  std::vector<int32_t> sub_idx;  // count × 2 × k: the backend's per-half selections
  std::vector<float> sub_score;
};

// Product-key top-k of the query q (key_dim = 2·half floats), on the CPU with the exact
// per-coordinate distance loop (FwpkmSubKeys::Distances' arithmetic); per half, ties go to the
// smaller sub-key.
void FwpkmAddressOf(const FwpkmSubKeys& keys, const float* q, int k, float eps,
                    FwpkmScratch* scratch, FwpkmAddress* out);

// Product-key top-k of `count` queries (rows of key_dim = 2·half floats). The per-half scoring
// and selection run as `backend`'s ProductKeyScores (which runs on the host what the backend
// does not support; should the backend fail, the host answers instead). On the CPU, out[t]
// equals FwpkmAddressOf of query t bit for bit (a batch scores blocks of queries at once, then
// recomputes with the exact arithmetic every sub-key near the selection threshold:
// kernels/cpu/product_keys.cc); a device's scores agree within logf's last place. Requires
// 1 ≤ k ≤ min(n, 64) and eps > 0 (as FwpkmParams admits).
void FwpkmAddressBatch(const FwpkmSubKeys& keys, const float* q, int64_t count, int k, float eps,
                       FwpkmScratch* scratch, FwpkmAddress* out, kernels::Backend& backend);

// The gate of an address (fwpkm_params.h): 1 when `gated` is false.
float FwpkmGate(const FwpkmAddress& a, bool gated);

inline float IdwScore(float d2, float eps) { return -std::log(eps + d2); }

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_KEYS_H_
