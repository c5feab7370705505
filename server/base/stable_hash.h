// Hashes that are the same in every run, on every machine and in every build (no std::hash, no
// absl::Hash, both seeded per process): for what is stored or compared between processes,
// such as encoder fingerprints and the owner of a store in a cluster. Header-only; pure.
#ifndef ADAPTD_SERVER_BASE_STABLE_HASH_H_
#define ADAPTD_SERVER_BASE_STABLE_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace adaptd {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ull;

// 64-bit FNV-1a, fed incrementally.
class Fnv1a64 {
 public:
  void Add(absl::string_view bytes) {
    for (unsigned char b : bytes) state_ = (state_ ^ b) * kFnv1a64Prime;
  }
  void AddByte(unsigned char b) { state_ = (state_ ^ b) * kFnv1a64Prime; }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = kFnv1a64Offset;
};

// MurmurHash3's 64-bit finalizer (fmix64): spreads every input bit over every output bit.
inline uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_STABLE_HASH_H_
