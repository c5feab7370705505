// FwPKM parameters: defaults, ranges and validation of an fwpkm store spec (docs/ALGORITHMS.md
// section 3.7; the gate is section 3.3). Pure functions; thread-compatible.
//
// The gate without a learned projection (GATE_CONFIDENCE): with the k selected slots weighted
// by the IDW softmax s', g = (k·Σ s'² − 1) / (k − 1), the concentration of the address: 1 when
// one slot holds all the weight, 0 when the k slots share it evenly (g = 1 when k = 1). The
// output is g·v̂ (a store has no residual stream: the residual path is zero), and the same g
// weights the item's memorisation loss, so diffuse addresses write little. GATE_NONE: g = 1.
#ifndef ADAPTD_SERVER_STORES_FWPKM_PARAMS_H_
#define ADAPTD_SERVER_STORES_FWPKM_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/spec_checks.h"

namespace adaptd {

inline constexpr uint32_t kFwpkmDefaultSubKeys = 256;
inline constexpr uint32_t kFwpkmMaxSubKeys = 4096;
inline constexpr uint32_t kFwpkmDefaultTopK = 8;
inline constexpr uint32_t kFwpkmMaxTopK = 64;
inline constexpr uint32_t kFwpkmDefaultChunk = 512;
inline constexpr uint32_t kFwpkmMaxChunk = 65536;
inline constexpr double kFwpkmDefaultValueLr = 1.0;
inline constexpr double kFwpkmDefaultAddressingLr = 1.0;
inline constexpr double kFwpkmDefaultIdwEps = 1e-3;
inline constexpr uint32_t kFwpkmDefaultKeyDim = 32;
// The store's own dimension becomes the key dimension when it is even and at most this.
inline constexpr uint32_t kFwpkmIdentityKeyDimLimit = 64;
inline constexpr uint32_t kFwpkmMaxKeyDim = 1024;
inline constexpr uint64_t kFwpkmDefaultSeed = 1;
inline constexpr uint32_t kFwpkmDefaultMaxLabels = 10000;
inline constexpr uint32_t kFwpkmMaxLabelsLimit = 65536;
inline constexpr uint32_t kFwpkmMaxOutputDim = 65536;

// Validates an fwpkm spec (errors name the field, e.g. "spec.fwpkm.top_k") and returns it with
// every default filled in.
absl::StatusOr<adapt::v1::StoreSpec> NormalizeFwpkmSpec(const adapt::v1::StoreSpec& spec);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_PARAMS_H_
