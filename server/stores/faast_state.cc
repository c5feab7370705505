#include "server/stores/faast_state.h"

#include <algorithm>
#include <cmath>

namespace adaptd {
namespace {

void Scale(std::vector<double>& v, double factor) {
  for (double& x : v) x *= factor;
}

// Whether stored row `row` of `raw` has weight exactly 1 and the key and target of row `j` of
// `other` (whose label ids are already store columns in `label_id`).
bool SamePair(const FaastRawPairs& raw, int64_t row, const FaastRawPairs& other, int64_t j,
              int64_t dim, int64_t columns, bool labels, int32_t label_id) {
  if (raw.weights[row] != 1.0) return false;
  if (labels) {
    if (raw.label_ids[row] != label_id) return false;
  } else if (!std::equal(raw.targets.begin() + row * columns,
                         raw.targets.begin() + (row + 1) * columns,
                         other.targets.begin() + j * columns)) {
    return false;
  }
  return std::equal(raw.keys.begin() + row * dim, raw.keys.begin() + (row + 1) * dim,
                    other.keys.begin() + j * dim);
}

}  // namespace

void FaastRawPairs::Clear() {
  rows = 0;
  // Swap with empties so the memory is actually returned.
  std::vector<double>().swap(keys);
  std::vector<int32_t>().swap(label_ids);
  std::vector<double>().swap(targets);
  std::vector<double>().swap(weights);
}

void FaastRawPairs::ScaleWeights(double factor) { Scale(weights, factor); }

void FaastRawPairs::AppendRow(const FaastRawPairs& other, int64_t row, int64_t dim, int64_t columns,
                              int32_t label_id) {
  keys.insert(keys.end(), other.keys.begin() + row * dim, other.keys.begin() + (row + 1) * dim);
  if (!other.label_ids.empty()) {
    label_ids.push_back(label_id);
  } else {
    targets.insert(targets.end(), other.targets.begin() + row * columns,
                   other.targets.begin() + (row + 1) * columns);
  }
  weights.push_back(other.weights[row]);
  ++rows;
}

void FaastRawPairs::EraseRow(int64_t row, int64_t dim, int64_t columns) {
  keys.erase(keys.begin() + row * dim, keys.begin() + (row + 1) * dim);
  if (!label_ids.empty()) label_ids.erase(label_ids.begin() + row);
  if (!targets.empty()) {
    targets.erase(targets.begin() + row * columns, targets.begin() + (row + 1) * columns);
  }
  weights.erase(weights.begin() + row);
  --rows;
}

size_t FaastRawPairs::bytes() const {
  return (keys.capacity() + targets.capacity() + weights.capacity()) * sizeof(double) +
         label_ids.capacity() * sizeof(int32_t);
}

void FaastStatistics::Allocate(int64_t new_dim) {
  if (!g.empty()) return;
  dim = new_dim;
  g.assign(dim * dim, 0.0);
  ct.assign(columns * dim, 0.0);
}

void FaastStatistics::AddColumns(int64_t count) {
  columns += count;
  if (!g.empty()) ct.resize(columns * dim, 0.0);
  if (prior_version > 0) prior_t.resize(columns * dim, 0.0);
}

void FaastStatistics::ZeroStatistics() {
  std::fill(g.begin(), g.end(), 0.0);
  std::fill(ct.begin(), ct.end(), 0.0);
  weighted_examples = 0;
  raw.Clear();
}

size_t FaastStatistics::bytes() const {
  return (g.capacity() + ct.capacity() + prior_t.capacity()) * sizeof(double) + raw.bytes();
}

// dst += sign·src over the upper triangle only: a delta's strictly lower triangle is never
// written (its buffer is reused without clearing), and the statistics keep theirs at zero.
void AddUpperTriangle(const std::vector<double>& src, double sign, int64_t dim,
                      std::vector<double>* dst) {
  for (int64_t i = 0; i < dim; ++i) {
    const double* from = src.data() + i * dim;
    double* to = dst->data() + i * dim;
    for (int64_t j = i; j < dim; ++j) to[j] += sign * from[j];
  }
}

void MergeAdapt(const FaastDelta& delta, const std::vector<int32_t>& store_column, double decay,
                FaastStatistics* stats) {
  const int64_t dim = stats->dim;
  if (decay != 1.0 && delta.decayed > 0) {
    const double factor = std::pow(decay, static_cast<double>(delta.decayed));
    Scale(stats->g, factor);
    Scale(stats->ct, factor);
    stats->weighted_examples *= factor;
    stats->raw.ScaleWeights(factor);
  }
  if (delta.g_written) AddUpperTriangle(delta.g, 1.0, dim, &stats->g);
  for (int64_t j = 0; j < delta.columns; ++j) {
    const double* src = delta.ct.data() + j * dim;
    double* dst = stats->ct.data() + store_column[j] * dim;
    for (int64_t i = 0; i < dim; ++i) dst[i] += src[i];
  }
  stats->weighted_examples += delta.weighted_examples;
  stats->examples += delta.examples;

  if (!stats->raw_kept) return;
  if (!delta.raw_complete || stats->examples >= static_cast<uint64_t>(dim)) {
    stats->raw_kept = false;
    stats->raw.Clear();
    return;
  }
  for (int64_t r = 0; r < delta.raw.rows; ++r) {
    const int32_t label = stats->labels ? store_column[delta.raw.label_ids[r]] : 0;
    stats->raw.AppendRow(delta.raw, r, dim, stats->columns, label);
  }
}

void MergeForget(const FaastDelta& delta, const std::vector<int32_t>& store_column,
                 FaastStatistics* stats) {
  const int64_t dim = stats->dim;
  if (delta.g_written) AddUpperTriangle(delta.g, -1.0, stats->dim, &stats->g);
  for (int64_t j = 0; j < delta.columns; ++j) {
    const double* src = delta.ct.data() + j * dim;
    double* dst = stats->ct.data() + store_column[j] * dim;
    for (int64_t i = 0; i < dim; ++i) dst[i] -= src[i];
  }
  stats->weighted_examples -= delta.weighted_examples;
  stats->examples -= delta.examples;

  if (stats->raw_kept) {
    bool matched_all = delta.raw_complete;
    for (int64_t j = 0; matched_all && j < delta.raw.rows; ++j) {
      const int32_t label = stats->labels ? store_column[delta.raw.label_ids[j]] : 0;
      int64_t found = -1;
      for (int64_t r = 0; r < stats->raw.rows && found < 0; ++r) {
        if (SamePair(stats->raw, r, delta.raw, j, dim, stats->columns, stats->labels, label)) {
          found = r;
        }
      }
      if (found < 0) {
        matched_all = false;
      } else {
        stats->raw.EraseRow(found, dim, stats->columns);
      }
    }
    if (!matched_all) {
      stats->raw_kept = false;
      stats->raw.Clear();
    }
  }
  // Exact zero instead of rounding residue once nothing is left.
  if (stats->examples == 0) stats->ZeroStatistics();
}

}  // namespace adaptd
