// FwpkmValues: the value rows of an fwpkm store, allocated on first write. A slot never
// written has no row, costs nothing, and reads as zero (the paper draws values N(0, m^-1/2);
// zero keeps unwritten memory silent, so a readout over fresh slots is zero and the store's
// confidence, the weight on written rows, is meaningful).
//
// Thread safety: const methods may run concurrently; mutation needs exclusive access.
// Layout: rows live in blocks of kBlockRows rows × stride elements (stride ≥ width; it doubles
// when a label store's width outgrows it), float32 or bfloat16 (round to nearest even).
// Row ids are dense in allocation order; a hash map gives slot → row.
#ifndef ADAPTD_SERVER_STORES_FWPKM_VALUES_H_
#define ADAPTD_SERVER_STORES_FWPKM_VALUES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace adaptd {

class FwpkmValues {
 public:
  static constexpr int64_t kBlockRows = 1024;

  FwpkmValues(bool bfloat16, int64_t width);

  bool bfloat16() const { return bfloat16_; }
  int64_t width() const { return width_; }
  int64_t rows() const { return static_cast<int64_t>(slots_.size()); }
  uint32_t slot_of(int64_t row) const { return slots_[row]; }

  // Widens every row to `width` (≥ width()); new columns read zero.
  void Widen(int64_t width);
  // The row of `slot`, or -1 when it was never written.
  int64_t Find(uint32_t slot) const;
  // The row of `slot`, allocated (zero) if needed.
  int64_t Touch(uint32_t slot);
  // Hints that slots[0, count) will be read soon: their entries in the slot → row map (Find
  // then misses no cache line for them).
  void PrefetchSlots(const uint32_t* slots, int count) const;
  // Hints that the rows of slots[0, count) will be read soon (a Find for each; call it after
  // PrefetchSlots has had time to bring the map's lines in).
  void PrefetchRows(const uint32_t* slots, int count) const;

  // out[0, width) += w · row.
  void AddScaled(int64_t row, double w, double* out) const;
  // row += delta (width values).
  void Add(int64_t row, const double* delta);
  void Get(int64_t row, float* out) const;
  void Set(int64_t row, const float* in);

  uint64_t bytes() const;

 private:
  float* FloatRow(int64_t row) const;
  uint16_t* HalfRow(int64_t row) const;
  void AddBlock();

  const bool bfloat16_;
  int64_t width_ = 0;
  int64_t stride_ = 0;
  std::vector<std::unique_ptr<float[]>> float_blocks_;
  std::vector<std::unique_ptr<uint16_t[]>> half_blocks_;
  std::vector<uint32_t> slots_;  // row → slot
  absl::flat_hash_map<uint32_t, int64_t> row_of_;
};

// bfloat16 conversions (round to nearest even; NaN stays NaN).
uint16_t FwpkmToBfloat16(float x);
float FwpkmFromBfloat16(uint16_t h);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_VALUES_H_
