// Fuzzes the write-ahead log's segment parser (server/persistence/log_format.h): a segment of
// arbitrary bytes parses without crashing, the parts it reports stay inside the input, and
// every frame whose payload checksum holds is decoded as a WalRecord, as recovery does.
// Re-framing the frames it found and parsing again finds the same frames.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapt/v1/wal.pb.h"
#include "server/persistence/log_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const adaptd::ParsedSegment parsed = adaptd::ParseSegment(input);
  if (parsed.valid_bytes > size) __builtin_trap();
  std::string reframed;
  size_t good = 0;
  for (const adaptd::LogFrame& frame : parsed.frames) {
    if (frame.offset > size || frame.payload.data() < input.data() ||
        frame.payload.data() + frame.payload.size() > input.data() + size) {
      __builtin_trap();
    }
    if (!frame.payload_ok) continue;
    adapt::v1::WalRecord record;
    (void)record.ParseFromArray(frame.payload.data(), static_cast<int>(frame.payload.size()));
    adaptd::AppendFrame(frame.lsn, frame.key, frame.payload, &reframed);
    ++good;
  }
  const adaptd::ParsedSegment again = adaptd::ParseSegment(reframed);
  if (again.frames.size() != good || again.torn_tail || !again.damage.empty()) __builtin_trap();
  return 0;
}
