// Fuzzes the snapshot parser: DecodeSnapshotFile / DecodeSnapshotState on the raw input
// (foreign, truncated and corrupt files), and the input made into well-formed files imported
// through Engine::Import, which rebuilds a store from whatever they hold: as the payload of a
// format-1 file, and as a format-2 file whose first two bytes give the header's length, the
// header's bytes follow, and the rest feeds the sections the header lists (each given its
// checksum, so the store's own checks are reached). Refusals are fine; crashes, sanitizer
// reports and hangs are not.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/stores/snapshot_file.h"
#include "tests/fuzz/engine_fuzz_env.h"
#include "zlib.h"

namespace {

void PutLe(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The 24-byte header of snapshot_file.h around `payload`.
std::string Wrap(uint32_t version, const std::string& payload) {
  std::string file = "ADAPTDSS";
  PutLe(version, 4, &file);
  PutLe(payload.size(), 8, &file);
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  PutLe(crc, 4, &file);
  return file + payload;
}

// A format-2 file from `input` (see the top of the file).
std::string WrapSections(const std::string& input) {
  if (input.size() < 2) return Wrap(2, input);
  const size_t length = std::min<size_t>(
      input.size() - 2, static_cast<unsigned char>(input[0]) |
                            (static_cast<size_t>(static_cast<unsigned char>(input[1])) << 8));
  const std::string header = input.substr(2, length);
  std::string rest = input.substr(2 + length);
  std::string file = Wrap(2, header);
  adapt::v1::StoreSnapshot parsed;
  if (!parsed.ParseFromString(header)) return file + rest;
  size_t at = 0;
  for (const adapt::v1::ArraySection& a : parsed.arrays()) {
    const size_t width = adaptd::ArrayElementBytes(a.type());
    const size_t bytes = std::min<uint64_t>(rest.size() - at, width == 0 ? 0 : a.count() * width);
    const std::string section = rest.substr(at, bytes);
    at += bytes;
    file += section;
    PutLe(crc32(0L, reinterpret_cast<const Bytef*>(section.data()),
                static_cast<uInt>(section.size())),
          4, &file);
  }
  return file + rest.substr(at);
}

void ImportAndDelete(const std::string& file) {
  auto& engine = *adaptd::fuzz::Env().engine;
  if (engine.Import("fuzz", "imported", file).ok()) {
    adapt::v1::DeleteStoreRequest del;
    del.set_tenant("fuzz");
    del.set_store("imported");
    (void)engine.DeleteStore(del);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)adaptd::DecodeSnapshotFile(input);
  ImportAndDelete(input);
  ImportAndDelete(Wrap(1, input));
  ImportAndDelete(WrapSections(input));
  return 0;
}
