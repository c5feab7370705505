#include "server/stores/fwpkm_values.h"

#include <algorithm>
#include <cstring>

namespace adaptd {

uint16_t FwpkmToBfloat16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float FwpkmFromBfloat16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

FwpkmValues::FwpkmValues(bool bfloat16, int64_t width)
    : bfloat16_(bfloat16), width_(width), stride_(std::max<int64_t>(width, 1)) {}

float* FwpkmValues::FloatRow(int64_t row) const {
  return float_blocks_[row / kBlockRows].get() + (row % kBlockRows) * stride_;
}

uint16_t* FwpkmValues::HalfRow(int64_t row) const {
  return half_blocks_[row / kBlockRows].get() + (row % kBlockRows) * stride_;
}

void FwpkmValues::AddBlock() {
  const size_t n = static_cast<size_t>(kBlockRows * stride_);
  if (bfloat16_) {
    half_blocks_.push_back(std::make_unique<uint16_t[]>(n));  // zero-filled: bf16 +0
  } else {
    float_blocks_.push_back(std::make_unique<float[]>(n));
  }
}

void FwpkmValues::Widen(int64_t width) {
  if (width <= width_) return;
  if (width > stride_) {
    int64_t stride = stride_;
    while (stride < width) stride *= 2;
    const size_t n = static_cast<size_t>(kBlockRows * stride);
    for (size_t b = 0; b < std::max(float_blocks_.size(), half_blocks_.size()); ++b) {
      if (bfloat16_) {
        auto fresh = std::make_unique<uint16_t[]>(n);
        for (int64_t r = 0; r < kBlockRows; ++r) {
          std::copy_n(half_blocks_[b].get() + r * stride_, width_, fresh.get() + r * stride);
        }
        half_blocks_[b] = std::move(fresh);
      } else {
        auto fresh = std::make_unique<float[]>(n);
        for (int64_t r = 0; r < kBlockRows; ++r) {
          std::copy_n(float_blocks_[b].get() + r * stride_, width_, fresh.get() + r * stride);
        }
        float_blocks_[b] = std::move(fresh);
      }
    }
    stride_ = stride;
  }
  width_ = width;
}

int64_t FwpkmValues::Find(uint32_t slot) const {
  auto it = row_of_.find(slot);
  return it == row_of_.end() ? -1 : it->second;
}

void FwpkmValues::PrefetchSlots(const uint32_t* slots, int count) const {
  for (int i = 0; i < count; ++i) row_of_.prefetch(slots[i]);
}

void FwpkmValues::PrefetchRows(const uint32_t* slots, int count) const {
  for (int i = 0; i < count; ++i) {
    const int64_t row = Find(slots[i]);
    if (row < 0) continue;
    const char* at = bfloat16_ ? reinterpret_cast<const char*>(HalfRow(row))
                               : reinterpret_cast<const char*>(FloatRow(row));
    const int64_t bytes = width_ * (bfloat16_ ? 2 : 4);
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(at + b);
  }
}

int64_t FwpkmValues::Touch(uint32_t slot) {
  auto [it, inserted] = row_of_.try_emplace(slot, rows());
  if (!inserted) return it->second;
  if (rows() % kBlockRows == 0) AddBlock();
  slots_.push_back(slot);
  return it->second;
}

void FwpkmValues::AddScaled(int64_t row, double w, double* out) const {
  if (bfloat16_) {
    const uint16_t* v = HalfRow(row);
    for (int64_t c = 0; c < width_; ++c) out[c] += w * FwpkmFromBfloat16(v[c]);
  } else {
    const float* v = FloatRow(row);
    for (int64_t c = 0; c < width_; ++c) out[c] += w * v[c];
  }
}

void FwpkmValues::Add(int64_t row, const double* delta) {
  if (bfloat16_) {
    uint16_t* v = HalfRow(row);
    for (int64_t c = 0; c < width_; ++c) {
      v[c] = FwpkmToBfloat16(static_cast<float>(FwpkmFromBfloat16(v[c]) + delta[c]));
    }
  } else {
    float* v = FloatRow(row);
    for (int64_t c = 0; c < width_; ++c) v[c] = static_cast<float>(v[c] + delta[c]);
  }
}

void FwpkmValues::Get(int64_t row, float* out) const {
  if (bfloat16_) {
    const uint16_t* v = HalfRow(row);
    for (int64_t c = 0; c < width_; ++c) out[c] = FwpkmFromBfloat16(v[c]);
  } else {
    std::copy_n(FloatRow(row), width_, out);
  }
}

void FwpkmValues::Set(int64_t row, const float* in) {
  if (bfloat16_) {
    uint16_t* v = HalfRow(row);
    for (int64_t c = 0; c < width_; ++c) v[c] = FwpkmToBfloat16(in[c]);
  } else {
    std::copy_n(in, width_, FloatRow(row));
  }
}

uint64_t FwpkmValues::bytes() const {
  const uint64_t element = bfloat16_ ? sizeof(uint16_t) : sizeof(float);
  const uint64_t blocks = float_blocks_.size() + half_blocks_.size();
  return blocks * kBlockRows * stride_ * element + slots_.capacity() * sizeof(uint32_t) +
         row_of_.capacity() * (sizeof(uint32_t) + sizeof(int64_t) + 1);
}

}  // namespace adaptd
