// The FAAST solve: from the statistics (G, C, N, and the raw pairs while kept) to the weights
// S (dim × columns) with S = G⁺C under a relative spectral cut-off, or S = (G + ridge·I)⁻¹C.
// Pure numerics in float64 on a kernels::Backend; no locks, no store state.
//
// Layout: row-major. Input G is the upper triangle of a dim × dim matrix, C comes transposed
// (ct, columns × dim), as in FaastStatistics; the output S is dim × columns.
#ifndef ADAPTD_SERVER_STORES_FAAST_SOLVER_H_
#define ADAPTD_SERVER_STORES_FAAST_SOLVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "server/stores/faast_params.h"
#include "server/stores/faast_state.h"

namespace adaptd {

struct FaastSolution {
  std::vector<double> s;  // dim × columns
  uint32_t effective_rank = 0;
  double cutoff = 0;            // ε (0 for ridge)
  double condition_number = 0;  // σ_max/σ_min over the kept directions; see SolveFaast
  std::string solver;           // "spectral", "few_shot" or "ridge"
};

// The relative singular-value cut-off ε: rcond when set, else N^-alpha, at most 1 (so the
// largest direction is always kept) and 1 when N ≤ 0.
double FaastCutoff(const FaastSolverParams& params, double weighted_examples);

// Solves `stats` (consumed: decompositions run in place).
//  - raw pairs kept with rows > 0 → "few_shot": through the rows × rows Gram M = K̃K̃ᵀ,
//    K̃ = W^½K, Ṽ = W^½V; spectral S = K̃ᵀ U_k Λ_k⁻¹ U_kᵀ Ṽ, ridge S = K̃ᵀ (M + ridge·I)⁻¹ Ṽ.
//    Same weights as the G path (M and G share their nonzero spectrum).
//  - ridge > 0 → "ridge": Cholesky of G + ridge·I. FailedPrecondition when it is not positive
//    definite. The condition number reported is max r_ii / min r_ii of the Cholesky factor, a
//    cheap lower bound of sqrt(κ(G + ridge·I)).
//  - otherwise "spectral": eigendecomposition of G, keeping λ ≥ ε²·λ_max and λ > 0.
// Zero examples, or no direction kept, give zero weights and effective rank 0.
absl::StatusOr<FaastSolution> SolveFaast(FaastStatistics stats, const FaastSolverParams& params,
                                         kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_SOLVER_H_
