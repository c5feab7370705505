#include "server/persistence/catalog_row.h"

#include "adapt/v1/snapshot.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace adaptd {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Field numbers, checked against the generated code below.
constexpr int kEntrySpec = adapt::v1::CatalogEntry::kSpecFieldNumber;
constexpr int kEntryIncarnation = adapt::v1::CatalogEntry::kIncarnationFieldNumber;
constexpr int kEntryLsn = adapt::v1::CatalogEntry::kLsnFieldNumber;
constexpr int kEntryFailure = adapt::v1::CatalogEntry::kFailureFieldNumber;
constexpr int kEntryInfo = adapt::v1::CatalogEntry::kInfoFieldNumber;
constexpr int kEntryPinned = adapt::v1::CatalogEntry::kPinnedFieldNumber;
constexpr int kEntryCreateLsn = adapt::v1::CatalogEntry::kCreateLsnFieldNumber;
constexpr int kInfoSpec = adapt::v1::StoreInfo::kSpecFieldNumber;
constexpr int kSpecKind = adapt::v1::StoreSpec::kKindFieldNumber;
constexpr int kSpecBase = adapt::v1::StoreSpec::kBaseFieldNumber;

CodedInputStream Over(std::string_view bytes) {
  return CodedInputStream(reinterpret_cast<const uint8_t*>(bytes.data()),
                          static_cast<int>(bytes.size()));
}

// Reads a length-delimited field's payload at the stream's position.
bool ReadBytes(CodedInputStream* in, std::string_view whole, std::string_view* out) {
  uint32_t length = 0;
  if (!in->ReadVarint32(&length)) return false;
  const int at = in->CurrentPosition();
  if (length > whole.size() - static_cast<size_t>(at) || !in->Skip(static_cast<int>(length))) {
    return false;
  }
  *out = whole.substr(static_cast<size_t>(at), length);
  return true;
}

bool IsLengthDelimited(uint32_t tag) {
  return WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}
bool IsVarint(uint32_t tag) {
  return WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT;
}

// The kind and base in a serialized StoreSpec (the last one given wins, as in a parse).
bool ReadSpecHead(std::string_view spec, CatalogRow* row) {
  CodedInputStream in = Over(spec);
  int kind = adapt::v1::STORE_KIND_UNSPECIFIED;
  std::string_view base;
  while (uint32_t tag = in.ReadTag()) {
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (field == kSpecKind && IsVarint(tag)) {
      uint64_t value = 0;
      if (!in.ReadVarint64(&value)) return false;
      kind = static_cast<int>(value);
    } else if (field == kSpecBase && IsLengthDelimited(tag)) {
      if (!ReadBytes(&in, spec, &base)) return false;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(spec.size())) {
    return false;
  }
  if (!adapt::v1::StoreKind_IsValid(kind)) return false;
  row->kind = static_cast<adapt::v1::StoreKind>(kind);
  row->base = base;
  return true;
}

// Whether a serialized StoreInfo carries its spec, once.
bool HasOneSpec(std::string_view info) {
  CodedInputStream in = Over(info);
  int specs = 0;
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormatLite::GetTagFieldNumber(tag) == kInfoSpec) ++specs;
    if (!WireFormatLite::SkipField(&in, tag)) return false;
  }
  return specs == 1 && in.CurrentPosition() == static_cast<int>(info.size());
}

}  // namespace

std::optional<CatalogRow> ReadCatalogRow(std::string_view record) {
  if (record.size() > static_cast<size_t>(INT32_MAX)) return std::nullopt;
  CodedInputStream in = Over(record);
  CatalogRow row;
  int specs = 0, infos = 0;
  std::string_view spec;
  while (true) {
    const int at = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    uint64_t value = 0;
    bool ok = true;
    if (field == kEntrySpec && IsLengthDelimited(tag)) {
      ok = ReadBytes(&in, record, &spec);
      ++specs;
    } else if (field == kEntryInfo && IsLengthDelimited(tag)) {
      ok = ReadBytes(&in, record, &row.info);
      row.info_begin = static_cast<size_t>(at);
      row.info_end = static_cast<size_t>(in.CurrentPosition());
      ++infos;
    } else if (field == kEntryFailure && IsLengthDelimited(tag)) {
      ok = ReadBytes(&in, record, &row.failure);
    } else if ((field == kEntryIncarnation || field == kEntryLsn || field == kEntryPinned ||
                field == kEntryCreateLsn) &&
               IsVarint(tag)) {
      ok = in.ReadVarint64(&value);
      if (field == kEntryIncarnation) row.incarnation = value;
      if (field == kEntryLsn) row.lsn = value;
      if (field == kEntryPinned) row.pinned = value != 0;
      if (field == kEntryCreateLsn) row.create_lsn = value;
    } else {
      ok = WireFormatLite::SkipField(&in, tag);
    }
    if (!ok) return std::nullopt;
  }
  if (in.CurrentPosition() != static_cast<int>(record.size())) return std::nullopt;
  if (specs != 1 || infos != 1 || !HasOneSpec(row.info)) return std::nullopt;
  if (!ReadSpecHead(spec, &row)) return std::nullopt;
  if (row.create_lsn == 0) row.create_lsn = row.incarnation;  // as CreateLsnOf
  return row;
}

uint64_t CreateLsnOf(const adapt::v1::CatalogEntry& entry) {
  return entry.create_lsn() != 0 ? entry.create_lsn() : entry.incarnation();
}

std::string CatalogRecordWithoutInfo(std::string_view record, const CatalogRow& row) {
  std::string out;
  out.reserve(record.size() - (row.info_end - row.info_begin));
  out.append(record.substr(0, row.info_begin));
  out.append(record.substr(row.info_end));
  return out;
}

}  // namespace adaptd
