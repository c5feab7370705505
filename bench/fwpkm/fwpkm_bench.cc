// fwpkm_bench: (1) capacity curve: M random key → value pairs written into N = 2^16 slots,
// recall@1 of the readout's nearest stored value (cosine, over a sample of 1000 keys against
// all M values); (2) read and write cost per query for N = 2^12 … 2^24, as ratios to N = 2^12.
// (3) check: the batched addressing (FwpkmAddressBatch) against the one-query path
// (FwpkmAddressOf), bit for bit, on random and tie-forcing queries. (4) address: the addressing
// alone (FwpkmAddressBatch, 4,096 unit queries in batches of 512) at N = 2^12 and 2^24, with one
// thread and with OpenBLAS's thread count.
// Usage: fwpkm_bench [capacity|cost [sub_keys]|check|address]. Prints one line per point.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "server/stores/fwpkm_keys.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"

namespace adaptd {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<float> Gaussian(std::mt19937_64& rng, int64_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = normal(rng);
  return out;
}

std::unique_ptr<FwpkmStore> Make(uint32_t sub_keys, int dim, int m, double addressing_lr) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FWPKM);
  spec.set_dim(dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  spec.mutable_output()->set_dim(m);
  spec.mutable_fwpkm()->set_sub_keys(sub_keys);
  spec.mutable_fwpkm()->set_addressing_lr(addressing_lr);
  return std::make_unique<FwpkmStore>(*NormalizeFwpkmSpec(spec), &kernels::HostBackend());
}

bool Write(Store& store, const std::vector<float>& keys, int dim, const std::vector<float>& y) {
  ExampleBatch b;
  b.dim = dim;
  b.rows = static_cast<int64_t>(keys.size()) / dim;
  b.keys = keys;
  b.targets = y;
  auto txn = store.Begin(TxnKind::kAdapt);
  return txn->Add(b).ok() && store.Commit(*txn).ok();
}

void Capacity() {
  const int dim = 32, m = 32, sample = 1000;
  for (double lr : {1.0, 0.0}) {
    for (int pairs : {1024, 2048, 4096, 8192, 16384, 32768, 65536}) {
      std::mt19937_64 rng(pairs);
      const std::vector<float> keys = Gaussian(rng, int64_t{pairs} * dim);
      const std::vector<float> values = Gaussian(rng, int64_t{pairs} * m);
      auto store = Make(256, dim, m, lr);
      if (!Write(*store, keys, dim, values) || !store->Compile(adapt::v1::CompileRequest()).ok()) {
        std::printf("write failed\n");
        return;
      }
      std::vector<double> norm(pairs);
      for (int u = 0; u < pairs; ++u) {
        double s = 0;
        for (int j = 0; j < m; ++j) s += values[int64_t{u} * m + j] * values[int64_t{u} * m + j];
        norm[u] = std::sqrt(s);
      }
      auto p = store->Predict(keys.data(), sample, dim, 1);
      int hits = 0;
      for (int t = 0; t < sample; ++t) {
        const float* out = p->vectors.data() + t * m;
        int best = -1;
        double best_cos = -2;
        for (int u = 0; u < pairs; ++u) {
          double dot = 0;
          for (int j = 0; j < m; ++j) dot += out[j] * values[int64_t{u} * m + j];
          if (dot / norm[u] > best_cos) best_cos = dot / norm[u], best = u;
        }
        hits += best == t ? 1 : 0;
      }
      adapt::v1::StoreInfo info;
      store->Describe(&info);
      std::printf("capacity addressing_lr=%.0f N=65536 M=%d M/N=%.4f recall=%.4f slots_used=%llu\n",
                  lr, pairs, pairs / 65536.0, static_cast<double>(hits) / sample,
                  static_cast<unsigned long long>(info.fwpkm().slots_used()));
      std::fflush(stdout);
    }
  }
}

void Cost(uint32_t only) {
  const int dim = 32, m = 32, writes = 4096, reads = 4096, rounds = 5;
  double base_read = 0, base_write = 0;
  for (uint32_t sub_keys : {64u, 128u, 256u, 512u, 1024u, 2048u, 4096u}) {
    if (only != 0 && sub_keys != only) continue;
    std::mt19937_64 rng(sub_keys);
    const std::vector<float> keys = Gaussian(rng, int64_t{writes} * dim);
    const std::vector<float> values = Gaussian(rng, int64_t{writes} * m);
    // A fresh store per round; the medians of the rounds.
    std::vector<double> write_us, read_us;
    for (int round = 0; round < rounds; ++round) {
      auto store = Make(sub_keys, dim, m, 1.0);
      const auto w0 = Clock::now();
      Write(*store, keys, dim, values);
      write_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - w0).count() /
                         writes);
      const auto r0 = Clock::now();
      auto p = store->Predict(keys.data(), reads, dim, 1);
      read_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - r0).count() /
                        reads);
    }
    std::sort(write_us.begin(), write_us.end());
    std::sort(read_us.begin(), read_us.end());
    const double w = write_us[rounds / 2], r = read_us[rounds / 2];
    if (base_read == 0) base_read = r, base_write = w;
    std::printf("cost N=2^%d read_us=%.2f write_us=%.2f read_ratio=%.2f write_ratio=%.2f\n",
                static_cast<int>(std::lround(2 * std::log2(sub_keys))), r, w, r / base_read,
                w / base_write);
    std::fflush(stdout);
  }
}

// Microseconds per query of FwpkmAddressBatch over `q` (count queries, batches of 512), the
// median of five passes.
double AddressUs(const FwpkmSubKeys& keys, const std::vector<float>& q, int64_t count) {
  constexpr int64_t kBatch = 512;
  const int64_t width = 2 * keys.half();
  std::vector<FwpkmAddress> out(kBatch);
  FwpkmScratch scratch;
  std::vector<double> passes;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = Clock::now();
    for (int64_t b = 0; b < count; b += kBatch) {
      FwpkmAddressBatch(keys, q.data() + b * width, std::min(kBatch, count - b), 8, 1e-3f, &scratch,
                        out.data(), kernels::HostBackend());
    }
    passes.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / count);
  }
  std::sort(passes.begin(), passes.end());
  return passes[2];
}

void Address() {
  const int half = 16, count = 4096;
  const int threads = openblas_get_num_threads();
  std::mt19937_64 rng(5);
  std::vector<float> q = Gaussian(rng, int64_t{count} * 2 * half);
  for (int t = 0; t < count; ++t) {  // unit queries, as the store's projection gives
    float* row = q.data() + int64_t{t} * 2 * half;
    double s = 0;
    for (int j = 0; j < 2 * half; ++j) s += row[j] * row[j];
    for (int j = 0; j < 2 * half; ++j) row[j] = static_cast<float>(row[j] / std::sqrt(s));
  }
  for (int n : {64, 4096}) {
    FwpkmSubKeys keys(n, half, 7);
    for (int th : {1, threads}) {
      openblas_set_num_threads(th);
      std::printf("address N=2^%d threads=%d us_per_query=%.2f\n",
                  static_cast<int>(std::lround(2 * std::log2(n))), th, AddressUs(keys, q, count));
      std::fflush(stdout);
    }
    openblas_set_num_threads(threads);
  }
}

// Returns the number of mismatching queries.
int64_t Check() {
  int64_t bad = 0, total = 0;
  std::mt19937_64 rng(3);
  struct Case {
    int n, half, k;
  };
  for (const Case& c : {Case{2, 1, 1}, Case{4, 2, 4}, Case{16, 4, 8}, Case{37, 8, 5},
                        Case{64, 16, 16}, Case{128, 16, 64}, Case{256, 16, 8}, Case{1024, 16, 32},
                        Case{4096, 16, 8}, Case{4096, 16, 64}, Case{512, 16, 8}, Case{1000, 16, 3},
                        Case{2048, 16, 1}, Case{1024, 4, 8}, Case{1056, 8, 7}}) {
    FwpkmSubKeys keys(c.n, c.half, 11 + c.n);
    for (int cc = 0; cc < c.half; ++cc) {  // repeated sub-keys: ties broken by id
      keys.at(0, c.n - 1, cc) = keys.at(0, 0, cc);
      keys.at(1, c.n / 2, cc) = keys.at(1, 0, cc);
    }
    const int count = 300;
    std::vector<float> q = Gaussian(rng, int64_t{count} * 2 * c.half);
    for (int t = 0; t < count; ++t) {
      float* row = q.data() + int64_t{t} * 2 * c.half;
      if (t % 10 == 0) {  // on a sub-key
        for (int cc = 0; cc < c.half; ++cc) row[cc] = keys.at(0, 0, cc);
      }
      if (t % 10 == 1) std::fill(row, row + 2 * c.half, 0.0f);
      if (t % 10 == 3 || t % 10 == 4) {  // huge norms (past the filtered path), and tiny
        const float scale = t % 10 == 3 ? 1e18f : 1e-20f;
        for (int j = 0; j < 2 * c.half; ++j) row[j] *= scale;
      }
      if (t % 10 == 2) {  // unit query, as the store's projection gives
        double s = 0;
        for (int j = 0; j < 2 * c.half; ++j) s += row[j] * row[j];
        for (int j = 0; j < 2 * c.half; ++j) row[j] = static_cast<float>(row[j] / std::sqrt(s));
      }
    }
    for (float eps : {1e-3f, 0.5f}) {
      // Each distance kernel, with one thread and with two: the same sub-keys and scores.
      kernels::ProductKeyQuery query;
      query.count = count;
      query.half = c.half;
      query.n = c.n;
      query.k = c.k;
      query.eps = eps;
      query.q = q.data();
      query.ldq = 2 * int64_t{c.half};
      query.tables[0] = keys.table(0);
      query.tables[1] = keys.table(1);
      std::vector<int32_t> idx0(int64_t{count} * 2 * c.k), idx(idx0.size());
      std::vector<float> score0(idx0.size()), score(idx0.size());
      query.idx = idx0.data();
      query.score = score0.data();
      kernels::cpu::ProductKeyScoresWith(query, false, 1);
      query.idx = idx.data();
      query.score = score.data();
      for (bool avx512 : {false, true}) {
        for (int threads : {1, 2}) {
          kernels::cpu::ProductKeyScoresWith(query, avx512, threads);
          for (int t = 0; t < count; ++t) {
            bool same = true;
            for (int i = 0; i < 2 * c.k; ++i) {
              const int64_t at = int64_t{t} * 2 * c.k + i;
              same = same && idx[at] == idx0[at] && score[at] == score0[at];
            }
            bad += same ? 0 : 1;
            ++total;
          }
        }
      }
      std::vector<FwpkmAddress> batch(count);
      FwpkmScratch s1, s2;
      FwpkmAddressBatch(keys, q.data(), count, c.k, eps, &s1, batch.data(), kernels::HostBackend());
      for (int t = 0; t < count; ++t) {
        FwpkmAddress one;
        FwpkmAddressOf(keys, q.data() + int64_t{t} * 2 * c.half, c.k, eps, &s2, &one);
        bool same = one.k == batch[t].k;
        for (int i = 0; i < c.k; ++i) {
          same = same && one.slot[i] == batch[t].slot[i] && one.score[i] == batch[t].score[i] &&
                 one.weight[i] == batch[t].weight[i];
          for (int m = 0; m < 2; ++m) {
            same = same && one.sub[m][i] == batch[t].sub[m][i] &&
                   one.sub_score[m][i] == batch[t].sub_score[m][i];
          }
        }
        bad += same ? 0 : 1;
        ++total;
      }
    }
  }
  std::printf("check batch_vs_single queries=%lld mismatches=%lld\n", static_cast<long long>(total),
              static_cast<long long>(bad));
  return bad;
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) {
  const bool capacity = argc < 2 || std::strcmp(argv[1], "capacity") == 0;
  const bool cost = argc < 2 || std::strcmp(argv[1], "cost") == 0;
  if (argc >= 2 && std::strcmp(argv[1], "check") == 0) return adaptd::Check() == 0 ? 0 : 1;
  if (argc >= 2 && std::strcmp(argv[1], "address") == 0) {
    adaptd::Address();
    return 0;
  }
  if (capacity) adaptd::Capacity();
  if (cost) adaptd::Cost(argc >= 3 ? static_cast<uint32_t>(std::atoi(argv[2])) : 0);
  return 0;
}
