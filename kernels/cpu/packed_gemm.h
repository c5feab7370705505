// Products with a fixed weight matrix packed once: C (m×n) = A (m×k)·Wᵀ + beta·C, where W
// (n×k, row-major) is a dense layer's [out × in] weights, as the sentence_bert encoder applies
// them. BLAS repacks W on every call; for the few rows of one short text (m ≈ 10-40) that
// repacking costs twice the multiply itself. Packed here at construction into panels of 32
// columns of Wᵀ (16 with AVX2), k-major, the product streams each panel once per block of rows
// and keeps the block's tile of C in registers.
//
// Each element of C is one chain of fused multiply-adds over k in order, starting at beta·C
// (beta = 0: C is not read), whatever the block, thread or form: a row's result does not
// depend on the other rows of the call, and the AVX2 and AVX-512 forms give the same bits.
// Runs on x86-64 with AVX-512 or AVX2 + FMA; elsewhere Pack declines and the caller uses sgemm.
// Thread safety: immutable after Pack; Multiply is reentrant and runs on the calling thread
// (threads started per call cost more than they gain at the sizes where packing pays).
// Layout: row-major with leading dimensions, as backend.h.
#ifndef ADAPTD_KERNELS_CPU_PACKED_GEMM_H_
#define ADAPTD_KERNELS_CPU_PACKED_GEMM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/cpu/narrow_gemm.h"

namespace adaptd::kernels::cpu {

class PackedWeights {
 public:
  // Packs W (n×k, leading dimension ldw ≥ k) for `isa`, or returns nullopt when n < 1, k < 1,
  // ldw < k, or `isa` is kNone or not supported by this CPU.
  static std::optional<PackedWeights> Pack(const float* w, int64_t n, int64_t k, int64_t ldw,
                                           NarrowIsa isa = BestNarrowIsa());

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  NarrowIsa isa() const { return isa_; }
  // The packed bytes (n rounded up to the panel width, times k, times 4).
  int64_t bytes() const { return static_cast<int64_t>(panels_.size() * sizeof(float)); }

  // C (m×n) = A (m×k)·Wᵀ + beta·C on the calling thread; m ≥ 1, lda ≥ k, ldc ≥ n. Columns
  // past n are untouched.
  void Multiply(int64_t m, const float* a, int64_t lda, float beta, float* c, int64_t ldc) const;

  // Whether Multiply is expected to beat sgemm (which repacks W but may use every OpenBLAS
  // thread) for m rows: m ≤ 96 when OpenBLAS runs one thread, m ≤ 48 when it runs more. Measured
  // with the encoder's shapes (bench/RESULTS.md, "Packed weights"): on one thread the bare
  // products cross over near 200 rows, on two near 24-40; 48 is set by the whole encoder, where
  // switching between packed products and threaded sgemm costs more than the bare figures show.
  static bool Pays(int64_t m);

 private:
  PackedWeights(int64_t n, int64_t k, NarrowIsa isa) : n_(n), k_(k), isa_(isa) {}

  // Columns per panel: 32 (AVX-512) or 16 (AVX2).
  int width() const { return isa_ == NarrowIsa::kAvx512 ? 32 : 16; }

  int64_t n_, k_;
  NarrowIsa isa_;
  std::vector<float> panels_;  // [panel][k][width], zero past n
};

}  // namespace adaptd::kernels::cpu

#endif  // ADAPTD_KERNELS_CPU_PACKED_GEMM_H_
