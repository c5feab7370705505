// A store's published read-out (LinearReadout) as the state database keeps it beside the
// state (adapt.v1.StoredReadout, state_db.h): what a read of a cold store loads, instead of
// the whole state, to serve it from the warm tier (docs/RESIDENCY.md). The weights travel as
// they are (float), so a read-out read back answers exactly as the one written.
#ifndef ADAPTD_SERVER_STORES_STORED_READOUT_H_
#define ADAPTD_SERVER_STORES_STORED_READOUT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/store.h"

namespace adaptd {

// The record of `readout` (version, shape, label names, weights).
std::string EncodeReadout(const LinearReadout& readout);

// The read-out a record holds, for a store of `spec` (whose kind makes the keys' preparation
// again, StoreKind::readout_prepare). DataLoss naming `where` when the record does not parse
// or does not hold together (its weights not dim × columns, fewer label names than columns).
absl::StatusOr<std::shared_ptr<const LinearReadout>> DecodeReadout(absl::string_view record,
                                                                   const adapt::v1::StoreSpec& spec,
                                                                   absl::string_view where);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_STORED_READOUT_H_
