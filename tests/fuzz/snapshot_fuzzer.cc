// Fuzzes the snapshot parser: DecodeSnapshotFile on the raw input (foreign, truncated and
// corrupt files), and the input as the payload of a well-formed file (valid header and
// checksum) imported through Engine::Import, which rebuilds a store from whatever the payload
// holds. Refusals are fine; crashes, sanitizer reports and hangs are not.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/core/snapshot_file.h"
#include "tests/fuzz/engine_fuzz_env.h"
#include "zlib.h"

namespace {

void PutLe(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The header of snapshot_file.h around `payload`.
std::string Wrap(const std::string& payload) {
  std::string file = "ADAPTDSS";
  PutLe(adaptd::kSnapshotFormatVersion, 4, &file);
  PutLe(payload.size(), 8, &file);
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  PutLe(crc, 4, &file);
  return file + payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)adaptd::DecodeSnapshotFile(input);
  auto& engine = *adaptd::fuzz::Env().engine;
  if (engine.Import("fuzz", "imported", Wrap(input)).ok()) {
    adapt::v1::DeleteStoreRequest del;
    del.set_tenant("fuzz");
    del.set_store("imported");
    (void)engine.DeleteStore(del);
  }
  return 0;
}
