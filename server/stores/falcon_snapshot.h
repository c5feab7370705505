// One version of a falcon store (what Predict, Describe and Snapshot read) and its conversion
// to and from adapt.v1.FalconState (export / import), with the validation of a snapshot read
// back.
//
// Thread safety: a FalconVersion is immutable once published (held as
// shared_ptr<const FalconVersion>); the functions are pure and thread-compatible.
// Layout: as falcon_rules.h; last_key holds the raw (not normalised) key of the last item.
#ifndef ADAPTD_SERVER_STORES_FALCON_SNAPSHOT_H_
#define ADAPTD_SERVER_STORES_FALCON_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/stores/falcon_rules.h"
#include "server/stores/memory_bytes.h"
#include "server/stores/store.h"

namespace adaptd {

struct FalconVersion {
  adapt::v1::StoreSpec spec;  // normalized; dim set once fixed
  uint64_t version = 0;
  FalconMemory memory;  // dim 0 until the dimension is fixed
  std::shared_ptr<const std::vector<std::string>> labels =
      std::make_shared<const std::vector<std::string>>();
  std::vector<double> last_key;  // next stores; empty before the first item
  uint64_t examples = 0;         // items adapted; memory.steps counts the pairs they made
  PrequentialStats prequential;
  double residual_norm = 0;
  double residual_norm_avg = 0;

  size_t bytes() const {
    return sizeof(*this) + spec.SpaceUsedLong() - sizeof(spec) + memory.bytes() +
           last_key.capacity() * sizeof(double) + LabelNamesBytes(*labels);
  }
};

// Writes `v` into state->header.falcon, S and the window's history as arrays that read `v`
// (which must outlive the sink).
void FalconStateToState(const FalconVersion& v, StoreStateOut* state);

// Reads `state` for a store of the normalized `spec` (whose dim may be 0), its arrays from
// `arrays` where the snapshot file carried them as sections. InvalidArgument naming the field
// ("snapshot.falcon.s: ...") when sizes, values or counts do not hold together.
absl::Status FalconStateFromProto(const adapt::v1::FalconState& state,
                                  const adapt::v1::StoreSpec& spec, FalconVersion* out,
                                  const StateArrays& arrays = StateArrays());

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_SNAPSHOT_H_
