#include "server/encoders/bert/bert_ops.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace adaptd::bert {
namespace {

TEST(BertOpsTest, FastErfMatchesErf) {
  double worst = 0;
  for (double x = -8; x <= 8; x += 1e-3) {
    worst = std::max(worst, std::fabs(FastErf(static_cast<float>(x)) -
                                      std::erf(static_cast<double>(static_cast<float>(x)))));
  }
  EXPECT_LT(worst, 5e-7);  // a few float ulps near ±1
  EXPECT_LT(std::fabs(FastErf(0.0f)), 1e-8);
  EXPECT_EQ(FastErf(30.0f), 1.0f);
  EXPECT_EQ(FastErf(-30.0f), -1.0f);
}

TEST(BertOpsTest, BiasGeluIsTheExactForm) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-6, 6);
  const int rows = 3, cols = 37;
  std::vector<float> x(rows * cols), bias(cols), y;
  for (float& v : x) v = u(rng);
  for (float& v : bias) v = u(rng) / 4;
  y = x;
  BiasGelu(rows, cols, y.data(), bias.data());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const double v = static_cast<double>(x[r * cols + c]) + bias[c];
      const double want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(y[r * cols + c], want, 1e-5 * std::max(1.0, std::fabs(want)));
    }
  }
}

TEST(BertOpsTest, LayerNormMatchesDoubleOnLargeOffsets) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  const int rows = 4, cols = 384;
  std::vector<float> x(rows * cols), res(rows * cols), bias(cols), g(cols), b(cols);
  for (int i = 0; i < rows * cols; ++i) {
    x[i] = 1000 + u(rng);  // a large common offset stresses the variance
    res[i] = u(rng);
  }
  for (int c = 0; c < cols; ++c) {
    bias[c] = u(rng);
    g[c] = 1 + u(rng) / 5;
    b[c] = u(rng) / 5;
  }
  std::vector<float> y = x;
  BiasResidualLayerNorm(rows, cols, y.data(), bias.data(), res.data(), g.data(), b.data(), 1e-12);
  for (int r = 0; r < rows; ++r) {
    std::vector<double> v(cols);
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) {
      // The float sum is what the implementation normalises; the reference repeats it.
      v[c] = static_cast<float>(x[r * cols + c] + bias[c] + res[r * cols + c]);
      mean += v[c];
    }
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= cols;
    for (int c = 0; c < cols; ++c) {
      const double want = (v[c] - mean) / std::sqrt(var + 1e-12) * g[c] + b[c];
      EXPECT_NEAR(y[r * cols + c], want, 2e-4);
    }
  }
}

TEST(BertOpsTest, SoftmaxIsStableForLargeScores) {
  std::vector<float> x = {1000, 1001, 1002, -1e30f, 0, 0};
  SoftmaxRows(2, 3, x.data());
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_NEAR(x[0], 1 / z, 1e-6);
  EXPECT_NEAR(x[2], std::exp(2.0) / z, 1e-6);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_NEAR(x[4], 0.5, 1e-7);
}

TEST(BertOpsTest, AddBiasRespectsTheLeadingDimension) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const float bias[] = {10, 20};
  AddBias(2, 2, 3, x.data(), bias);
  EXPECT_EQ(x, (std::vector<float>{11, 22, 3, 14, 25, 6}));
}

}  // namespace
}  // namespace adaptd::bert
