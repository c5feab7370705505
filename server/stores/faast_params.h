// FAAST parameters: defaults, validation of a store spec and of compile-time overrides, and the
// resolved solver settings. Pure functions; thread-compatible.
#ifndef ADAPTD_SERVER_STORES_FAAST_PARAMS_H_
#define ADAPTD_SERVER_STORES_FAAST_PARAMS_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/spec_checks.h"

namespace adaptd {

inline constexpr double kFaastDefaultAlpha = 1.0;
inline constexpr double kFaastDefaultRidge = 0.0;
inline constexpr double kFaastDefaultDecay = 1.0;
inline constexpr uint64_t kFaastDefaultAutoCompileEvery = 1024;
inline constexpr uint32_t kFaastDefaultAutoCompileDelayMs = 200;
inline constexpr bool kFaastDefaultFewShot = true;
inline constexpr uint32_t kFaastDefaultMaxLabels = 10000;
// N₀ of the zero-shot interpolation where it applies (a label encoder whose embeddings have
// the keys' width); 0 elsewhere. Chosen from the few-shot curve in bench/RESULTS.md.
inline constexpr double kFaastDefaultPriorExamples = 64.0;
// Bytes of one declared label name (as of an example's label).
inline constexpr size_t kMaxDeclaredLabelBytes = 256;
// Label ids travel as int32; a million columns is far past any useful one-hot store.
inline constexpr uint32_t kFaastMaxLabelsLimit = 1000000;
inline constexpr uint32_t kFaastMaxOutputDim = 65536;

// What a compile solves with: the relative cut-off (absent: N^-alpha) or a ridge term.
struct FaastSolverParams {
  std::optional<double> rcond;
  double alpha = kFaastDefaultAlpha;
  double ridge = kFaastDefaultRidge;
};

// Validates a faast spec (errors name the field, e.g. "spec.faast.rcond") and returns it with
// every default filled in.
absl::StatusOr<adapt::v1::StoreSpec> NormalizeFaastSpec(const adapt::v1::StoreSpec& spec);

// Validates the solver fields (rcond, alpha, ridge) of `params`; errors name `prefix`.field.
absl::Status ValidateFaastSolverFields(const adapt::v1::FaastParams& params,
                                       absl::string_view prefix);

// Validates CompileRequest.faast: only rcond, alpha and ridge may be set (errors name
// "faast.<field>").
absl::Status ValidateFaastOverrides(const adapt::v1::FaastParams& overrides);

// The solver settings of a normalized spec.
FaastSolverParams SolverParamsOf(const adapt::v1::FaastParams& params);

// Applies compile-time overrides (already validated) to `params`. Setting alpha without rcond
// clears rcond, so that the alpha takes effect; ridge 0 returns to the spectral filter.
void ApplyFaastOverrides(const adapt::v1::FaastParams& overrides, adapt::v1::FaastParams* params);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_PARAMS_H_
