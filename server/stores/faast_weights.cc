#include "server/stores/faast_weights.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace adaptd {

std::vector<double> ToDouble(const float* values, int64_t count) {
  return std::vector<double>(values, values + count);
}

absl::StatusOr<std::vector<double>> FaastOutputs(const FaastWeights& weights, const double* keys,
                                                 int64_t rows, kernels::Backend* backend) {
  std::vector<double> out(rows * weights.columns, 0.0);
  if (rows == 0 || weights.columns == 0 || weights.dim == 0) return out;
  absl::Status s = backend->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, weights.columns,
                                 weights.dim, 1.0, keys, weights.dim, weights.s.data(),
                                 weights.columns, 0.0, out.data(), weights.columns);
  if (!s.ok()) return s;
  return out;
}

namespace {

// Cosines of one output row against every label embedding.
void Cosines(const FaastWeights& weights, const double* row, std::vector<double>* scores) {
  const int64_t m = weights.columns;
  const std::vector<double>& e = *weights.label_vectors;
  const int64_t labels = static_cast<int64_t>(e.size()) / std::max<int64_t>(m, 1);
  double norm2 = 0;
  for (int64_t j = 0; j < m; ++j) norm2 += row[j] * row[j];
  const double inv = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 0.0;
  scores->assign(labels, 0.0);
  for (int64_t l = 0; l < labels; ++l) {
    double dot = 0;
    for (int64_t j = 0; j < m; ++j) dot += row[j] * e[l * m + j];
    (*scores)[l] = dot * inv;
  }
}

// Top-k columns of `rows` score rows (rows × m) into `out`.
template <typename T>
void TopK(const FaastWeights& weights, const T* scores, int64_t rows, int64_t m, int top_k,
          Predictions* out) {
  const int k = static_cast<int>(std::clamp<int64_t>(top_k, 1, std::max<int64_t>(m, 1)));
  out->top_k = m == 0 ? 0 : k;
  out->label_names = weights.label_names;
  if (m == 0) return;
  out->label_ids.resize(rows * k);
  out->scores.resize(rows * k);
  std::vector<int32_t> order(m);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = scores + r * m;
    std::iota(order.begin(), order.end(), 0);
    // Best first; ties go to the earlier label.
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    for (int i = 0; i < k; ++i) {
      out->label_ids[r * k + i] = order[i];
      out->scores[r * k + i] = static_cast<float>(row[order[i]]);
    }
  }
}

}  // namespace

bool FitsFloat(const std::vector<double>& s) {
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  double largest = 0;
  for (double v : s) {
    const double a = std::fabs(v);
    // NaN fails the comparison too.
    if (!(a <= kFloatMax)) return false;
    largest = std::max(largest, a);
  }
  return largest == 0 || largest >= kFloatScoringFloor;
}

std::vector<int64_t> RowsToRescore(const float* outputs, int64_t rows, int64_t columns) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = outputs + r * columns;
    float largest = 0;
    bool finite = true;
    for (int64_t j = 0; j < columns; ++j) {
      finite = finite && std::isfinite(row[j]);
      largest = std::max(largest, std::fabs(row[j]));
    }
    if (!finite || largest < static_cast<float>(kFloatScoringFloor)) out.push_back(r);
  }
  return out;
}

std::vector<double> UnitRows(const float* rows, int64_t count, int64_t width) {
  std::vector<double> out(rows, rows + count * width);
  for (int64_t r = 0; r < count; ++r) {
    double* row = out.data() + r * width;
    double norm2 = 0;
    for (int64_t j = 0; j < width; ++j) norm2 += row[j] * row[j];
    if (norm2 <= 0) continue;
    const double inv = 1.0 / std::sqrt(norm2);
    for (int64_t j = 0; j < width; ++j) row[j] *= inv;
  }
  return out;
}

int64_t FaastBestLabel(const FaastWeights& weights, const double* row) {
  std::vector<double> cosines;
  const double* scores = row;
  int64_t m = weights.columns;
  if (weights.label_vectors != nullptr) {
    Cosines(weights, row, &cosines);
    scores = cosines.data();
    m = static_cast<int64_t>(cosines.size());
  }
  int64_t best = -1;
  for (int64_t j = 0; j < m; ++j) {
    if (best < 0 || scores[j] > scores[best]) best = j;
  }
  return best;
}

void FaastFillPredictions(const FaastWeights& weights, const std::vector<double>& outputs,
                          int64_t rows, int top_k, Predictions* out) {
  const int64_t m = weights.columns;
  out->version = weights.version;
  out->rows = rows;
  if (!weights.labels) {
    out->out_dim = m;
    out->vectors.assign(outputs.begin(), outputs.end());
    return;
  }
  if (weights.label_vectors != nullptr) {
    const int64_t labels = static_cast<int64_t>(weights.label_names->size());
    std::vector<double> scores(rows * labels), row_scores;
    for (int64_t r = 0; r < rows; ++r) {
      Cosines(weights, outputs.data() + r * m, &row_scores);
      std::copy(row_scores.begin(), row_scores.end(), scores.begin() + r * labels);
    }
    TopK(weights, scores.data(), rows, labels, top_k, out);
    return;
  }
  TopK(weights, outputs.data(), rows, m, top_k, out);
}

void FaastFillPredictions(const FaastWeights& weights, const std::vector<float>& outputs,
                          int64_t rows, int top_k, Predictions* out) {
  out->version = weights.version;
  out->rows = rows;
  if (!weights.labels) {
    out->out_dim = weights.columns;
    out->vectors = outputs;
    return;
  }
  TopK(weights, outputs.data(), rows, weights.columns, top_k, out);
}

}  // namespace adaptd
