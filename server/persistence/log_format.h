// The frame of one write-ahead-log record, and the parser of a log segment.
//
// Frame (little-endian): uint32 magic "AWAL", uint32 CRC-32 (zlib) of the rest of the header,
// uint64 LSN, uint32 payload length, uint32 CRC-32 of the payload, uint16 key length, the key
// ("tenant/store"), then the payload (a serialized adapt.v1.WalRecord). The header has its own
// checksum so that a damaged payload can still be attributed to its store.
#ifndef ADAPTD_SERVER_PERSISTENCE_LOG_FORMAT_H_
#define ADAPTD_SERVER_PERSISTENCE_LOG_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace adaptd {

inline constexpr size_t kFrameFixedBytes = 4 + 4 + 8 + 4 + 4 + 2;
inline constexpr size_t kMaxFrameKeyBytes = 255;
inline constexpr uint32_t kMaxFramePayloadBytes = 1u << 31;

// Appends the frame of one record to `out`.
void AppendFrame(uint64_t lsn, std::string_view key, std::string_view payload, std::string* out);

struct LogFrame {
  uint64_t lsn = 0;
  std::string key;
  std::string_view payload;  // points into the parsed buffer
  bool payload_ok = true;    // false: the payload checksum does not match
  uint64_t offset = 0;
};

// A region no frame header could be read from, with readable frames after it.
struct LogDamage {
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

struct ParsedSegment {
  std::vector<LogFrame> frames;
  std::vector<LogDamage> damage;
  // Bytes at the end that hold no complete record (a write cut short); the valid prefix is
  // `valid_bytes` long. A last frame whose payload checksum fails counts as torn too.
  uint64_t valid_bytes = 0;
  bool torn_tail = false;
};

// Parses a whole segment. Never fails: what cannot be read is reported as damage or as a torn
// tail. The frames' payloads point into `data`.
ParsedSegment ParseSegment(std::string_view data);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_LOG_FORMAT_H_
