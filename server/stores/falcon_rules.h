// The Falcon update rules (docs/ALGORITHMS.md section 2.2) on a bare memory: the per-step scalars
// (energy, η, decay γ with its clamp), the one-at-a-time recurrence that is the reference for
// the chunk-parallel form (falcon_chunked.h), and the memory both work on.
//
// Thread safety: pure functions over caller-owned data; thread-compatible.
// Layout: row-major; S is dim × columns, keys rows × dim, targets rows × columns. Keys given to
// these functions are already normalised (falcon_params.h NormalizeKeys).
#ifndef ADAPTD_SERVER_STORES_FALCON_RULES_H_
#define ADAPTD_SERVER_STORES_FALCON_RULES_H_

#include <cstdint>
#include <vector>

#include "server/stores/falcon_params.h"

namespace adaptd {

// What a falcon store updates: S, the count of pairs applied (the β schedule's clock) and, for
// variants 3 and 3A, the last window − 1 pairs (so a stream split across calls continues
// exactly). T is double in stores; float for the float32
// chunk path.
template <typename T>
struct FalconMemoryT {
  using Value = T;
  int64_t dim = 0;
  int64_t columns = 0;
  std::vector<T> s;   // dim × columns
  int64_t steps = 0;  // pairs applied so far
  // The most recent pairs, oldest first, at most window − 1 of them.
  int64_t history = 0;
  std::vector<T> history_keys;     // history × dim
  std::vector<T> history_targets;  // history × columns

  // Sets the shape, S = 0, no history.
  void Reset(int64_t d, int64_t m) {
    dim = d;
    columns = m;
    s.assign(d * m, T(0));
    steps = 0;
    history = 0;
    history_keys.clear();
    history_targets.clear();
  }
  // Appends `n` zero columns (a label store's new labels).
  void AddColumns(int64_t n);
  // Appends pairs to the history and keeps the last `keep` of them.
  void PushHistory(const T* keys, const T* targets, int64_t rows, int64_t keep);
  size_t bytes() const {
    return (s.capacity() + history_keys.capacity() + history_targets.capacity()) * sizeof(T);
  }
};
using FalconMemory = FalconMemoryT<double>;

// The scalars of one step that do not depend on the output column.
struct FalconStep {
  double denom = 0;    // E_t + λ_t + ε
  double lambda = 0;   // λ_t (scale-coupled: λ·E_t)
  int64_t window = 1;  // B_t, pairs in the step's window (the step's own pair last)
  int64_t t = 1;       // the pair's ordinal in the memory, for the β schedule
};

// The rates of one step for a column of step size β: with β_t = config.ScheduledBeta(β, t),
// η = β_t / denom, γ = 1 − min(ηλ, 1 − ε_γ), log γ.
struct FalconRates {
  double eta = 0;
  double gamma = 1;
  double log_gamma = 0;
};
FalconRates RatesOf(const FalconConfig& config, const FalconStep& step, double beta);

// The steps of `rows` new pairs after `history` kept pairs (keys history × dim, then rows × dim),
// the first of them the memory's pair number `steps_before` + 1.
template <typename T>
std::vector<FalconStep> FalconSchedule(const FalconConfig& config, const T* history_keys,
                                       int64_t history, const T* keys, int64_t rows, int64_t dim,
                                       int64_t steps_before);

// Columns that share β (one group unless β is given per column), in column order.
std::vector<std::vector<int64_t>> ColumnGroups(const FalconConfig& config, int64_t columns);

// The largest eigenvalue of the symmetric n × n matrix `a` (cyclic Jacobi; n is small).
double TopEigenvalue(std::vector<double> a, int64_t n);

// Applies `rows` pairs one at a time. `predictions` (rows × columns, may be null) receives
// S_{t−1}ᵀx_t, the prediction before each write.
void FalconRecurrent(const FalconConfig& config, const double* keys, const double* targets,
                     int64_t rows, FalconMemory* memory, double* predictions);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_RULES_H_
