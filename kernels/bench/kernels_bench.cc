// kernels_bench: the CPU backend's own operations against what a caller would otherwise write,
// timed side by side in one run (medians of --rounds rounds); the figures are ratios.
//   grouped: GroupedGemm over S stores (B_s: d × m weights, b input rows each) against a loop
//            of one cblas_sgemm per store.
//   topk:    TopK over R rows of n floats against std::partial_sort of an index array per row
//            (same order: larger value first, ties to the lower index).
//   syrk:    SyrkUpperAccumulate on float input against cblas_dsyrk on the same rows already
//            in float64 (the price of the conversion that buys float64 accumulation).
//   narrow:  the backend's float Gemm on R rows × d against d × n with few columns (the narrow
//            kernel, narrow_gemm.h, where the CPU has one) against cblas_sgemm.
//   packed:  the dense products of a BERT encoder of width h (per layer X·Wᵀ with W of 3h × h,
//            h × h, 4h × h and h × 4h; 6 layers of distinct weights, so they do not stay in
//            cache) on R rows: PackedWeights::Multiply (packed_gemm.h, one thread) against
//            cblas_sgemm on the unpacked weights (--threads threads).
// Usage: kernels_bench [--quick] [--rounds N] [--threads T]. Prints one JSON line per point.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_common.h"
#include "kernels/backend.h"
#include "kernels/cpu/packed_gemm.h"

namespace adaptd::bench {
namespace {

template <typename Fn>
double MedianSeconds(int rounds, Fn fn) {
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = NowSeconds();
    fn();
    times.push_back(NowSeconds() - t0);
  }
  return Median(times);
}

void Grouped(kernels::Backend& cpu, int stores, int d, int m, int b, int rounds) {
  const std::vector<float> w = NormalFloats(1, int64_t{stores} * d * m);
  const std::vector<float> x = NormalFloats(2, int64_t{stores} * b * d);
  std::vector<float> c1(int64_t{stores} * b * m), c2(c1.size());
  std::vector<kernels::GemmGroup> groups(stores);
  for (int s = 0; s < stores; ++s) {
    groups[s] = {b, m,
                 d, x.data() + int64_t{s} * b * d,
                 d, w.data() + int64_t{s} * d * m,
                 m, c1.data() + int64_t{s} * b * m,
                 m};
  }
  const double grouped =
      MedianSeconds(rounds, [&] { Check(cpu.GroupedGemm(groups), "GroupedGemm"); });
  const double loop = MedianSeconds(rounds, [&] {
    for (int s = 0; s < stores; ++s) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, m, d, 1.0f,
                  x.data() + int64_t{s} * b * d, d, w.data() + int64_t{s} * d * m, m, 0.0f,
                  c2.data() + int64_t{s} * b * m, m);
    }
  });
  double max_diff = 0;
  for (size_t i = 0; i < c1.size(); ++i)
    max_diff = std::max<double>(max_diff, std::abs(c1[i] - c2[i]));
  std::printf(
      "{\"bench\":\"grouped_gemm\",\"stores\":%d,\"d\":%d,\"m\":%d,\"rows_per_store\":%d,"
      "\"grouped_s\":%.6g,\"sgemm_loop_s\":%.6g,\"speedup\":%.3f,\"max_abs_diff\":%.3g}\n",
      stores, d, m, b, grouped, loop, loop / grouped, max_diff);
}

void TopK(kernels::Backend& cpu, int rows, int n, int k, int rounds) {
  const std::vector<float> x = NormalFloats(3, int64_t{rows} * n);
  std::vector<int32_t> idx(int64_t{rows} * k), idx2(idx.size());
  std::vector<float> val(idx.size());
  const double ours = MedianSeconds(
      rounds, [&] { Check(cpu.TopK(rows, n, x.data(), n, k, idx.data(), val.data()), "TopK"); });
  std::vector<int32_t> order(n);
  const double partial = MedianSeconds(rounds, [&] {
    for (int r = 0; r < rows; ++r) {
      const float* row = x.data() + int64_t{r} * n;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
        return row[a] > row[b] || (row[a] == row[b] && a < b);
      });
      std::copy_n(order.begin(), k, idx2.begin() + int64_t{r} * k);
    }
  });
  const bool same = idx == idx2;
  std::printf(
      "{\"bench\":\"topk\",\"rows\":%d,\"n\":%d,\"k\":%d,\"topk_s\":%.6g,"
      "\"partial_sort_s\":%.6g,\"speedup\":%.3f,\"same_result\":%s}\n",
      rows, n, k, ours, partial, partial / ours, same ? "true" : "false");
}

void Syrk(kernels::Backend& cpu, int n, int k, int rounds) {
  const std::vector<float> a = NormalFloats(4, int64_t{k} * n);
  const std::vector<double> ad(a.begin(), a.end());
  std::vector<double> c1(int64_t{n} * n), c2(c1.size());
  const double ours = MedianSeconds(rounds, [&] {
    Check(cpu.SyrkUpperAccumulate(n, k, 1.0, a.data(), n, 0.0, c1.data(), n), "SyrkAccumulate");
  });
  const double dsyrk = MedianSeconds(rounds, [&] {
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, 1.0, ad.data(), n, 0.0, c2.data(), n);
  });
  std::printf(
      "{\"bench\":\"syrk_accumulate\",\"n\":%d,\"k\":%d,\"accumulate_s\":%.6g,"
      "\"dsyrk_on_double_s\":%.6g,\"fraction_of_dsyrk\":%.3f}\n",
      n, k, ours, dsyrk, dsyrk / ours);
}

void Narrow(kernels::Backend& cpu, int rows, int d, int n, int rounds) {
  const std::vector<float> x = NormalFloats(5, int64_t{rows} * d);
  const std::vector<float> w = NormalFloats(6, int64_t{d} * n);
  std::vector<float> c1(int64_t{rows} * n), c2(c1.size());
  const double ours = MedianSeconds(rounds, [&] {
    Check(cpu.Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, n, d, 1.0f, x.data(), d,
                   w.data(), n, 0.0f, c1.data(), n),
          "Gemm");
  });
  const double sgemm = MedianSeconds(rounds, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, d, 1.0f, x.data(), d, w.data(),
                n, 0.0f, c2.data(), n);
  });
  double max_diff = 0;
  for (size_t i = 0; i < c1.size(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs(c1[i] - c2[i]));
  }
  std::printf(
      "{\"bench\":\"narrow_gemm\",\"rows\":%d,\"d\":%d,\"n\":%d,\"gemm_s\":%.6g,"
      "\"sgemm_s\":%.6g,\"speedup\":%.3f,\"max_abs_diff\":%.3g}\n",
      rows, d, n, ours, sgemm, sgemm / ours, max_diff);
}

void Packed(int rows, int h, int rounds) {
  struct Dense {
    int n, k;
    std::vector<float> w;
    std::optional<kernels::cpu::PackedWeights> packed;
  };
  std::vector<Dense> dense;
  uint64_t seed = 10;
  for (int layer = 0; layer < 6; ++layer) {
    for (const auto& [n, k] : {std::pair{3 * h, h}, {h, h}, {4 * h, h}, {h, 4 * h}}) {
      Dense d{n, k, NormalFloats(seed++, int64_t{n} * k), std::nullopt};
      d.packed = kernels::cpu::PackedWeights::Pack(d.w.data(), n, k, k);
      if (!d.packed.has_value()) {
        std::printf("{\"bench\":\"packed_gemm\",\"skipped\":\"no AVX2 or AVX-512\"}\n");
        return;
      }
      dense.push_back(std::move(d));
    }
  }
  const std::vector<float> x = NormalFloats(7, int64_t{rows} * 4 * h);
  std::vector<float> c1(int64_t{rows} * 4 * h), c2(c1.size());
  double max_diff = 0;
  auto run = [&](bool packed) {
    for (const Dense& d : dense) {
      float* c = packed ? c1.data() : c2.data();
      if (packed) {
        d.packed->Multiply(rows, x.data(), d.k, 0.0f, c, d.n);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, d.n, d.k, 1.0f, x.data(), d.k,
                    d.w.data(), d.k, 0.0f, c, d.n);
      }
    }
  };
  // Rounds of several passes, so that a short product is timed over milliseconds.
  const int passes = std::max(1, 2000 / rows);
  const double packed = MedianSeconds(rounds,
                                      [&] {
                                        for (int p = 0; p < passes; ++p) run(true);
                                      }) /
                        passes;
  const double sgemm = MedianSeconds(rounds,
                                     [&] {
                                       for (int p = 0; p < passes; ++p) run(false);
                                     }) /
                       passes;
  for (size_t i = 0; i < c1.size(); ++i) {
    max_diff = std::max<double>(max_diff, std::abs(c1[i] - c2[i]));
  }
  std::printf(
      "{\"bench\":\"packed_gemm\",\"rows\":%d,\"hidden\":%d,\"packed_s\":%.6g,"
      "\"sgemm_s\":%.6g,\"speedup\":%.3f,\"last_product_max_abs_diff\":%.3g,"
      "\"packs_for_these_rows\":%s}\n",
      rows, h, packed, sgemm, sgemm / packed, max_diff,
      kernels::cpu::PackedWeights::Pays(rows) ? "true" : "false");
}

int Main(int argc, char** argv) {
  bool quick = false;
  int rounds = 7, threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: kernels_bench [--quick] [--rounds N] [--threads T]\n");
      return 2;
    }
  }
  auto cpu = kernels::MakeCpuBackend();
  cpu->SetThreads(threads);
  std::printf("{\"machine\":%s}\n", MachineJson(DescribeMachine()).dump().c_str());
  if (quick) {
    Grouped(*cpu, 8, 16, 4, 2, 1);
    TopK(*cpu, 4, 100, 8, 1);
    Syrk(*cpu, 16, 64, 1);
    Narrow(*cpu, 64, 16, 5, 1);
    Packed(3, 32, 1);
    return 0;
  }
  for (int b : {1, 4, 16}) Grouped(*cpu, 1000, 256, 16, b, rounds);
  Grouped(*cpu, 100, 1024, 64, 8, rounds);
  for (int k : {1, 16, 64}) TopK(*cpu, 1000, 1024, k, rounds);
  TopK(*cpu, 100, 65536, 64, rounds);
  TopK(*cpu, 100, 65536, 256, rounds);
  Syrk(*cpu, 256, 4096, rounds);
  Syrk(*cpu, 1024, 4096, rounds);
  for (int n : {2, 8, 26, 32}) Narrow(*cpu, 16000, 2048, n, rounds);
  Narrow(*cpu, 4096, 256, 26, rounds);
  for (int rows : {1, 13, 40, 64, 96, 200, 800}) Packed(rows, 384, rounds);
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
