// Falcon ingest: updates per second of the one-at-a-time recurrence against the chunk-parallel
// form (Falcon-1, float64, one thread), each as a ratio to the memory-bandwidth limit for
// reading and writing S once per update (16·d·m bytes), with the bandwidth measured in the
// same run by a STREAM-style triad. Prints one table row per (d, m) and a JSON line.
//
// Thread safety: single-threaded driver. Layout: row-major, as server/stores/falcon_rules.h.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kernels/backend.h"
#include "server/stores/falcon_chunked.h"
#include "server/stores/falcon_params.h"
#include "server/stores/falcon_rules.h"

namespace adaptd {
namespace {

double Now() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Bytes per second of a[i] = b[i] + s·c[i] over arrays far larger than the caches (3 doubles
// moved per element), the best of `rounds`.
double TriadBandwidth(int64_t elements, int rounds) {
  std::vector<double> a(elements, 0.0), b(elements, 1.0), c(elements, 2.0);
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const double start = Now();
    for (int64_t i = 0; i < elements; ++i) a[i] = b[i] + 0.5 * c[i];
    const double seconds = Now() - start;
    best = std::max(best, 3.0 * sizeof(double) * elements / seconds);
    std::swap(a, b);
  }
  return best;
}

struct Row {
  int64_t d, m, steps;
  double recurrent, chunked;  // updates per second
};

Row Measure(int64_t d, int64_t m, int64_t chunk, int rounds, kernels::Backend* backend) {
  const int64_t steps = std::max<int64_t>(256, (int64_t{1} << 25) / (d * m) / 64 * 64);
  std::mt19937_64 rng(d * 131 + m);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(steps * d), y(steps * m), pred(steps * m);
  for (double& v : x) v = normal(rng);
  for (double& v : y) v = normal(rng);
  FalconConfig config;
  config.variant = FalconVariant::k1;
  config.beta = {0.5};
  config.lambda = 0.01;
  std::vector<double> rec_times, chunk_times;
  for (int r = 0; r < rounds; ++r) {
    FalconMemory mem;
    mem.Reset(d, m);
    double start = Now();
    FalconRecurrent(config, x.data(), y.data(), steps, &mem, pred.data());
    rec_times.push_back(Now() - start);
    mem.Reset(d, m);
    start = Now();
    absl::Status s =
        FalconChunked(config, chunk, x.data(), y.data(), steps, &mem, pred.data(), backend);
    chunk_times.push_back(Now() - start);
    if (!s.ok()) {
      std::fprintf(stderr, "chunked ingest failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  return {d, m, steps, steps / Median(rec_times), steps / Median(chunk_times)};
}

int Main(int argc, char** argv) {
  int64_t chunk = kFalconChunk;  // the store's
  int rounds = 3;
  std::vector<int64_t> dims = {64, 256, 1024}, widths = {16, 64};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--chunk=", 0) == 0) chunk = std::atoll(arg.c_str() + 8);
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::atoi(arg.c_str() + 9);
    if (arg == "--quick") dims = {64}, widths = {16};
    if (arg.rfind("--d=", 0) == 0) dims = {std::atoll(arg.c_str() + 4)};
    if (arg.rfind("--m=", 0) == 0) widths = {std::atoll(arg.c_str() + 4)};
  }
  auto backend = kernels::MakeCpuBackend(1);
  const double bandwidth = TriadBandwidth(int64_t{1} << 23, 5);
  std::printf("triad bandwidth: %.2f GB/s (one thread); chunk %lld; Falcon-1 float64\n",
              bandwidth / 1e9, static_cast<long long>(chunk));
  std::printf(
      "| d | m | steps | recurrent upd/s | chunked upd/s | chunked/recurrent | "
      "recurrent/limit | chunked/limit |\n|---|---|---|---|---|---|---|---|\n");
  for (int64_t d : dims) {
    for (int64_t m : widths) {
      const Row r = Measure(d, m, chunk, rounds, backend.get());
      const double limit = bandwidth / (16.0 * d * m);  // updates/s if S streams once each
      std::printf("| %lld | %lld | %lld | %.3g | %.3g | %.2f | %.3f | %.3f |\n",
                  static_cast<long long>(d), static_cast<long long>(m),
                  static_cast<long long>(r.steps), r.recurrent, r.chunked, r.chunked / r.recurrent,
                  r.recurrent / limit, r.chunked / limit);
      std::printf(
          "{\"bench\":\"falcon_ingest\",\"d\":%lld,\"m\":%lld,\"chunk\":%lld,"
          "\"recurrent_ups\":%.6g,\"chunked_ups\":%.6g,\"bandwidth_Bps\":%.6g}\n",
          static_cast<long long>(d), static_cast<long long>(m), static_cast<long long>(chunk),
          r.recurrent, r.chunked, bandwidth);
    }
  }
  return 0;
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) { return adaptd::Main(argc, argv); }
