// The snapshot file: one store's state as ExportStore writes it, ImportStore reads it, and the
// state database stores it (DURABILITY.md). Pure functions; thread-safe.
//
// Every integer is little-endian. Both versions open with a 24-byte header:
//   8 bytes magic "ADAPTDSS", uint32 format version, uint64 length H and uint32 CRC-32 (zlib)
//   of the H bytes of serialized adapt.v1.StoreSnapshot that follow.
// Version 1 ends there: the whole state is the protobuf, so at most 2 GiB.
// Version 2 (written since) follows it with the array sections that StoreSnapshot.arrays lists,
// in that order and nothing after the last: for an ArraySection of `count` elements of a
// `type` of w bytes, count × w bytes of elements, then the uint32 CRC-32 of those bytes. Each
// section stands for a repeated field of the state message that the header leaves empty
// (server/stores/store_state.h), so no protobuf message and no repeated field holds a big array
// and a state has no size limit. A version-2 file with no sections is a version-1 file with
// another version number.
#ifndef ADAPTD_SERVER_STORES_SNAPSHOT_FILE_H_
#define ADAPTD_SERVER_STORES_SNAPSHOT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/stores/store.h"
#include "server/stores/store_state.h"

namespace adaptd {

// The version written; versions 1 and 2 are read.
inline constexpr uint32_t kSnapshotFormatVersion = 2;
inline constexpr size_t kSnapshotHeaderBytes = 8 + 4 + 8 + 4;

// `state` as a file: the header, then each array's section, filled by its fill function
// (so run it inside Store::WriteState's sink).
absl::StatusOr<std::string> EncodeSnapshotFile(const StoreStateOut& state);
// A snapshot whose arrays are all in the protobuf (no sections).
absl::StatusOr<std::string> EncodeSnapshotFile(const adapt::v1::StoreSnapshot& snapshot);

// `store`'s state as a file (Store::WriteState), with `edit` applied to the header first
// (while the store's lock is held; it must not call the store). The sections' checksums are
// computed after the store's lock is released. Memory: the file, one copy of the state.
absl::StatusOr<std::string> EncodeStoreFile(
    const Store& store,
    absl::FunctionRef<void(adapt::v1::StoreSnapshot&)> edit = [](adapt::v1::StoreSnapshot&) {});

// A decoded file: the header and its sections, which view the file's bytes (the file must
// outlive `arrays`). Restore with RestoreStore(header, arrays, backend) (store_factory.h).
struct DecodedSnapshot {
  adapt::v1::StoreSnapshot header;  // `arrays` lists the sections
  StateArrays arrays;
};

// InvalidArgument naming what is wrong for a foreign, truncated, padded, corrupt or
// newer-format file, and for sections that disagree with the header's list.
absl::StatusOr<DecodedSnapshot> DecodeSnapshotState(std::string_view file);

// The file as one StoreSnapshot, its sections copied into their fields: for tools and tests
// that read states smaller than 2 GiB (ResourceExhausted past that); errors as above.
absl::StatusOr<adapt::v1::StoreSnapshot> DecodeSnapshotFile(std::string_view file);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_SNAPSHOT_FILE_H_
