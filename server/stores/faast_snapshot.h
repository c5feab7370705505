// Conversion between a faast store's state and adapt.v1.FaastState with its arrays (export,
// import, checkpoints; store_state.h), with the validation of a snapshot read back. Pure functions;
// thread-compatible.
//
// Layout: the proto holds G complete (both triangles) and C as dim × columns, row-major; raw
// targets as rows × columns (one-hot rows for label stores); the published S as dim × columns.
// FaastStatistics keeps G's upper triangle and Cᵀ (see faast_state.h).
#ifndef ADAPTD_SERVER_STORES_FAAST_SNAPSHOT_H_
#define ADAPTD_SERVER_STORES_FAAST_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/stores/faast_state.h"
#include "server/stores/faast_weights.h"
#include "server/stores/store.h"
#include "server/stores/store_state.h"

namespace adaptd {

// The published read-out of `version` as a snapshot holds it (FaastState.published).
struct FaastPublishedState {
  int64_t columns = 0;
  // Label stores: the compile saw the first `labels` of FaastPersistent::labels.
  int64_t labels = 0;
  std::vector<double> s;  // dim × columns
  adapt::v1::FaastStats compile;
};

// Everything a faast store persists besides its spec.
struct FaastPersistent {
  FaastStatistics stats;
  std::vector<std::string> labels;
  std::vector<float> label_vectors;  // label-embedding mode: labels × output.label_dim
  uint64_t version = 0;
  PrequentialStats prequential;
  // Absent in snapshots written before the read-out was kept: the restore solves again.
  std::optional<FaastPublishedState> published;
  uint64_t pending = 0;  // examples changed since the compile that made `published`
};

// Writes the statistics into `state`: scalars and labels into header.faast, G, C and the raw
// keys and targets as arrays that read `stats` (which must outlive the sink).
void FaastStateToState(const FaastStatistics& stats, const std::vector<std::string>& labels,
                       uint64_t version, const PrequentialStats& prequential, StoreStateOut* state);

// Adds the published weights of `state.version` (null: none) and what their compile reported;
// S becomes an array that reads `weights`.
void PublishedToState(const FaastWeights* weights, const adapt::v1::FaastStats& compile,
                      StoreStateOut* state);

// Reads `state` for a store of the normalized `spec`, its arrays from `arrays` where the
// snapshot file carried them as sections. InvalidArgument naming the field
// ("snapshot.faast.g: ...") when sizes, values or counts do not hold together.
absl::Status FaastStateFromProto(const adapt::v1::FaastState& state,
                                 const adapt::v1::StoreSpec& spec, FaastPersistent* out,
                                 const StateArrays& arrays = StateArrays());

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_SNAPSHOT_H_
