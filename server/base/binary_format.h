// Little-endian integers and CRC-32 (zlib's polynomial) for adaptd's on-disk formats: the
// snapshot file (server/stores/snapshot_file.cc) and the write-ahead log's frames
// (server/persistence/log_format.cc). Header-only; users link zlib. Pure; thread-safe.
#ifndef ADAPTD_SERVER_BASE_BINARY_FORMAT_H_
#define ADAPTD_SERVER_BASE_BINARY_FORMAT_H_

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace adaptd {

template <typename T>
void PutLittle(std::string* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

template <typename T>
T GetLittle(const char* p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return value;
}

// CRC-32 of `data` of any length (zlib takes at most 4 GiB per call).
inline uint32_t Crc32Of(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  while (left > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(left, size_t{1} << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_BINARY_FORMAT_H_
