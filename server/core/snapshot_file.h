// The snapshot file format used by ExportStore / ImportStore: a fixed header, then the
// serialized adapt.v1.StoreSnapshot. Header (little-endian): 8 bytes magic "ADAPTDSS",
// uint32 format version, uint64 payload length, uint32 CRC-32 (zlib) of the payload.
#ifndef ADAPTD_SERVER_CORE_SNAPSHOT_FILE_H_
#define ADAPTD_SERVER_CORE_SNAPSHOT_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "adapt/v1/snapshot.pb.h"

namespace adaptd {

inline constexpr uint32_t kSnapshotFormatVersion = 1;
inline constexpr size_t kSnapshotHeaderBytes = 8 + 4 + 8 + 4;

absl::StatusOr<std::string> EncodeSnapshotFile(const adapt::v1::StoreSnapshot& snapshot);

// InvalidArgument for a foreign, truncated, corrupt or newer-format file.
absl::StatusOr<adapt::v1::StoreSnapshot> DecodeSnapshotFile(std::string_view file);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_SNAPSHOT_FILE_H_
