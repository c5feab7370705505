// The dispatch of Backend's public methods (backend.h): a call the backend does not support
// runs on HostBackend() and gives the CPU's result bit for bit without reaching the backend's
// Impl; a supported call reaches the Impl. RecordingBackend says which way each call went.
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "kernels/tests/recording_backend.h"

namespace adaptd::kernels {
namespace {

std::vector<float> Floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(HostBackendTest, IsTheCpuAndSupportsEveryCall) {
  EXPECT_EQ(HostBackend().name(), "cpu");
  EXPECT_EQ(&HostBackend(), &HostBackend());
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();
  std::unique_ptr<Backend> cpu = MakeCpuBackend();
  for (Op op : kAllOps) {
    EXPECT_TRUE(cpu->Supports(op)) << OpName(op);
    EXPECT_TRUE(cpu->Supports(OpCall{op, kHuge, kHuge, kHuge, kHuge})) << OpName(op);
  }
}

// Runs `call` (which writes into `out`) on a RecordingBackend that does or does not support
// `op`, and on the CPU; expects the same bits and the Impl reached exactly when supported.
template <typename T, typename Call>
void ExpectDispatch(Op op, std::vector<T> initial, Call call) {
  std::unique_ptr<Backend> cpu = MakeCpuBackend();
  std::vector<T> want = initial;
  ASSERT_TRUE(call(*cpu, want.data()).ok());
  for (bool supported : {false, true}) {
    SCOPED_TRACE(testing::Message() << OpName(op) << (supported ? " supported" : " unsupported"));
    RecordingBackend recording;
    recording.SetSupported(op, supported);
    EXPECT_EQ(recording.Supports(op), supported);
    std::vector<T> got = initial;
    ASSERT_TRUE(call(recording, got.data()).ok());
    EXPECT_EQ(got, want);
    EXPECT_EQ(recording.impl_calls(op), supported ? 1 : 0);
  }
}

TEST(FallbackTest, UnsupportedCallsRunOnTheHost) {
  const std::vector<float> a = Floats(7 * 5, 1), b = Floats(5 * 3, 2);
  ExpectDispatch<float>(Op::kGemm, Floats(7 * 3, 3), [&](Backend& be, float* c) {
    return be.Gemm(Trans::kNo, Trans::kNo, 7, 3, 5, 1.5f, a.data(), 5, b.data(), 3, 0.5f, c, 3);
  });
  ExpectDispatch<float>(Op::kGemv, Floats(7, 4), [&](Backend& be, float* y) {
    return be.Gemv(Trans::kNo, 7, 5, 1.0f, a.data(), 5, b.data(), -1.0f, y);
  });
  ExpectDispatch<double>(Op::kSyrkAccumulate, std::vector<double>(25, 1.0),
                         [&](Backend& be, double* c) {
                           return be.SyrkUpperAccumulate(5, 7, 1.0, a.data(), 5, 1.0, c, 5);
                         });
  const std::vector<float> x = Floats(4 * 300, 5);
  ExpectDispatch<float>(Op::kTopK, std::vector<float>(4 * 100), [&](Backend& be, float* val) {
    std::vector<int32_t> idx(4 * 100);
    return be.TopK(4, 300, x.data(), 300, 100, idx.data(), val);
  });
  const std::vector<int64_t> rows = {2, 0, 2};
  ExpectDispatch<float>(Op::kRowScatterAdd, Floats(4 * 5, 6), [&](Backend& be, float* dst) {
    return be.RowScatterAdd(3, 5, rows.data(), 0.5f, a.data(), 5, dst, 5, 4);
  });
  ExpectDispatch<float>(
      Op::kGroupedGemm, std::vector<float>(2 * 3 + 7 * 3), [&](Backend& be, float* c) {
        const GemmGroup groups[2] = {{2, 3, 5, a.data(), 5, b.data(), 3, c, 3},
                                     {7, 3, 5, a.data(), 5, b.data(), 3, c + 6, 3}};
        return be.GroupedGemm(groups);
      });
  const std::vector<float> q = Floats(3 * 8, 7), tables = Floats(2 * 4 * 16, 8);
  ExpectDispatch<float>(
      Op::kProductKeyScores, std::vector<float>(3 * 2 * 4), [&](Backend& be, float* score) {
        std::vector<int32_t> idx(3 * 2 * 4);
        ProductKeyQuery query{3,          4,        16, 4,
                              1e-3f,      q.data(), 8,  {tables.data(), tables.data() + 64},
                              idx.data(), score};
        return be.ProductKeyScores(query);
      });
}

TEST(FallbackTest, UnsupportedDecompositionsRunOnTheHost) {
  // A = MᵀM + I, symmetric positive definite.
  const std::vector<float> m = Floats(6 * 6, 9);
  std::vector<double> spd(36, 0.0);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      for (int l = 0; l < 6; ++l) spd[i * 6 + j] += double{m[l * 6 + i]} * m[l * 6 + j];
    }
    spd[i * 6 + i] += 1.0;
  }
  ExpectDispatch<double>(Op::kSymmetricEigen, spd, [](Backend& be, double* a) {
    std::vector<double> w(6);
    return be.SymmetricEigen(6, a, w.data());
  });
  ExpectDispatch<double>(Op::kCholeskySolve, spd, [](Backend& be, double* a) {
    std::vector<double> rhs(6 * 2, 1.0);
    return be.CholeskySolve(6, 2, a, rhs.data());
  });
  const std::vector<double> k = {1, 2, 3, 4, 5, 6};
  ExpectDispatch<double>(Op::kSyrk, std::vector<double>(9, 2.0), [&](Backend& be, double* c) {
    return be.SyrkUpper(3, 2, 1.0, k.data(), 3, 0.5, c, 3);
  });
}

TEST(FallbackTest, UnsupportedFalconChunkRunsWhollyOnTheHost) {
  const int64_t d = 3, m = 2, h = 1, c = 6;
  std::vector<double> keys(static_cast<size_t>((h + c) * d)), targets((h + c) * m);
  std::mt19937_64 rng(10);
  std::normal_distribution<double> normal;
  for (double& v : keys) v = normal(rng);
  for (double& v : targets) v = normal(rng);
  std::vector<int64_t> window(c);
  for (int64_t t = 0; t < c; ++t) window[t] = std::min<int64_t>(h + t + 1, 3);
  const std::vector<int64_t> cols = {0, 1};
  const std::vector<double> lg(c, -0.05), rate(c, 0.2);
  const std::vector<FalconColumnGroup> groups = {{cols, lg, rate}};
  ExpectDispatch<double>(
      Op::kFalconChunkStep, std::vector<double>(d * m, 0.1), [&](Backend& be, double* s) {
        FalconChunk<double> chunk{d, m, h, c, keys.data(), targets.data(), window, true, groups, s};
        return be.FalconChunkStep(chunk);
      });
  // The fallback's products ran on the host too: none reached the recording backend's Gemm.
  RecordingBackend recording;
  recording.SetSupported(Op::kFalconChunkStep, false);
  std::vector<double> s(d * m, 0.0);
  FalconChunk<double> chunk{d,      m,     h,      c,       keys.data(), targets.data(),
                            window, false, groups, s.data()};
  ASSERT_TRUE(recording.FalconChunkStep(chunk).ok());
  EXPECT_EQ(recording.impl_calls(Op::kGemm), 0);
}

}  // namespace
}  // namespace adaptd::kernels
