// Falcon parameters: defaults and validation of a store spec, and the resolved settings the
// update rules read (docs/ALGORITHMS.md section 2.4). Pure functions; thread-compatible.
#ifndef ADAPTD_SERVER_STORES_FALCON_PARAMS_H_
#define ADAPTD_SERVER_STORES_FALCON_PARAMS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/stores/spec_checks.h"

namespace adaptd {

inline constexpr double kFalconDefaultBeta = 1.0;
inline constexpr double kFalconDefaultLambda = 0.0;
inline constexpr double kFalconDefaultEps = 1e-6;
inline constexpr double kFalconDefaultEpsGamma = 1e-3;
inline constexpr uint32_t kFalconDefaultWindow = 4;
// The recommended settings of a labels output, taken when `variant` is unset (adapt.proto).
inline constexpr uint32_t kFalconLabelsWindow = 16;
inline constexpr double kFalconLabelsBetaHalfLife = 100;
inline constexpr double kFalconLabelsBetaMin = 0.01;
// The window's energy μ_t is the top eigenvalue of a B×B Gram (Jacobi, B³ per step).
inline constexpr uint32_t kFalconMaxWindow = 64;
inline constexpr uint32_t kFalconMaxOutputDim = 65536;
// S holds dim × labels doubles; a label store stops growing here (ResourceExhausted).
inline constexpr int64_t kFalconMaxLabels = 10000;
// Pairs per chunk of the chunk-parallel ingest. 32 measured fastest of 16, 32 and 64 at d = 256
// with 16 and 64 outputs on the CPU (bench/RESULTS.md, "Falcon"): the chunk's Gram and
// forward substitution grow with its square, its products only with its length.
inline constexpr int64_t kFalconChunk = 32;

enum class FalconVariant { k1, k2, k3, k1A, k2A, k3A };
enum class FalconKeyNorm { kNone, kL2, kRms };

// The resolved settings of a normalized spec.
struct FalconConfig {
  FalconVariant variant = FalconVariant::k1;
  // One value, or one per output column (variants 2 and 2A).
  std::vector<double> beta = {kFalconDefaultBeta};
  double lambda = kFalconDefaultLambda;
  double eps = kFalconDefaultEps;
  double eps_gamma = kFalconDefaultEpsGamma;
  int64_t window = 1;  // B; 1 for the variants without a window
  bool scale_coupled_lambda = false;
  FalconKeyNorm key_norm = FalconKeyNorm::kNone;
  // The β schedule: 0 keeps β constant.
  double beta_half_life = 0;
  double beta_min = 0;

  // Variants 1, 2, 3 step on the residual; 1A, 2A, 3A on the target alone.
  bool residual() const {
    return variant == FalconVariant::k1 || variant == FalconVariant::k2 ||
           variant == FalconVariant::k3;
  }
  // β of output column `j`.
  double BetaOf(int64_t j) const { return beta.size() == 1 ? beta[0] : beta[j]; }
  // The step size of the store's t-th pair (t ≥ 1) for a column of step size `b`:
  // max(beta_min, b / (1 + (t − 1) / beta_half_life)), or `b` without a schedule.
  double ScheduledBeta(double b, int64_t t) const {
    if (!(beta_half_life > 0)) return b;
    const double scheduled = b / (1.0 + static_cast<double>(t - 1) / beta_half_life);
    return scheduled > beta_min ? scheduled : beta_min;
  }
};

// Validates a falcon spec (errors name the field, e.g. "spec.falcon.beta") and returns it with
// every default filled in.
absl::StatusOr<adapt::v1::StoreSpec> NormalizeFalconSpec(const adapt::v1::StoreSpec& spec);

// The settings of a normalized spec.
FalconConfig FalconConfigOf(const adapt::v1::FalconParams& params);

// Applies the key normalisation in place to `rows` keys of `dim` values (zero keys stay zero).
void NormalizeKeys(FalconKeyNorm norm, int64_t rows, int64_t dim, double* keys);

// The read-out's key preparation (LinearReadout::prepare) for `norm` on float keys of `dim`
// values: NormalizeKeys in float64. Empty for kNone.
std::function<void(int64_t rows, float* keys)> ReadoutKeyNorm(FalconKeyNorm norm, int64_t dim);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_PARAMS_H_
