#include "server/core/snapshot_file.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/core/binary_format.h"

namespace adaptd {
namespace {

constexpr char kMagic[8] = {'A', 'D', 'A', 'P', 'T', 'D', 'S', 'S'};

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
  PutLittle<uint32_t>(&file, Crc32Of(payload));
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
  if (Crc32Of(payload) != crc) {
    return absl::InvalidArgumentError("data: snapshot checksum mismatch (corrupt file)");
  }
  adapt::v1::StoreSnapshot snapshot;
  if (!snapshot.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::InvalidArgumentError("data: snapshot payload does not parse");
  }
  return snapshot;
}

}  // namespace adaptd
