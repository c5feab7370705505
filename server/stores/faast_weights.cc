#include "server/stores/faast_weights.h"

#include <algorithm>
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
  const int k = static_cast<int>(std::clamp<int64_t>(top_k, 1, std::max<int64_t>(m, 1)));
  out->top_k = m == 0 ? 0 : k;
  out->label_names = weights.label_names;
  if (m == 0) return;
  out->label_ids.resize(rows * k);
  out->scores.resize(rows * k);
  std::vector<int32_t> order(m);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = outputs.data() + r * m;
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

}  // namespace adaptd
