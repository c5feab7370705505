// The FwPKM chunk update: value and addressing gradients against float64 finite differences,
// the memory rewrite, and the addressing loss against slot-usage collapse.
#include "server/stores/fwpkm_update.h"

#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/fwpkm_keys.h"
#include "server/stores/fwpkm_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::OutputSpec;
using fwpkm_test::Gaussian;

std::vector<FwpkmAddress> Addresses(const FwpkmSubKeys& keys, const std::vector<float>& q,
                                    int items, int k) {
  std::vector<FwpkmAddress> out(items);
  FwpkmScratch scratch;
  for (int t = 0; t < items; ++t) {
    FwpkmAddressOf(keys, q.data() + t * 2 * keys.half(), k, 1e-3f, &scratch, &out[t]);
  }
  return out;
}

TEST(FwpkmUpdateTest, ValueGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(3);
  const int n = 4, half = 2, k = 3, items = 7, w = 3, slots = n * n;
  FwpkmSubKeys keys(n, half, 5);
  const std::vector<float> q = Gaussian(rng, items * 2 * half);
  const std::vector<FwpkmAddress> a = Addresses(keys, q, items, k);
  std::vector<double> v(slots * w), y(items * w), g(items);
  std::uniform_real_distribution<double> unit(0.1, 1.0);
  for (double& x : v) x = unit(rng) - 0.5;
  for (double& x : y) x = unit(rng);
  for (double& x : g) x = unit(rng);
  // L(V) = Σ_t g_t / (2 S_t) ‖y_t − Σ_i s'_i V_i‖², in float64.
  auto loss = [&](const std::vector<double>& vv) {
    double total = 0;
    for (int t = 0; t < items; ++t) {
      double sq = 0;
      for (int i = 0; i < k; ++i) sq += static_cast<double>(a[t].weight[i]) * a[t].weight[i];
      for (int j = 0; j < w; ++j) {
        double r = y[t * w + j];
        for (int i = 0; i < k; ++i) r -= a[t].weight[i] * vv[a[t].slot[i] * w + j];
        total += g[t] / (2 * sq) * r * r;
      }
    }
    return total;
  };
  FwpkmValueGradient grad(w);
  std::vector<double> err(w);
  for (int t = 0; t < items; ++t) {
    for (int j = 0; j < w; ++j) {
      err[j] = -y[t * w + j];
      for (int i = 0; i < k; ++i) err[j] += a[t].weight[i] * v[a[t].slot[i] * w + j];
    }
    grad.Add(a[t], static_cast<float>(g[t]), err.data());
  }
  // The gates pass through float: compare against the loss with those gates.
  for (int t = 0; t < items; ++t) g[t] = static_cast<float>(g[t]);
  std::vector<double> want(slots * w, 0.0);
  const double h = 1e-6;
  for (int s = 0; s < slots * w; ++s) {
    std::vector<double> plus = v, minus = v;
    plus[s] += h;
    minus[s] -= h;
    want[s] = (loss(plus) - loss(minus)) / (2 * h);
  }
  std::vector<double> got(slots * w, 0.0);
  int reads = 0;
  for (int64_t r = 0; r < grad.rows(); ++r) {
    reads += grad.reads(r);
    for (int j = 0; j < w; ++j) got[grad.slot(r) * w + j] = grad.grad(r)[j];
  }
  EXPECT_EQ(reads, items * k);
  for (int s = 0; s < slots * w; ++s) EXPECT_NEAR(got[s], want[s], 1e-6 * (1 + std::abs(want[s])));
}

TEST(FwpkmUpdateTest, AddressingGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(4);
  const int n = 8, half = 3, k = 3, items = 9;
  FwpkmSubKeys keys(n, half, 9);
  std::vector<float> q = Gaussian(rng, items * 2 * half);
  for (float& x : q) x *= 0.3f;
  const std::vector<FwpkmAddress> a = Addresses(keys, q, items, k);
  const FwpkmKeyGradient g = FwpkmAddressingGradient(keys, q.data(), a, 1e-3f);
  ASSERT_FALSE(g.ids[0].empty());
  for (int m = 0; m < 2; ++m) {
    for (size_t r = 0; r < g.ids[m].size(); ++r) {
      for (int c = 0; c < half; ++c) {
        FwpkmSubKeys plus = keys, minus = keys;
        float& kp = plus.at(m, g.ids[m][r], c);
        float& km = minus.at(m, g.ids[m][r], c);
        const float base = kp;
        kp = base + 1e-3f;
        km = base - 1e-3f;
        const double step = static_cast<double>(kp) - km;
        const double fd = (FwpkmAddressingGradient(plus, q.data(), a, 1e-3f).loss -
                           FwpkmAddressingGradient(minus, q.data(), a, 1e-3f).loss) /
                          step;
        EXPECT_NEAR(g.grad[m][r * half + c], fd, 1e-3 * (1 + std::abs(fd)));
      }
    }
  }
}

adapt::v1::StoreSpec RewriteSpec(uint32_t chunk, double addressing_lr) {
  adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_VECTOR, 5, 12);
  spec.mutable_fwpkm()->set_sub_keys(32);
  spec.mutable_fwpkm()->set_chunk(chunk);
  spec.mutable_fwpkm()->set_addressing_lr(addressing_lr);
  return spec;
}

TEST(FwpkmUpdateTest, OneWriterAtRateOneRewritesMemory) {
  std::mt19937_64 rng(5);
  std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(RewriteSpec(1, 0.0));
  const std::vector<float> key = Gaussian(rng, 12);
  for (int round = 0; round < 3; ++round) {  // each write replaces the last value
    const std::vector<float> y = Gaussian(rng, 5);
    ASSERT_TRUE(fwpkm_test::Apply(*store, fwpkm_test::VectorBatch(key, 12, y)).ok());
    auto p = store->Predict(key.data(), 1, 12, 1);
    ASSERT_TRUE(p.ok()) << p.status();
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(p->vectors[j], y[j], 1e-5 * (1 + std::abs(y[j])));
    EXPECT_FLOAT_EQ(p->confidence[0], 1.0f);
  }
}

// Queries from a narrow cone collapse onto a few sub-keys unless the addressing loss spreads
// them: the loss must raise the entropy of sub-key usage and the slots written.
TEST(FwpkmUpdateTest, AddressingLossRaisesSlotUsageEntropy) {
  std::mt19937_64 rng(6);
  const int dim = 16, items = 2048;
  const std::vector<float> centre = Gaussian(rng, dim);
  std::vector<float> keys = Gaussian(rng, items * dim);
  for (int t = 0; t < items; ++t) {
    for (int c = 0; c < dim; ++c) keys[t * dim + c] = 4 * centre[c] + 0.5f * keys[t * dim + c];
  }
  const std::vector<float> targets = Gaussian(rng, items * 4);
  auto run = [&](double lr) {
    adapt::v1::StoreSpec spec = fwpkm_test::Spec(OutputSpec::KIND_VECTOR, 4, dim);
    spec.mutable_fwpkm()->set_sub_keys(64);
    spec.mutable_fwpkm()->set_chunk(64);
    spec.mutable_fwpkm()->set_addressing_lr(lr);
    std::unique_ptr<FwpkmStore> store = fwpkm_test::Make(spec);
    EXPECT_TRUE(fwpkm_test::Apply(*store, fwpkm_test::VectorBatch(keys, dim, targets)).ok());
    adapt::v1::StoreInfo info;
    store->Describe(&info);
    return info.fwpkm();
  };
  const adapt::v1::FwpkmStats fixed = run(0.0), spread = run(1.0);
  EXPECT_GT(spread.addressing_entropy(), fixed.addressing_entropy() + 0.1)
      << fixed.addressing_entropy() << " vs " << spread.addressing_entropy();
  EXPECT_GT(spread.slots_used(), fixed.slots_used());
}

}  // namespace
}  // namespace adaptd
