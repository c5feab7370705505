// CatalogRow: a catalog entry (adapt.v1.CatalogEntry, state_db.h) read at the wire level, for
// start-up. A cold store needs little of its entry until a call reaches it: its LSNs, its kind,
// its base and whether it failed or is pinned. Parsing every entry whole (the store's spec twice
// and its description with every label) allocated a few KiB per store and was most of the start-up
// time at 10^6 stores (docs/RESIDENCY.md, "Start-up"). ReadCatalogRow reads the top-level
// fields and only finds where the description lies; the journal keeps the record without it,
// the engine's slot keeps the description's bytes, and each is parsed when it is needed.
#ifndef ADAPTD_SERVER_PERSISTENCE_CATALOG_ROW_H_
#define ADAPTD_SERVER_PERSISTENCE_CATALOG_ROW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"

namespace adaptd {

struct CatalogRow {
  uint64_t incarnation = 0;
  uint64_t lsn = 0;
  uint64_t create_lsn = 0;  // as CreateLsnOf reads it
  bool pinned = false;
  std::string_view failure;
  adapt::v1::StoreKind kind = adapt::v1::STORE_KIND_UNSPECIFIED;  // spec.kind
  std::string_view base;                                          // spec.base
  // The description (field `info`): its serialized StoreInfo, and the field's whole extent in
  // the record (tag and length included).
  std::string_view info;
  size_t info_begin = 0, info_end = 0;
};

// Reads `record` (a serialized CatalogEntry). nullopt when the record is not in the form the
// server writes (a field that does not parse, `spec` or `info` missing or given twice, a
// description without its spec): the caller then parses it whole, which also says whether it
// parses at all. The views point into `record`.
std::optional<CatalogRow> ReadCatalogRow(std::string_view record);

// The LSN of the record that created `entry`'s store: its `create_lsn`, or, in an entry
// written before that field, its incarnation (which was that LSN then).
uint64_t CreateLsnOf(const adapt::v1::CatalogEntry& entry);

// `record` without its `info` field: what the journal keeps of a stored state's entry.
std::string CatalogRecordWithoutInfo(std::string_view record, const CatalogRow& row);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_CATALOG_ROW_H_
