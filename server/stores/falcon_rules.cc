#include "server/stores/falcon_rules.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace adaptd {

template <typename T>
void FalconMemoryT<T>::AddColumns(int64_t n) {
  if (n <= 0) return;
  const int64_t m = columns + n;
  std::vector<T> grown(dim * m, T(0));
  for (int64_t i = 0; i < dim; ++i) {
    std::copy(s.begin() + i * columns, s.begin() + (i + 1) * columns, grown.begin() + i * m);
  }
  s = std::move(grown);
  std::vector<T> targets(history * m, T(0));
  for (int64_t r = 0; r < history; ++r) {
    std::copy(history_targets.begin() + r * columns, history_targets.begin() + (r + 1) * columns,
              targets.begin() + r * m);
  }
  history_targets = std::move(targets);
  columns = m;
}

template <typename T>
void FalconMemoryT<T>::PushHistory(const T* keys, const T* targets, int64_t rows, int64_t keep) {
  history_keys.insert(history_keys.end(), keys, keys + rows * dim);
  history_targets.insert(history_targets.end(), targets, targets + rows * columns);
  history += rows;
  if (history > keep) {
    const int64_t drop = history - keep;
    history_keys.erase(history_keys.begin(), history_keys.begin() + drop * dim);
    history_targets.erase(history_targets.begin(), history_targets.begin() + drop * columns);
    history = keep;
  }
}

template struct FalconMemoryT<double>;
template struct FalconMemoryT<float>;

FalconRates RatesOf(const FalconConfig& config, const FalconStep& step, double beta) {
  FalconRates r;
  // A zero key with λ = ε = 0 has no defined step; it leaves S as it is.
  r.eta = step.denom > 0 ? config.ScheduledBeta(beta, step.t) / step.denom : 0.0;
  const double alpha = std::min(r.eta * step.lambda, 1.0 - config.eps_gamma);
  r.gamma = 1.0 - alpha;
  r.log_gamma = std::log1p(-alpha);
  return r;
}

double TopEigenvalue(std::vector<double> a, int64_t n) {
  if (n == 1) return a[0];
  for (int sweep = 0; sweep < 64; ++sweep) {
    double off = 0, total = 0;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = 0; q < n; ++q) {
        total += a[p * n + q] * a[p * n + q];
        if (p != q) off += a[p * n + q] * a[p * n + q];
      }
    }
    if (off <= 1e-30 * total) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // rotate columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rotate rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
    }
  }
  double top = a[0];
  for (int64_t i = 1; i < n; ++i) top = std::max(top, a[i * n + i]);
  return top;
}

template <typename T>
std::vector<FalconStep> FalconSchedule(const FalconConfig& config, const T* history_keys,
                                       int64_t history, const T* keys, int64_t rows, int64_t dim,
                                       int64_t steps_before) {
  // Pair p of the combined list (history, then the new rows).
  auto key = [&](int64_t p) {
    return p < history ? history_keys + p * dim : keys + (p - history) * dim;
  };
  auto dot = [&](int64_t p, int64_t q) {
    const T* a = key(p);
    const T* b = key(q);
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    return sum;
  };
  std::vector<FalconStep> steps(rows);
  std::vector<double> gram;
  for (int64_t t = 0; t < rows; ++t) {
    const int64_t p = history + t;
    const int64_t b = std::min<int64_t>(config.window, p + 1);
    const int64_t first = p - b + 1;
    double energy = 0;
    if (config.variant == FalconVariant::k3) {
      gram.assign(b * b, 0.0);
      for (int64_t i = 0; i < b; ++i) {
        for (int64_t j = i; j < b; ++j)
          gram[i * b + j] = gram[j * b + i] = dot(first + i, first + j);
      }
      energy = TopEigenvalue(gram, b) / static_cast<double>(b);
    } else if (config.variant == FalconVariant::k3A) {
      for (int64_t i = first; i <= p; ++i) energy += dot(i, i);
      energy /= static_cast<double>(b);
    } else {
      energy = dot(p, p);
    }
    FalconStep& step = steps[t];
    step.window = b;
    step.t = steps_before + t + 1;
    step.lambda = config.scale_coupled_lambda ? config.lambda * energy : config.lambda;
    step.denom = energy + step.lambda + config.eps;
  }
  return steps;
}

template std::vector<FalconStep> FalconSchedule<double>(const FalconConfig&, const double*, int64_t,
                                                        const double*, int64_t, int64_t, int64_t);
template std::vector<FalconStep> FalconSchedule<float>(const FalconConfig&, const float*, int64_t,
                                                       const float*, int64_t, int64_t, int64_t);

std::vector<std::vector<int64_t>> ColumnGroups(const FalconConfig& config, int64_t columns) {
  std::vector<std::vector<int64_t>> groups;
  if (columns == 0) return groups;
  if (config.beta.size() <= 1) {
    groups.emplace_back(columns);
    for (int64_t j = 0; j < columns; ++j) groups[0][j] = j;
    return groups;
  }
  std::map<double, size_t> index;
  for (int64_t j = 0; j < columns; ++j) {
    auto [it, inserted] = index.try_emplace(config.BetaOf(j), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(j);
  }
  return groups;
}

void FalconRecurrent(const FalconConfig& config, const double* keys, const double* targets,
                     int64_t rows, FalconMemory* mem, double* predictions) {
  const int64_t d = mem->dim, m = mem->columns;
  const std::vector<FalconStep> steps =
      FalconSchedule(config, mem->history_keys.data(), mem->history, keys, rows, d, mem->steps);
  std::vector<double> gamma(m), scale(m), coef, pred(m);
  std::vector<const double*> wx, wy;
  for (int64_t t = 0; t < rows; ++t) {
    const double* x = keys + t * d;
    const double* y = targets + t * m;
    double* s = mem->s.data();
    // S_{t−1}ᵀx_t, the prediction before the write.
    std::fill(pred.begin(), pred.end(), 0.0);
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < m; ++j) pred[j] += s[i * m + j] * x[i];
    }
    if (predictions != nullptr) std::copy(pred.begin(), pred.end(), predictions + t * m);
    const FalconStep& step = steps[t];
    for (int64_t j = 0; j < m; ++j) {
      if (j > 0 && config.beta.size() == 1) {
        gamma[j] = gamma[0];
        scale[j] = scale[0];
        continue;
      }
      const FalconRates r = RatesOf(config, step, config.BetaOf(j));
      gamma[j] = r.gamma;
      scale[j] = r.eta / static_cast<double>(step.window);
    }
    // The window: the last B_t − 1 history pairs and this pair. Each contributes x_k c_kᵀ with
    // c_k the residual against S_{t−1} (1, 2, 3) or the target itself (1A, 2A, 3A).
    const int64_t b = step.window;
    coef.assign(b * m, 0.0);
    wx.resize(b);
    wy.resize(b);
    for (int64_t k = 0; k < b; ++k) {
      const int64_t h = mem->history - (b - 1) + k;
      wx[k] = k == b - 1 ? x : mem->history_keys.data() + h * d;
      wy[k] = k == b - 1 ? y : mem->history_targets.data() + h * m;
      for (int64_t j = 0; j < m; ++j) coef[k * m + j] = wy[k][j];
      if (!config.residual()) continue;
      if (k == b - 1) {  // the step's own pair: S_{t−1}ᵀx_t is the prediction above
        for (int64_t j = 0; j < m; ++j) coef[k * m + j] -= pred[j];
        continue;
      }
      for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = 0; j < m; ++j) coef[k * m + j] -= s[i * m + j] * wx[k][i];
      }
    }
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double add = 0;
        for (int64_t k = 0; k < b; ++k) add += wx[k][i] * coef[k * m + j];
        s[i * m + j] = gamma[j] * s[i * m + j] + scale[j] * add;
      }
    }
    if (config.window > 1) mem->PushHistory(x, y, 1, config.window - 1);
    ++mem->steps;
  }
}

}  // namespace adaptd
