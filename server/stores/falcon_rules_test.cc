// The Falcon update rules: chunk-parallel ingest against the one-at-a-time recurrence (every
// variant, chunk sizes 1 to 128, streams of 1 to 1,000 steps, weak and strong decay, float64
// and float32), the window = 1 reductions, and Falcon-1 with λ = ε = 0 against textbook NLMS.
#include "server/stores/falcon_rules.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/stores/falcon_chunked.h"

namespace adaptd {
namespace {

constexpr FalconVariant kAll[] = {FalconVariant::k1,  FalconVariant::k2,  FalconVariant::k3,
                                  FalconVariant::k1A, FalconVariant::k2A, FalconVariant::k3A};

const char* Name(FalconVariant v) {
  static const char* kNames[] = {"1", "2", "3", "1A", "2A", "3A"};
  return kNames[static_cast<int>(v)];
}

std::vector<double> Normal(std::mt19937_64& rng, int64_t n, double scale = 1.0) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

double RelError(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Weak decay: λ small next to the key energy. Strong: λ large with β > 1, so η·λ passes
// 1 − ε_γ and γ sits at the clamp.
FalconConfig ConfigFor(FalconVariant v, bool strong, int64_t m, std::mt19937_64& rng) {
  FalconConfig c;
  c.variant = v;
  c.window = (v == FalconVariant::k3 || v == FalconVariant::k3A) ? 4 : 1;
  c.lambda = strong ? 1e4 : 0.05;
  c.eps = 1e-6;
  c.eps_gamma = 1e-3;
  c.beta = {strong ? 1.5 : 0.7};
  if (v == FalconVariant::k2 || v == FalconVariant::k2A) {
    std::uniform_real_distribution<double> u(0.2, 1.8);
    c.beta.resize(m);
    for (int64_t j = 0; j < m; ++j) c.beta[j] = j == 1 ? c.beta[0] : u(rng);
  }
  return c;
}

struct Stream {
  std::vector<double> keys, targets;
};

Stream RandomStream(std::mt19937_64& rng, int64_t n, int64_t d, int64_t m) {
  return {Normal(rng, n * d), Normal(rng, n * m)};
}

class FalconRulesTest : public ::testing::Test {
 protected:
  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
};

TEST_F(FalconRulesTest, ChunkedEqualsRecurrentFloat64) {
  struct Case {
    int64_t steps, chunk, d, m;
  };
  const Case cases[] = {{1, 1, 5, 3},     {1, 64, 7, 2},    {9, 4, 6, 3},      {200, 1, 5, 2},
                        {333, 16, 12, 4}, {1000, 64, 8, 3}, {700, 128, 10, 3}, {130, 128, 70, 5}};
  std::mt19937_64 rng(7);
  double worst = 0;
  for (FalconVariant v : kAll) {
    for (bool strong : {false, true}) {
      for (const Case& k : cases) {
        SCOPED_TRACE(testing::Message() << "variant " << Name(v) << (strong ? " strong" : " weak")
                                        << " steps " << k.steps << " chunk " << k.chunk);
        const FalconConfig config = ConfigFor(v, strong, k.m, rng);
        const Stream s = RandomStream(rng, k.steps, k.d, k.m);
        FalconMemory rec, chunked;
        rec.Reset(k.d, k.m);
        chunked.Reset(k.d, k.m);
        std::vector<double> pred_rec(k.steps * k.m), pred_chunked(k.steps * k.m);
        FalconRecurrent(config, s.keys.data(), s.targets.data(), k.steps, &rec, pred_rec.data());
        ASSERT_TRUE(FalconChunked(config, k.chunk, s.keys.data(), s.targets.data(), k.steps,
                                  &chunked, pred_chunked.data(), backend_.get())
                        .ok());
        const double e_s = RelError(chunked.s, rec.s);
        const double e_p = RelError(pred_chunked, pred_rec);
        worst = std::max({worst, e_s, e_p});
        EXPECT_LT(e_s, 1e-10);
        EXPECT_LT(e_p, 1e-10);
        EXPECT_EQ(chunked.history, rec.history);
        EXPECT_EQ(chunked.history_keys, rec.history_keys);
      }
    }
  }
  RecordProperty("max_rel_error", std::to_string(worst));
  std::printf("chunked vs recurrent float64: max relative error %.3g\n", worst);
}

TEST_F(FalconRulesTest, ChunkedEqualsRecurrentFloat32) {
  std::mt19937_64 rng(11);
  double worst = 0;
  for (FalconVariant v : kAll) {
    for (bool strong : {false, true}) {
      for (int64_t chunk : {1, 13, 64, 128}) {
        SCOPED_TRACE(testing::Message() << "variant " << Name(v) << " chunk " << chunk);
        const int64_t n = 400, d = 16, m = 3;
        const FalconConfig config = ConfigFor(v, strong, m, rng);
        const Stream s = RandomStream(rng, n, d, m);
        FalconMemory rec;
        rec.Reset(d, m);
        std::vector<double> pred_rec(n * m);
        // The float32 stream, read back exactly in float64 for the reference.
        std::vector<float> keys(s.keys.begin(), s.keys.end());
        std::vector<float> targets(s.targets.begin(), s.targets.end());
        const std::vector<double> keys64(keys.begin(), keys.end());
        const std::vector<double> targets64(targets.begin(), targets.end());
        FalconRecurrent(config, keys64.data(), targets64.data(), n, &rec, pred_rec.data());
        FalconMemoryT<float> chunked;
        chunked.Reset(d, m);
        std::vector<float> pred(n * m);
        ASSERT_TRUE(FalconChunked(config, chunk, keys.data(), targets.data(), n, &chunked,
                                  pred.data(), backend_.get())
                        .ok());
        const double e_s = RelError(std::vector<double>(chunked.s.begin(), chunked.s.end()), rec.s);
        const double e_p = RelError(std::vector<double>(pred.begin(), pred.end()), pred_rec);
        worst = std::max({worst, e_s, e_p});
        EXPECT_LT(e_s, 1e-4);
        EXPECT_LT(e_p, 1e-4);
      }
    }
  }
  std::printf("chunked float32 vs recurrent float64: max relative error %.3g\n", worst);
}

// A stream split anywhere (the history carries the window) equals the stream in one piece.
TEST_F(FalconRulesTest, SplitStreamContinuesExactly) {
  std::mt19937_64 rng(5);
  for (FalconVariant v : kAll) {
    SCOPED_TRACE(Name(v));
    const int64_t n = 90, d = 6, m = 2;
    const FalconConfig config = ConfigFor(v, false, m, rng);
    const Stream s = RandomStream(rng, n, d, m);
    FalconMemory whole, split;
    whole.Reset(d, m);
    split.Reset(d, m);
    FalconRecurrent(config, s.keys.data(), s.targets.data(), n, &whole, nullptr);
    int64_t at = 0;
    for (int64_t part : {1, 2, 30, 57}) {
      ASSERT_TRUE(FalconChunked(config, 8, s.keys.data() + at * d, s.targets.data() + at * m, part,
                                &split, nullptr, backend_.get())
                      .ok());
      at += part;
    }
    EXPECT_LT(RelError(split.s, whole.s), 1e-12);
  }
}

TEST(FalconScheduleTest, ScheduledBeta) {
  FalconConfig c;
  EXPECT_EQ(c.ScheduledBeta(0.7, 1000), 0.7);  // no schedule
  c.beta_half_life = 10;
  c.beta_min = 0.05;
  EXPECT_EQ(c.ScheduledBeta(0.8, 1), 0.8);
  EXPECT_DOUBLE_EQ(c.ScheduledBeta(0.8, 11), 0.4);
  EXPECT_DOUBLE_EQ(c.ScheduledBeta(0.8, 31), 0.2);
  EXPECT_EQ(c.ScheduledBeta(0.8, 1000000), 0.05);  // the floor
}

// With a β schedule the chunked form, split anywhere, still equals the recurrence: the memory's
// step count carries the schedule's clock across calls.
TEST_F(FalconRulesTest, ScheduleContinuesAcrossChunksAndCalls) {
  std::mt19937_64 rng(19);
  for (FalconVariant v : kAll) {
    SCOPED_TRACE(Name(v));
    const int64_t n = 300, d = 6, m = 3;
    FalconConfig config = ConfigFor(v, false, m, rng);
    config.beta_half_life = 9;
    config.beta_min = 0.05;
    const Stream s = RandomStream(rng, n, d, m);
    FalconMemory whole, split, constant;
    whole.Reset(d, m);
    split.Reset(d, m);
    constant.Reset(d, m);
    FalconRecurrent(config, s.keys.data(), s.targets.data(), n, &whole, nullptr);
    EXPECT_EQ(whole.steps, n);
    int64_t at = 0;
    for (int64_t part : {1, 70, 64, 165}) {
      ASSERT_TRUE(FalconChunked(config, 64, s.keys.data() + at * d, s.targets.data() + at * m, part,
                                &split, nullptr, backend_.get())
                      .ok());
      at += part;
      EXPECT_EQ(split.steps, at);
    }
    EXPECT_LT(RelError(split.s, whole.s), 1e-10);
    // The schedule changes the result: a clock reset at each call would too.
    FalconConfig fixed = config;
    fixed.beta_half_life = 0;
    FalconRecurrent(fixed, s.keys.data(), s.targets.data(), n, &constant, nullptr);
    EXPECT_GT(RelError(constant.s, whole.s), 1e-3);
  }
}

TEST_F(FalconRulesTest, WindowOneReducesThreeToOne) {
  std::mt19937_64 rng(3);
  const int64_t n = 150, d = 9, m = 4;
  const Stream s = RandomStream(rng, n, d, m);
  for (auto [windowed, plain] : {std::pair{FalconVariant::k3, FalconVariant::k1},
                                 std::pair{FalconVariant::k3A, FalconVariant::k1A}}) {
    FalconConfig a = ConfigFor(plain, false, m, rng);
    FalconConfig b = a;
    b.variant = windowed;
    b.window = 1;
    FalconMemory ma, mb;
    ma.Reset(d, m);
    mb.Reset(d, m);
    FalconRecurrent(a, s.keys.data(), s.targets.data(), n, &ma, nullptr);
    FalconRecurrent(b, s.keys.data(), s.targets.data(), n, &mb, nullptr);
    EXPECT_EQ(ma.s, mb.s);
    ma.Reset(d, m);
    mb.Reset(d, m);
    ASSERT_TRUE(
        FalconChunked(a, 32, s.keys.data(), s.targets.data(), n, &ma, nullptr, backend_.get())
            .ok());
    ASSERT_TRUE(
        FalconChunked(b, 32, s.keys.data(), s.targets.data(), n, &mb, nullptr, backend_.get())
            .ok());
    EXPECT_EQ(ma.s, mb.s);
  }
}

TEST_F(FalconRulesTest, VariantTwoWithOneBetaIsVariantOne) {
  std::mt19937_64 rng(13);
  const int64_t n = 80, d = 5, m = 3;
  const Stream s = RandomStream(rng, n, d, m);
  FalconConfig one = ConfigFor(FalconVariant::k1, false, m, rng);
  FalconConfig two = one;
  two.variant = FalconVariant::k2;
  two.beta.assign(m, one.beta[0]);
  FalconMemory a, b;
  a.Reset(d, m);
  b.Reset(d, m);
  FalconRecurrent(one, s.keys.data(), s.targets.data(), n, &a, nullptr);
  FalconRecurrent(two, s.keys.data(), s.targets.data(), n, &b, nullptr);
  EXPECT_EQ(a.s, b.s);
}

// Textbook normalised LMS, one output at a time: w ← w + μ·e·x/‖x‖², e = y − wᵀx.
TEST_F(FalconRulesTest, FalconOneWithoutRidgeIsNlms) {
  std::mt19937_64 rng(17);
  const int64_t n = 500, d = 8, m = 2;
  const double mu = 0.6;
  const Stream s = RandomStream(rng, n, d, m);
  std::vector<double> w(d * m, 0.0);  // column j: weights of output j
  for (int64_t j = 0; j < m; ++j) {
    std::vector<double> wj(d, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const double* x = s.keys.data() + t * d;
      double yhat = 0, energy = 0;
      for (int64_t i = 0; i < d; ++i) {
        yhat += wj[i] * x[i];
        energy += x[i] * x[i];
      }
      const double err = s.targets[t * m + j] - yhat;
      for (int64_t i = 0; i < d; ++i) wj[i] += mu * err * x[i] / energy;
    }
    for (int64_t i = 0; i < d; ++i) w[i * m + j] = wj[i];
  }
  FalconConfig c;
  c.variant = FalconVariant::k1;
  c.beta = {mu};
  c.lambda = 0;
  c.eps = 0;
  FalconMemory rec, chunked;
  rec.Reset(d, m);
  chunked.Reset(d, m);
  FalconRecurrent(c, s.keys.data(), s.targets.data(), n, &rec, nullptr);
  ASSERT_TRUE(
      FalconChunked(c, 64, s.keys.data(), s.targets.data(), n, &chunked, nullptr, backend_.get())
          .ok());
  EXPECT_LT(RelError(rec.s, w), 1e-12);
  EXPECT_LT(RelError(chunked.s, w), 1e-10);
}

TEST(FalconTopEigenvalueTest, MatchesClosedForms) {
  EXPECT_DOUBLE_EQ(TopEigenvalue({3.0}, 1), 3.0);
  EXPECT_NEAR(TopEigenvalue({2, 1, 1, 2}, 2), 3.0, 1e-14);
  // Rank one: x xᵀ has top eigenvalue ‖x‖².
  const std::vector<double> x = {1, -2, 0.5, 3};
  std::vector<double> a(16);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) a[i * 4 + j] = x[i] * x[j];
  }
  EXPECT_NEAR(TopEigenvalue(a, 4), 1 + 4 + 0.25 + 9, 1e-12);
}

}  // namespace
}  // namespace adaptd
