#include "server/core/snapshot_file.h"

#include <zlib.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

constexpr char kMagic[8] = {'A', 'D', 'A', 'P', 'T', 'D', 'S', 'S'};

template <typename T>
void PutLittle(std::string* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T>
T GetLittle(const char* p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    value |= static_cast<T>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return value;
}

uint32_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  while (left > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

absl::StatusOr<std::string> EncodeSnapshotFile(const adapt::v1::StoreSnapshot& snapshot) {
  std::string payload;
  if (!snapshot.SerializeToString(&payload)) {
    return absl::InternalError("the snapshot could not be serialized");
  }
  std::string file;
  file.reserve(kSnapshotHeaderBytes + payload.size());
  file.append(kMagic, sizeof(kMagic));
  PutLittle<uint32_t>(&file, kSnapshotFormatVersion);
  PutLittle<uint64_t>(&file, payload.size());
  PutLittle<uint32_t>(&file, Crc32(payload));
  file.append(payload);
  return file;
}

absl::StatusOr<adapt::v1::StoreSnapshot> DecodeSnapshotFile(std::string_view file) {
  if (file.size() < kSnapshotHeaderBytes || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("data: not an adaptd snapshot (bad magic or too short)");
  }
  const uint32_t version = GetLittle<uint32_t>(file.data() + 8);
  if (version != kSnapshotFormatVersion) {
    return absl::InvalidArgumentError(absl::StrCat("data: snapshot format version ", version,
                                                   " is not supported (this server reads ",
                                                   kSnapshotFormatVersion, ")"));
  }
  const uint64_t length = GetLittle<uint64_t>(file.data() + 12);
  const uint32_t crc = GetLittle<uint32_t>(file.data() + 20);
  const std::string_view payload = file.substr(kSnapshotHeaderBytes);
  if (payload.size() != length) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: snapshot truncated or padded: header says ", length,
                     " payload bytes, got ", payload.size()));
  }
  if (Crc32(payload) != crc) {
    return absl::InvalidArgumentError("data: snapshot checksum mismatch (corrupt file)");
  }
  adapt::v1::StoreSnapshot snapshot;
  if (!snapshot.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::InvalidArgumentError("data: snapshot payload does not parse");
  }
  return snapshot;
}

}  // namespace adaptd
