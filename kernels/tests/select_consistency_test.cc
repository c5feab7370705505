// Top-k, row scatter-add and product-key scoring: the CPU against float64 (or exact float)
// references, the backend under test against the CPU. Top-k is exact on every backend (indices
// and values equal). Scatter-add: 1e-5 (CPU) and 2e-5 (device) of Σ|terms| per entry.
// Product-key scores: the CPU equals a brute-force sort of the exact float scores; a device may
// differ from the CPU by logf's last-place rounding (relative 1e-6), so its ranking may swap
// only entries whose CPU scores lie that close.
#include <numeric>

#include "kernels/tests/consistency_util.h"

namespace adaptd::kernels {
namespace {

bool RefBetter(float va, int32_t ia, float vb, int32_t ib) {
  const bool na = std::isnan(va), nb = std::isnan(vb);
  if (na || nb) return na == nb ? ia < ib : nb;
  return va > vb || (va == vb && ia < ib);
}

void CheckTopK(Backend& cpu, Backend& dut, int64_t rows, int64_t n, int k, bool ties, bool nans) {
  SCOPED_TRACE(testing::Message() << "rows=" << rows << " n=" << n << " k=" << k << " ties=" << ties
                                  << " nans=" << nans);
  std::mt19937_64 rng(rows * 1009 + n * 17 + k);
  const int64_t ldx = n + 5;
  auto x = RandomVector<float>(std::max<int64_t>(rows * ldx, 1), rng);
  for (float& v : x) {
    if (ties) v = std::round(v * 2);  // few distinct values: many ties
    if (nans && rng() % 7 == 0) v = std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<int32_t> idx_cpu(rows * k, -1), idx_dut(rows * k, -2);
  std::vector<float> val_cpu(rows * k), val_dut(rows * k);
  ASSERT_TRUE(cpu.TopK(rows, n, x.data(), ldx, k, idx_cpu.data(), val_cpu.data()).ok());
  const absl::Status s = dut.TopK(rows, n, x.data(), ldx, k, idx_dut.data(), val_dut.data());
  ASSERT_TRUE(s.ok()) << s;
  std::vector<int32_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * ldx;
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [row](int32_t a, int32_t b) { return RefBetter(row[a], a, row[b], b); });
    for (int j = 0; j < k; ++j) {
      ASSERT_EQ(idx_cpu[r * k + j], order[j]) << "cpu, row " << r << " rank " << j;
      ASSERT_EQ(idx_dut[r * k + j], order[j]) << "backend, row " << r << " rank " << j;
      const float want = row[order[j]];
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(val_cpu[r * k + j]) && std::isnan(val_dut[r * k + j]));
      } else {
        ASSERT_EQ(val_cpu[r * k + j], want);
        ASSERT_EQ(val_dut[r * k + j], want);
      }
    }
  }
}

TEST_F(ConsistencyTest, TopK) {
  for (int64_t rows : {0, 1, 5, 33}) {
    for (int64_t n : {1, 7, 100, 1000}) {
      for (int k : {1, 5, 32, 33, 64, 100}) {
        if (k > n) continue;
        CheckTopK(cpu(), under_test(), rows, n, k, false, false);
        CheckTopK(cpu(), under_test(), rows, n, k, true, false);
        CheckTopK(cpu(), under_test(), rows, n, k, false, true);
      }
    }
  }
  float x[4] = {1, 2, 3, 4};
  int32_t idx[8];
  float val[8];
  const absl::Status too_many = under_test().TopK(1, 4, x, 4, 5, idx, val);
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.message().find("exceeds the row length"), std::string_view::npos) << too_many;
  EXPECT_EQ(under_test().TopK(1, 4, x, 4, -1, idx, val).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(under_test().TopK(1, 4, x, 4, 0, idx, val).ok());
}

void CheckScatterAdd(Backend& cpu, Backend& dut, int64_t rows, int64_t n, int64_t dst_count,
                     double scale) {
  SCOPED_TRACE(testing::Message() << "rows=" << rows << " n=" << n << " dst=" << dst_count
                                  << " scale=" << scale);
  std::mt19937_64 rng(rows * 31 + n * 7 + dst_count);
  const int64_t lds = n + 1, ldd = n + 4;
  auto src = RandomVector<float>(std::max<int64_t>(rows * lds, 1), rng, scale);
  auto dst0 = RandomVector<float>(std::max<int64_t>(dst_count * ldd, 1), rng, scale);
  std::vector<int64_t> to(rows);
  for (int64_t& t : to) t = static_cast<int64_t>(rng() % dst_count);  // repeats
  const float alpha = -1.5f;
  std::vector<double> want(dst0.begin(), dst0.end()), mag(dst0.size());
  for (size_t i = 0; i < dst0.size(); ++i) mag[i] = std::abs(dst0[i]);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      want[to[r] * ldd + j] += static_cast<double>(alpha) * src[r * lds + j];
      mag[to[r] * ldd + j] += std::abs(static_cast<double>(alpha) * src[r * lds + j]);
    }
  }
  auto d_cpu = dst0, d_dut = dst0;
  ASSERT_TRUE(
      cpu.RowScatterAdd(rows, n, to.data(), alpha, src.data(), lds, d_cpu.data(), ldd, dst_count)
          .ok());
  const absl::Status s =
      dut.RowScatterAdd(rows, n, to.data(), alpha, src.data(), lds, d_dut.data(), ldd, dst_count);
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t i = 0; i < dst_count; ++i) {
    for (int64_t j = 0; j < ldd; ++j) {
      const int64_t at = i * ldd + j;
      if (j >= n) {
        ASSERT_EQ(d_dut[at], dst0[at]) << "padding";
        continue;
      }
      ASSERT_TRUE(Near(d_cpu[at], want[at], 1e-5, mag[at])) << "cpu " << i << "," << j;
      ASSERT_TRUE(Near(d_dut[at], d_cpu[at], 2e-5, mag[at])) << "backend " << i << "," << j;
    }
  }
}

TEST_F(ConsistencyTest, RowScatterAdd) {
  CheckScatterAdd(cpu(), under_test(), 0, 4, 3, 1.0);
  CheckScatterAdd(cpu(), under_test(), 1, 1, 1, 1.0);
  CheckScatterAdd(cpu(), under_test(), 50, 16, 7, 1.0);
  CheckScatterAdd(cpu(), under_test(), 300, 33, 300, 1e-20);
  CheckScatterAdd(cpu(), under_test(), 300, 33, 2, 1e20);
  std::vector<float> src(4, 1.0f), dst(4, 2.0f);
  const int64_t bad[] = {0, 2};
  const absl::Status s =
      under_test().RowScatterAdd(2, 2, bad, 1.0f, src.data(), 2, dst.data(), 2, 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dst_rows[1]"), std::string_view::npos) << s;
  EXPECT_EQ(dst, std::vector<float>(4, 2.0f)) << "a rejected call wrote";
}

// Exact float scores of every sub-key (the CPU's arithmetic: coordinates in order, no FMA).
std::vector<float> ExactScores(const float* q, const float* table, int half, int n, float eps) {
  std::vector<float> s(n);
  for (int i = 0; i < n; ++i) {
    float d2 = 0.0f;
    for (int c = 0; c < half; ++c) {
      const float diff = q[c] - table[static_cast<size_t>(c) * n + i];
      d2 += diff * diff;
    }
    s[i] = -std::log(eps + d2);
  }
  return s;
}

// The brute-force order of `scores` by (score, id): what the CPU must reproduce.
std::vector<int32_t> Ranked(const std::vector<float>& scores) {
  std::vector<int32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return RefBetter(scores[a], a, scores[b], b); });
  return order;
}

void CheckProductKeys(Backend& cpu, Backend& dut, int64_t count, int half, int n, int k,
                      double scale, bool duplicate_keys) {
  SCOPED_TRACE(testing::Message() << "count=" << count << " half=" << half << " n=" << n
                                  << " k=" << k << " scale=" << scale);
  std::mt19937_64 rng(count * 7 + half * 131 + n + k);
  const float eps = 1e-3f;
  std::vector<float> tables[2] = {RandomVector<float>(half * n, rng, 0.3),
                                  RandomVector<float>(half * n, rng, 0.3)};
  if (duplicate_keys) {  // equal sub-keys give equal scores: ties to the smaller index
    for (int m = 0; m < 2; ++m) {
      for (int c = 0; c < half; ++c) {
        for (int i = 1; i < n; i += 2) tables[m][c * n + i] = tables[m][c * n + i - 1];
      }
    }
  }
  const int64_t ldq = 2 * half + 3;
  auto q = RandomVector<float>(std::max<int64_t>(count * ldq, 1), rng, scale);
  ProductKeyQuery query;
  query.count = count;
  query.half = half;
  query.n = n;
  query.k = k;
  query.eps = eps;
  query.q = q.data();
  query.ldq = ldq;
  query.tables[0] = tables[0].data();
  query.tables[1] = tables[1].data();
  const size_t out = static_cast<size_t>(count) * 2 * k;
  std::vector<int32_t> idx_cpu(out), idx_dut(out);
  std::vector<float> s_cpu(out), s_dut(out);
  ProductKeyQuery qc = query, qd = query;
  qc.idx = idx_cpu.data();
  qc.score = s_cpu.data();
  qd.idx = idx_dut.data();
  qd.score = s_dut.data();
  ASSERT_TRUE(cpu.ProductKeyScores(qc).ok());
  const absl::Status s = dut.ProductKeyScores(qd);
  ASSERT_TRUE(s.ok()) << s;
  for (int64_t t = 0; t < count; ++t) {
    for (int m = 0; m < 2; ++m) {
      const float* qh = q.data() + t * ldq + m * half;
      const std::vector<float> exact = ExactScores(qh, tables[m].data(), half, n, eps);
      const std::vector<int32_t> order = Ranked(exact);
      const size_t at = (t * 2 + m) * k;
      std::vector<bool> picked(n, false);
      for (int r = 0; r < k; ++r) {
        SCOPED_TRACE(testing::Message() << "query " << t << " half " << m << " rank " << r);
        ASSERT_EQ(idx_cpu[at + r], order[r]) << "cpu index";
        ASSERT_EQ(s_cpu[at + r], exact[order[r]]) << "cpu score";
        const double tol = 1e-6 * std::abs(exact[order[r]]) + 1e-6;
        ASSERT_TRUE(Near(s_dut[at + r], exact[order[r]], 1.0, tol)) << "backend score";
        const int32_t pick = idx_dut[at + r];
        ASSERT_TRUE(pick >= 0 && pick < n && !picked[pick]) << "backend index " << pick;
        picked[pick] = true;
        // Only a near-tie may reorder: the device's pick must score as well on the CPU.
        ASSERT_TRUE(Near(exact[pick], exact[order[r]], 1.0, tol)) << "backend index " << pick;
      }
    }
  }
}

TEST_F(ConsistencyTest, ProductKeyScores) {
  for (int64_t count : {0, 1, 3, 4, 37}) {
    CheckProductKeys(cpu(), under_test(), count, 8, 64, 8, 1.0, false);
    CheckProductKeys(cpu(), under_test(), count, 16, 300, 64, 1.0, true);
    CheckProductKeys(cpu(), under_test(), count, 3, 20, 1, 1e-20, false);
    CheckProductKeys(cpu(), under_test(), count, 32, 1024, 16, 1e15, false);
  }
  ProductKeyQuery bad;
  bad.count = 1;
  bad.half = 4;
  bad.n = 8;
  bad.k = 9;
  bad.eps = 1e-3f;
  EXPECT_EQ(under_test().ProductKeyScores(bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace adaptd::kernels
