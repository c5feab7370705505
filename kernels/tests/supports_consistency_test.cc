// Supports (backend.h) answers what the backend under test runs itself: the CPU every call; the
// CUDA backend every op within int extents, top-k up to k = 64 and Falcon chunks up to 4096
// steps. The calls it does not support run on the host and give the CPU's result bit for bit.
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/tests/consistency_util.h"

namespace adaptd::kernels {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

TEST_F(ConsistencyTest, SupportsIsHonest) {
  for (Op op : kAllOps) {
    SCOPED_TRACE(OpName(op));
    EXPECT_TRUE(under_test().Supports(op));
    EXPECT_TRUE(under_test().Supports(OpCall{op, kIntMax}));
    // Beyond int only the CPU runs a call (the BLAS ops refuse such calls before asking).
    EXPECT_EQ(under_test().Supports(OpCall{op, kIntMax + 1}), !on_device());
  }
  const auto top_k = [&](int64_t k) { return under_test().Supports({Op::kTopK, 1000, 1000, k}); };
  EXPECT_TRUE(top_k(64));
  EXPECT_EQ(top_k(65), !on_device());
  const auto falcon = [&](int64_t steps) {
    return under_test().Supports({Op::kFalconChunkStep, 100, 0, 0, steps});
  };
  EXPECT_TRUE(falcon(4096));
  EXPECT_EQ(falcon(4097), !on_device());
  const auto product_keys = [&](int64_t n) {
    return under_test().Supports({Op::kProductKeyScores, 1000, n, 8});
  };
  EXPECT_TRUE(product_keys(int64_t{65535} * 128));
  EXPECT_EQ(product_keys(int64_t{65535} * 128 + 1), !on_device());
}

TEST_F(ConsistencyTest, TopKBeyondTheDeviceLimitGivesTheCpuResult) {
  std::mt19937_64 rng(21);
  const int64_t rows = 5, n = 700;
  const int k = 130;
  ASSERT_FALSE(on_device() && under_test().Supports({Op::kTopK, n, n, k}));
  const auto x = RandomVector<float>(rows * n, rng);
  std::vector<int32_t> idx_cpu(rows * k), idx_dut(rows * k);
  std::vector<float> val_cpu(rows * k), val_dut(rows * k);
  ASSERT_TRUE(cpu().TopK(rows, n, x.data(), n, k, idx_cpu.data(), val_cpu.data()).ok());
  ASSERT_TRUE(under_test().TopK(rows, n, x.data(), n, k, idx_dut.data(), val_dut.data()).ok());
  EXPECT_EQ(idx_dut, idx_cpu);
  EXPECT_EQ(val_dut, val_cpu);
}

TEST_F(ConsistencyTest, FalconChunkBeyondTheDeviceLimitGivesTheCpuResult) {
  std::mt19937_64 rng(22);
  const int64_t d = 4, m = 2, h = 1, c = 4100;
  ASSERT_FALSE(on_device() && under_test().Supports({Op::kFalconChunkStep, c, 0, 0, c}));
  const auto keys = RandomVector<double>((h + c) * d, rng, 0.5);
  const auto targets = RandomVector<double>((h + c) * m, rng);
  std::vector<int64_t> window(c);
  for (int64_t t = 0; t < c; ++t) window[t] = std::min<int64_t>(h + t + 1, 2);
  const std::vector<int64_t> cols = {0, 1};
  const std::vector<double> log_gamma(c, -0.01), rate(c, 0.05);
  const std::vector<FalconColumnGroup> groups = {{cols, log_gamma, rate}};
  // The residual variant only: the masked one's c × e coefficients cost seconds on the CPU.
  std::vector<double> s_cpu(d * m, 0.1), s_dut = s_cpu, p_cpu(c * m), p_dut(c * m);
  FalconChunk<double> chunk{
      d, m, h, c, keys.data(), targets.data(), window, true, groups, s_cpu.data(), p_cpu.data()};
  ASSERT_TRUE(cpu().FalconChunkStep(chunk).ok());
  chunk.s = s_dut.data();
  chunk.predictions = p_dut.data();
  ASSERT_TRUE(under_test().FalconChunkStep(chunk).ok());
  EXPECT_EQ(s_dut, s_cpu);
  EXPECT_EQ(p_dut, p_cpu);
}

}  // namespace
}  // namespace adaptd::kernels
