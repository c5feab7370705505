// The Falcon chunk step against the one-pair-at-a-time recurrence in float64, with the CPU as
// the reference for other backends. Per column j of a group with rates (γ_t, w_t):
//   prediction_t = S_{t−1}ᵀx_t;  ρ_i = v_i − S_{t−1}ᵀx_i (residual) or v_i (target variants);
//   S_t = γ_t S_{t−1} + w_t Σ_{i in window t} x_i ρ_iᵀ.
// Tolerances relative to max(1, max |reference|): double 1e-10, float 2e-4.
#include "kernels/tests/consistency_util.h"

namespace adaptd::kernels {
namespace {

struct FalconCase {
  int64_t d, m, h, c;
  bool residual;
  bool two_groups;
};

template <typename T>
void CheckFalcon(Backend& cpu, Backend& dut, const FalconCase& fc, double tol) {
  SCOPED_TRACE(testing::Message() << "d=" << fc.d << " m=" << fc.m << " h=" << fc.h << " c=" << fc.c
                                  << " residual=" << fc.residual
                                  << " groups=" << (fc.two_groups ? 2 : 1));
  std::mt19937_64 rng(fc.d * 1000 + fc.m * 100 + fc.h * 10 + fc.c + fc.residual);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t e = fc.h + fc.c;
  auto keys = RandomVector<T>(e * fc.d, rng);
  for (int64_t i = 0; i < e; ++i) {  // unit keys, as the store normalises them
    double norm = 0;
    for (int64_t a = 0; a < fc.d; ++a) norm += double(keys[i * fc.d + a]) * keys[i * fc.d + a];
    for (int64_t a = 0; a < fc.d; ++a) keys[i * fc.d + a] = T(keys[i * fc.d + a] / std::sqrt(norm));
  }
  const auto targets = RandomVector<T>(e * fc.m, rng);
  const auto s0 = RandomVector<T>(fc.d * fc.m, rng, 0.5);
  std::vector<int64_t> window(fc.c);
  for (int64_t t = 0; t < fc.c; ++t) {
    window[t] = 1 + static_cast<int64_t>(rng() % std::min<int64_t>(fc.h + t + 1, 3));
  }
  std::vector<std::vector<int64_t>> cols(fc.two_groups ? 2 : 1);
  for (int64_t j = 0; j < fc.m; ++j) cols[fc.two_groups ? j % 2 : 0].push_back(j);
  std::vector<std::vector<double>> log_gamma(cols.size()), rate(cols.size());
  std::vector<FalconColumnGroup> groups;
  for (size_t g = 0; g < cols.size(); ++g) {
    for (int64_t t = 0; t < fc.c; ++t) {
      log_gamma[g].push_back(std::log(0.8 + 0.2 * unit(rng)));
      rate[g].push_back((0.01 + 0.3 * unit(rng)) / window[t]);
    }
    groups.push_back({cols[g], log_gamma[g], rate[g]});
  }
  // The float64 recurrence.
  std::vector<double> s(s0.begin(), s0.end()), pred(fc.c * fc.m);
  for (size_t g = 0; g < cols.size(); ++g) {
    for (int64_t j : cols[g]) {
      for (int64_t t = 0; t < fc.c; ++t) {
        auto apply = [&](int64_t i) {
          double v = 0;
          for (int64_t a = 0; a < fc.d; ++a) v += s[a * fc.m + j] * keys[i * fc.d + a];
          return v;
        };
        pred[t * fc.m + j] = apply(fc.h + t);
        std::vector<double> rho;
        for (int64_t i = fc.h + t - window[t] + 1; i <= fc.h + t; ++i) {
          rho.push_back(targets[i * fc.m + j] - (fc.residual ? apply(i) : 0.0));
        }
        const double gamma = std::exp(log_gamma[g][t]);
        for (int64_t a = 0; a < fc.d; ++a) {
          double add = 0;
          for (int64_t u = 0; u < window[t]; ++u) {
            add += keys[(fc.h + t - window[t] + 1 + u) * fc.d + a] * rho[u];
          }
          s[a * fc.m + j] = gamma * s[a * fc.m + j] + rate[g][t] * add;
        }
      }
    }
  }
  FalconChunk<T> chunk;
  chunk.d = fc.d;
  chunk.m = fc.m;
  chunk.h = fc.h;
  chunk.c = fc.c;
  chunk.keys = keys.data();
  chunk.targets = targets.data();
  chunk.window = window;
  chunk.residual = fc.residual;
  chunk.groups = groups;
  auto s_cpu = s0, s_dut = s0;
  std::vector<T> p_cpu(fc.c * fc.m), p_dut(fc.c * fc.m);
  chunk.s = s_cpu.data();
  chunk.predictions = p_cpu.data();
  ASSERT_TRUE(cpu.FalconChunkStep(chunk).ok());
  chunk.s = s_dut.data();
  chunk.predictions = p_dut.data();
  const absl::Status st = dut.FalconChunkStep(chunk);
  ASSERT_TRUE(st.ok()) << st;
  double scale = 1;
  for (double v : s) scale = std::max(scale, std::abs(v));
  for (double v : pred) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_TRUE(Near(s_cpu[i], s[i], tol, scale)) << "cpu S[" << i << "]";
    ASSERT_TRUE(Near(s_dut[i], s_cpu[i], tol, scale)) << "backend S[" << i << "]";
  }
  for (size_t i = 0; i < pred.size(); ++i) {
    ASSERT_TRUE(Near(p_cpu[i], pred[i], tol, scale)) << "cpu prediction " << i;
    ASSERT_TRUE(Near(p_dut[i], p_cpu[i], tol, scale)) << "backend prediction " << i;
  }
}

TEST_F(ConsistencyTest, FalconChunkStep) {
  for (bool residual : {true, false}) {
    for (bool two : {false, true}) {
      for (const FalconCase& fc :
           {FalconCase{6, 5, 0, 1, residual, two}, FalconCase{6, 5, 2, 4, residual, two},
            FalconCase{16, 3, 2, 7, residual, two}, FalconCase{1, 2, 0, 3, residual, two}}) {
        CheckFalcon<double>(cpu(), under_test(), fc, 1e-10);
        CheckFalcon<float>(cpu(), under_test(), fc, 2e-4);
      }
    }
  }
}

TEST_F(ConsistencyTest, FalconChunkStepRejectsBadChunks) {
  std::vector<double> keys(4, 0.5), targets(2, 1.0), s(2, 0.0);
  const std::vector<int64_t> window = {2}, cols = {0};
  const std::vector<double> lg = {-0.1}, rate = {0.1};
  const std::vector<FalconColumnGroup> groups = {{cols, lg, rate}};
  FalconChunk<double> chunk;
  chunk.d = 2;
  chunk.m = 1;
  chunk.h = 0;
  chunk.c = 1;
  chunk.keys = keys.data();
  chunk.targets = targets.data();
  chunk.window = window;  // 2 pairs, but only 1 exists
  chunk.groups = groups;
  chunk.s = s.data();
  absl::Status st = under_test().FalconChunkStep(chunk);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("chunk.window[0]"), std::string_view::npos) << st;
  const std::vector<int64_t> one = {1};
  chunk.window = one;
  chunk.m = 2;  // column 1 belongs to no group
  std::vector<double> targets2(2, 1.0), s2(4, 0.0);
  chunk.targets = targets2.data();
  chunk.s = s2.data();
  st = under_test().FalconChunkStep(chunk);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s2, std::vector<double>(4, 0.0));
}

}  // namespace
}  // namespace adaptd::kernels
