#include "server/stores/snapshot_file.h"

#include <climits>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/base/binary_format.h"

namespace adaptd {
namespace {

using adapt::v1::ArraySection;
using adapt::v1::StoreSnapshot;

constexpr char kMagic[8] = {'A', 'D', 'A', 'P', 'T', 'D', 'S', 'S'};
constexpr size_t kCrcBytes = 4;

// A file being written: its bytes, and where each section's elements lie (their CRC-32 goes
// right after them, written by FinishSections).
struct Laid {
  std::string file;
  std::vector<std::pair<uint64_t, uint64_t>> sections;  // offset, bytes
};

void PutHeader(uint32_t version, const std::string& payload, std::string* file) {
  file->append(kMagic, sizeof(kMagic));
  PutLittle<uint32_t>(file, version);
  PutLittle<uint64_t>(file, payload.size());
  PutLittle<uint32_t>(file, Crc32Of(payload));
  file->append(payload);
}

void PutLittleAt(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// The header (with `arrays` listed) and every section's elements, written by their fill
// functions; the sections' checksums are left for FinishSections.
absl::StatusOr<Laid> Lay(const StoreSnapshot& snapshot, const std::vector<StateArrayOut>& arrays) {
  StoreSnapshot listed;
  const StoreSnapshot* header = &snapshot;
  if (!arrays.empty() || !snapshot.arrays().empty()) {
    listed = snapshot;
    listed.clear_arrays();
    header = &listed;
  }
  uint64_t body = 0;
  for (const StateArrayOut& a : arrays) {
    const size_t width = ArrayElementBytes(a.type);
    if (width == 0 || a.count > (std::numeric_limits<uint64_t>::max() / 2 - body) / width) {
      return absl::InternalError(absl::StrCat("array ", a.field, ": bad type or count"));
    }
    body += a.count * width + kCrcBytes;
    ArraySection* section = listed.add_arrays();
    section->set_field(a.field);
    section->set_type(a.type);
    section->set_count(a.count);
  }
  std::string payload;
  if (header->ByteSizeLong() > INT_MAX || !header->SerializeToString(&payload)) {
    return absl::InternalError("the snapshot header could not be serialized");
  }
  Laid laid;
  laid.file.reserve(kSnapshotHeaderBytes + payload.size() + body);
  PutHeader(kSnapshotFormatVersion, payload, &laid.file);
  uint64_t offset = laid.file.size();
  laid.file.resize(offset + body);
  for (const StateArrayOut& a : arrays) {
    const uint64_t bytes = a.count * ArrayElementBytes(a.type);
    if (!a.fill(laid.file.data() + offset)) {
      return absl::InternalError(
          absl::StrCat("array ", a.field, ": the store wrote another count than ", a.count));
    }
    laid.sections.emplace_back(offset, bytes);
    offset += bytes + kCrcBytes;
  }
  return laid;
}

std::string FinishSections(Laid laid) {
  for (const auto& [offset, bytes] : laid.sections) {
    char* at = laid.file.data() + offset;
    PutLittleAt(Crc32Of(std::string_view(at, bytes)), at + bytes);
  }
  return std::move(laid.file);
}

absl::StatusOr<StoreSnapshot> ParseHeader(std::string_view payload) {
  StoreSnapshot header;
  if (payload.size() > INT_MAX ||
      !header.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return absl::InvalidArgumentError("data: snapshot payload does not parse");
  }
  return header;
}

// The sections after a format-2 header that starts `body` bytes into `file`.
absl::Status ReadSections(std::string_view file, uint64_t body, DecodedSnapshot* out) {
  const StoreSnapshot& header = out->header;
  if (absl::Status s = CheckArraySections(header); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("data: ", s.message()));
  }
  uint64_t at = body;
  for (int i = 0; i < header.arrays_size(); ++i) {
    const ArraySection& a = header.arrays(i);
    const std::string name = absl::StrCat("section ", i, " (", a.field(), ")");
    const uint64_t left = file.size() - at, width = ArrayElementBytes(a.type());
    if (a.count() > left / width || a.count() * width + kCrcBytes > left) {
      return absl::InvalidArgumentError(
          absl::StrCat("data: snapshot truncated: ", name, " of ", a.count(), " ",
                       ArraySection::Type_Name(a.type()), " elements needs more than the ", left,
                       " bytes left"));
    }
    const std::string_view bytes = file.substr(at, a.count() * width);
    // Worded as the header's mismatch: stored-state failures are reported with this text.
    if (Crc32Of(bytes) != GetLittle<uint32_t>(file.data() + at + bytes.size())) {
      return absl::InvalidArgumentError("data: snapshot checksum mismatch (corrupt file)");
    }
    out->arrays.Add(a.field(), a.type(), bytes);
    at += bytes.size() + kCrcBytes;
  }
  if (at != file.size()) {
    return absl::InvalidArgumentError(absl::StrCat("data: snapshot padded: ", file.size() - at,
                                                   " bytes after the ", header.arrays_size(),
                                                   " sections the header lists"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> EncodeSnapshotFile(const StoreStateOut& state) {
  absl::StatusOr<Laid> laid = Lay(state.header, state.arrays);
  if (!laid.ok()) return laid.status();
  return FinishSections(*std::move(laid));
}

absl::StatusOr<std::string> EncodeSnapshotFile(const StoreSnapshot& snapshot) {
  if (!snapshot.arrays().empty()) {
    return absl::InvalidArgumentError(
        "snapshot.arrays: lists sections that a lone StoreSnapshot does not carry");
  }
  absl::StatusOr<Laid> laid = Lay(snapshot, {});
  if (!laid.ok()) return laid.status();
  return std::move(laid->file);
}

absl::StatusOr<std::string> EncodeStoreFile(const Store& store,
                                            absl::FunctionRef<void(StoreSnapshot&)> edit) {
  absl::StatusOr<Laid> laid = absl::InternalError("the store wrote no state");
  absl::Status status = store.WriteState([&](StoreStateOut& state) {
    edit(state.header);
    laid = Lay(state.header, state.arrays);
    return laid.status();
  });
  if (!status.ok()) return status;
  return FinishSections(*std::move(laid));
}

absl::StatusOr<DecodedSnapshot> DecodeSnapshotState(std::string_view file) {
  if (file.size() < kSnapshotHeaderBytes || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError("data: not an adaptd snapshot (bad magic or too short)");
  }
  const uint32_t version = GetLittle<uint32_t>(file.data() + 8);
  if (version != 1 && version != 2) {
    return absl::InvalidArgumentError(absl::StrCat("data: snapshot format version ", version,
                                                   " is not supported (this server reads 1 and ",
                                                   kSnapshotFormatVersion, ")"));
  }
  const uint64_t length = GetLittle<uint64_t>(file.data() + 12);
  const uint32_t crc = GetLittle<uint32_t>(file.data() + 20);
  const std::string_view rest = file.substr(kSnapshotHeaderBytes);
  if (version == 1 ? rest.size() != length : rest.size() < length) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: snapshot truncated or padded: header says ", length,
                     " payload bytes, got ", rest.size()));
  }
  const std::string_view payload = rest.substr(0, length);
  if (Crc32Of(payload) != crc) {
    return absl::InvalidArgumentError("data: snapshot checksum mismatch (corrupt file)");
  }
  DecodedSnapshot out;
  absl::StatusOr<StoreSnapshot> header = ParseHeader(payload);
  if (!header.ok()) return header.status();
  out.header = *std::move(header);
  if (version == 1) {
    if (!out.header.arrays().empty()) {
      return absl::InvalidArgumentError(
          "data: snapshot.arrays: a format-1 snapshot carries no sections");
    }
    return out;
  }
  if (absl::Status s = ReadSections(file, kSnapshotHeaderBytes + length, &out); !s.ok()) return s;
  return out;
}

absl::StatusOr<StoreSnapshot> DecodeSnapshotFile(std::string_view file) {
  absl::StatusOr<DecodedSnapshot> decoded = DecodeSnapshotState(file);
  if (!decoded.ok()) return decoded.status();
  if (decoded->arrays.empty()) return std::move(decoded->header);
  return InlineArrays(std::move(decoded->header), decoded->arrays);
}

}  // namespace adaptd
