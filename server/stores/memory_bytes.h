// Heap bytes held by the containers stores keep besides their numeric state (label names and
// label maps), for StoreInfo.memory_bytes: a store counts what it holds, so that the sum over
// stores tracks the process's resident memory. Stateless; thread-safe.
#ifndef ADAPTD_SERVER_STORES_MEMORY_BYTES_H_
#define ADAPTD_SERVER_STORES_MEMORY_BYTES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace adaptd {

// The heap part of a string: nothing when it lives in the object (short-string optimization).
inline size_t StringHeapBytes(const std::string& s) {
  const char* data = s.data();
  const char* self = reinterpret_cast<const char*>(&s);
  const bool inline_buffer = data >= self && data < self + sizeof(std::string);
  return inline_buffer ? 0 : s.capacity() + 1;
}

inline size_t LabelNamesBytes(const std::vector<std::string>& names) {
  size_t bytes = names.capacity() * sizeof(std::string);
  for (const std::string& name : names) bytes += StringHeapBytes(name);
  return bytes;
}

// Slots (with their control byte) and the keys' heap parts.
template <typename Value>
size_t LabelIndexBytes(const absl::flat_hash_map<std::string, Value>& index) {
  using Slot = typename absl::flat_hash_map<std::string, Value>::value_type;
  size_t bytes = index.capacity() * (sizeof(Slot) + 1);
  for (const auto& [name, value] : index) bytes += StringHeapBytes(name);
  return bytes;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_MEMORY_BYTES_H_
