#include "server/encoders/bert/bert_ops.h"

#include <algorithm>
#include <cmath>

namespace adaptd::bert {

// Built for AVX-512, AVX2 and baseline x86-64, chosen at load time: the element-wise loops are
// a visible share of the forward pass once GEMMs use wide kernels.
#if defined(__x86_64__) && defined(__GNUC__)
#define ADAPTD_BERT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ADAPTD_BERT_CLONES
#endif

ADAPTD_BERT_CLONES void BiasResidualLayerNorm(int64_t rows, int64_t cols, float* x,
                                              const float* bias, const float* residual,
                                              const float* gamma, const float* beta, double eps) {
  // Sums run in kLanes independent float accumulators (vectorisable), folded in double.
  constexpr int kLanes = 16;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const float* res = residual ? residual + r * cols : nullptr;
    if (bias && res) {
      for (int64_t c = 0; c < cols; ++c) row[c] += bias[c] + res[c];
    } else if (bias) {
      for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
    } else if (res) {
      for (int64_t c = 0; c < cols; ++c) row[c] += res[c];
    }
    float acc[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) acc[l] += row[c + l];
    }
    double sum = 0;
    for (; c < cols; ++c) sum += row[c];
    for (int l = 0; l < kLanes; ++l) sum += acc[l];
    const float mean = static_cast<float>(sum / static_cast<double>(cols));
    float sq[kLanes] = {};
    c = 0;
    for (; c + kLanes <= cols; c += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const float d = row[c + l] - mean;
        sq[l] += d * d;
      }
    }
    double var = 0;
    for (; c < cols; ++c) var += static_cast<double>(row[c] - mean) * (row[c] - mean);
    for (int l = 0; l < kLanes; ++l) var += sq[l];
    const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(cols) + eps));
    for (c = 0; c < cols; ++c) row[c] = (row[c] - mean) * inv * gamma[c] + beta[c];
  }
}

namespace {

inline float ErfApprox(float x) {
  // A rational minimax approximation x·P(x²)/Q(x²) on [-4, 4] (outside it erf is ±1 in
  // float), as Eigen's and XLA's float erf: no exp and no branch, so loops vectorise.
  x = std::clamp(x, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

}  // namespace

float FastErf(float x) { return ErfApprox(x); }

ADAPTD_BERT_CLONES void BiasGelu(int64_t rows, int64_t cols, float* x, const float* bias) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = bias ? row[c] + bias[c] : row[c];
      row[c] = 0.5f * v * (1.0f + ErfApprox(v * kInvSqrt2));
    }
  }
}

void BroadcastRows(int64_t rows, int64_t cols, float* x, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + cols, x + r * cols);
}

void AddBias(int64_t rows, int64_t cols, int64_t ld, float* x, const float* bias) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

void SoftmaxRows(int64_t rows, int64_t cols, float* x) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const float max = *std::max_element(row, row + cols);
    float sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = std::exp(row[c] - max);
      sum += row[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
  }
}

}  // namespace adaptd::bert
