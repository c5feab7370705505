#include "server/persistence/log_format.h"

#include <algorithm>
#include <cstring>

#include "server/base/binary_format.h"

namespace adaptd {
namespace {

constexpr uint32_t kFrameMagic = 0x4c415741;  // "AWAL"

enum class HeaderCheck { kOk, kIncomplete, kBad };

// Checks the frame header at `pos`; on kOk fills `frame` (not the payload) and `total`.
HeaderCheck CheckHeader(std::string_view data, size_t pos, LogFrame* frame, size_t* total) {
  const size_t left = data.size() - pos;
  if (left < kFrameFixedBytes) return HeaderCheck::kIncomplete;
  const char* p = data.data() + pos;
  if (GetLittle<uint32_t>(p) != kFrameMagic) return HeaderCheck::kBad;
  const uint16_t key_bytes = GetLittle<uint16_t>(p + 24);
  if (key_bytes > kMaxFrameKeyBytes) return HeaderCheck::kBad;
  if (left < kFrameFixedBytes + key_bytes) return HeaderCheck::kIncomplete;
  const std::string_view covered(p + 8, kFrameFixedBytes - 8 + key_bytes);
  if (Crc32Of(covered) != GetLittle<uint32_t>(p + 4)) return HeaderCheck::kBad;
  frame->lsn = GetLittle<uint64_t>(p + 8);
  frame->key.assign(p + kFrameFixedBytes, key_bytes);
  frame->offset = pos;
  const uint32_t length = GetLittle<uint32_t>(p + 16);
  if (length > kMaxFramePayloadBytes) return HeaderCheck::kBad;
  *total = kFrameFixedBytes + key_bytes + length;
  return HeaderCheck::kOk;
}

}  // namespace

void AppendFrame(uint64_t lsn, std::string_view key, std::string_view payload, std::string* out) {
  const size_t start = out->size();
  PutLittle<uint32_t>(out, kFrameMagic);
  PutLittle<uint32_t>(out, 0);  // header CRC, filled below
  PutLittle<uint64_t>(out, lsn);
  PutLittle<uint32_t>(out, static_cast<uint32_t>(payload.size()));
  PutLittle<uint32_t>(out, Crc32Of(payload));
  PutLittle<uint16_t>(out, static_cast<uint16_t>(key.size()));
  out->append(key.data(), key.size());
  const uint32_t header_crc =
      Crc32Of(std::string_view(out->data() + start + 8, out->size() - start - 8));
  for (size_t i = 0; i < 4; ++i) (*out)[start + 4 + i] = static_cast<char>(header_crc >> (8 * i));
  out->append(payload.data(), payload.size());
}

ParsedSegment ParseSegment(std::string_view data) {
  ParsedSegment parsed;
  size_t pos = 0;
  while (pos < data.size()) {
    LogFrame frame;
    size_t total = 0;
    const HeaderCheck check = CheckHeader(data, pos, &frame, &total);
    if (check == HeaderCheck::kOk && pos + total <= data.size()) {
      const size_t header = kFrameFixedBytes + frame.key.size();
      frame.payload = data.substr(pos + header, total - header);
      frame.payload_ok = Crc32Of(frame.payload) == GetLittle<uint32_t>(data.data() + pos + 20);
      if (!frame.payload_ok && pos + total == data.size()) break;  // a torn last write
      parsed.frames.push_back(std::move(frame));
      pos += total;
      parsed.valid_bytes = pos;
      continue;
    }
    // No readable frame here: a torn tail unless a readable frame follows somewhere.
    size_t next = pos + 1;
    for (; next + kFrameFixedBytes <= data.size(); ++next) {
      LogFrame probe;
      size_t probe_total = 0;
      if (CheckHeader(data, next, &probe, &probe_total) == HeaderCheck::kOk &&
          next + probe_total <= data.size()) {
        break;
      }
    }
    if (next + kFrameFixedBytes > data.size()) break;
    parsed.damage.push_back({pos, next - pos});
    pos = next;
  }
  parsed.torn_tail = parsed.valid_bytes < data.size();
  return parsed;
}

}  // namespace adaptd
