#include "server/stores/fwpkm_update.h"

#include <algorithm>
#include <cmath>

namespace adaptd {
namespace {

constexpr double kEntropyEps = 1e-8;

// Softmax of the k half-scores of one address (float64).
void HalfSoftmax(const double* s, int k, double* p) {
  const double top = *std::max_element(s, s + k);
  double total = 0;
  for (int j = 0; j < k; ++j) total += (p[j] = std::exp(s[j] - top));
  for (int j = 0; j < k; ++j) p[j] /= total;
}

}  // namespace

void FwpkmReadout(const FwpkmValues& values, const FwpkmAddress& a, double* out) {
  std::fill(out, out + values.width(), 0.0);
  for (int i = 0; i < a.k; ++i) {
    const int64_t row = values.Find(a.slot[i]);
    if (row >= 0) values.AddScaled(row, a.weight[i], out);
  }
}

void FwpkmPrefetchAhead(const FwpkmValues& values, const FwpkmAddress* addresses, int64_t count,
                        int64_t t) {
  constexpr int64_t kMapAhead = 8, kRowAhead = 4;
  if (t == 0) {
    for (int64_t u = 0; u < std::min(count, kMapAhead); ++u) {
      values.PrefetchSlots(addresses[u].slot.data(), addresses[u].k);
    }
  }
  if (t + kMapAhead < count) {
    values.PrefetchSlots(addresses[t + kMapAhead].slot.data(), addresses[t + kMapAhead].k);
  }
  if (t + kRowAhead < count) {
    values.PrefetchRows(addresses[t + kRowAhead].slot.data(), addresses[t + kRowAhead].k);
  }
}

void FwpkmValueGradient::Add(const FwpkmAddress& a, float gate, const double* error) {
  double sq = 0;
  for (int i = 0; i < a.k; ++i) sq += static_cast<double>(a.weight[i]) * a.weight[i];
  for (int i = 0; i < a.k; ++i) {
    auto [it, inserted] = index_.try_emplace(a.slot[i], rows());
    if (inserted) {
      slots_.push_back(a.slot[i]);
      reads_.push_back(0);
      grad_.resize(grad_.size() + width_, 0.0);
    }
    ++reads_[it->second];
    const double c = gate * static_cast<double>(a.weight[i]) / sq;
    double* g = grad_.data() + it->second * width_;
    for (int64_t j = 0; j < width_; ++j) g[j] += c * error[j];
  }
}

FwpkmKeyGradient FwpkmAddressingGradient(const FwpkmSubKeys& keys, const float* queries,
                                         const std::vector<FwpkmAddress>& addresses, float eps) {
  FwpkmKeyGradient out;
  const int n = keys.n(), half = keys.half();
  const int64_t items = static_cast<int64_t>(addresses.size());
  if (items == 0) return out;
  const int k = addresses[0].k;
  // Scores, distances and half softmaxes, recomputed in float64: items × k per half.
  std::vector<double> s(items * k), d2(items * k), p(items * k);
  for (int m = 0; m < 2; ++m) {
    std::vector<double> mean(n, 0.0);
    for (int64_t t = 0; t < items; ++t) {
      const float* q = queries + (2 * t + m) * half;
      for (int j = 0; j < k; ++j) {
        const int id = addresses[t].sub[m][j];
        double dist = 0;
        for (int c = 0; c < half; ++c) {
          const double diff = static_cast<double>(q[c]) - keys.at(m, id, c);
          dist += diff * diff;
        }
        d2[t * k + j] = dist;
        s[t * k + j] = -std::log(eps + dist);
      }
      HalfSoftmax(&s[t * k], k, &p[t * k]);
      for (int j = 0; j < k; ++j) mean[addresses[t].sub[m][j]] += p[t * k + j] / items;
    }
    // L = Σ_j p̄_j log(p̄_j + ε_H); ∂L/∂p̄_j = log(p̄_j + ε_H) + p̄_j / (p̄_j + ε_H).
    std::vector<double> slope(n, 0.0);
    std::vector<int32_t> row(n, -1);
    for (int j = 0; j < n; ++j) {
      if (mean[j] == 0) continue;
      out.loss += mean[j] * std::log(mean[j] + kEntropyEps);
      slope[j] = std::log(mean[j] + kEntropyEps) + mean[j] / (mean[j] + kEntropyEps);
      row[j] = static_cast<int32_t>(out.ids[m].size());
      out.ids[m].push_back(j);
    }
    out.grad[m].assign(out.ids[m].size() * half, 0.0);
    for (int64_t t = 0; t < items; ++t) {
      const float* q = queries + (2 * t + m) * half;
      double expected = 0;  // Σ_l p_l·slope_l
      for (int j = 0; j < k; ++j) expected += p[t * k + j] * slope[addresses[t].sub[m][j]];
      for (int j = 0; j < k; ++j) {
        const int id = addresses[t].sub[m][j];
        // ∂L/∂s_tj = p_tj (slope_j − expected) / T; ∂s/∂K_j = 2(q − K_j) / (ε + d²).
        const double ds = p[t * k + j] * (slope[id] - expected) / items;
        const double f = ds * 2.0 / (eps + d2[t * k + j]);
        double* g = out.grad[m].data() + static_cast<size_t>(row[id]) * half;
        for (int c = 0; c < half; ++c) g[c] += f * (static_cast<double>(q[c]) - keys.at(m, id, c));
      }
    }
  }
  return out;
}

void FwpkmAddUsage(const std::vector<FwpkmAddress>& addresses, int n,
                   std::array<std::vector<double>, 2>* usage) {
  std::array<double, kFwpkmMaxTopK> s, p;
  for (int m = 0; m < 2; ++m) {
    (*usage)[m].resize(n, 0.0);
    for (const FwpkmAddress& a : addresses) {
      for (int j = 0; j < a.k; ++j) s[j] = a.sub_score[m][j];
      HalfSoftmax(s.data(), a.k, p.data());
      for (int j = 0; j < a.k; ++j) (*usage)[m][a.sub[m][j]] += p[j];
    }
  }
}

void FwpkmApplyChunk(const FwpkmChunkParams& params, const FwpkmChunkView& chunk,
                     FwpkmSubKeys* keys, FwpkmValues* values,
                     std::array<std::vector<double>, 2>* usage, kernels::Backend& backend) {
  const int64_t width = values->width();
  std::vector<FwpkmAddress> addresses(chunk.items);
  FwpkmScratch scratch;
  FwpkmValueGradient gradient(width);
  std::vector<double> error(width);
  // Every item reads the state the previous chunk left, so the chunk is addressed in one batch.
  FwpkmAddressBatch(*keys, chunk.queries, chunk.items, params.k, params.eps, &scratch,
                    addresses.data(), backend);
  for (int64_t t = 0; t < chunk.items; ++t) {
    const FwpkmAddress& a = addresses[t];
    FwpkmPrefetchAhead(*values, addresses.data(), chunk.items, t);
    FwpkmReadout(*values, a, error.data());
    if (chunk.labels != nullptr) {
      error[chunk.labels[t]] -= 1.0;
    } else {
      const float* y = chunk.targets + t * width;
      for (int64_t j = 0; j < width; ++j) error[j] -= y[j];
    }
    gradient.Add(a, FwpkmGate(a, params.gated), error.data());
  }
  std::vector<double> step(width);
  for (int64_t r = 0; r < gradient.rows(); ++r) {
    const double scale = -params.value_lr / gradient.reads(r);
    const double* g = gradient.grad(r);
    bool zero = true;
    for (int64_t j = 0; j < width; ++j) {
      step[j] = scale * g[j];
      zero = zero && step[j] == 0;
    }
    // A zero step to an unwritten row (gate 0) allocates nothing.
    if (zero && values->Find(gradient.slot(r)) < 0) continue;
    values->Add(values->Touch(gradient.slot(r)), step.data());
  }
  FwpkmAddUsage(addresses, keys->n(), usage);
  if (params.addressing_lr <= 0) return;
  const FwpkmKeyGradient kg = FwpkmAddressingGradient(*keys, chunk.queries, addresses, params.eps);
  for (int m = 0; m < 2; ++m) {
    for (size_t r = 0; r < kg.ids[m].size(); ++r) {
      for (int c = 0; c < keys->half(); ++c) {
        float& key = keys->at(m, kg.ids[m][r], c);
        key = static_cast<float>(key - params.addressing_lr * kg.grad[m][r * keys->half() + c]);
      }
    }
  }
}

}  // namespace adaptd
