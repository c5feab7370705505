#include "bench/bench_common.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <random>

namespace adaptd::bench {

double NowSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Machine DescribeMachine() {
  Machine m;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      m.cpu = colon == std::string::npos ? line : line.substr(colon + 2);
      break;
    }
  }
  m.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const char* core = openblas_get_corename();
  m.blas_core = core == nullptr ? "" : core;
  m.blas_threads = openblas_get_num_threads();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  m.coretype_env = env == nullptr ? "(unset)" : env;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  m.date = date;
  return m;
}

std::string MachineLine(const Machine& m) {
  return "cpu: " + m.cpu + ", cores: " + std::to_string(m.cores) +
         ", OpenBLAS kernel: " + m.blas_core +
         ", OpenBLAS threads: " + std::to_string(m.blas_threads) +
         ", OPENBLAS_CORETYPE: " + m.coretype_env + ", date: " + m.date;
}

nlohmann::json MachineJson(const Machine& m) {
  return {{"cpu", m.cpu},
          {"cores", m.cores},
          {"openblas_kernel", m.blas_core},
          {"openblas_threads", m.blas_threads},
          {"openblas_coretype_env", m.coretype_env},
          {"date", m.date}};
}

void Check(const absl::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "benchmark failed: %s: %s\n", what, status.ToString().c_str());
  std::exit(1);
}

adapt::v1::StoreSpec FaastSpec(int64_t dim, bool labels, int64_t out_dim, double ridge,
                               bool few_shot) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.set_dim(static_cast<uint32_t>(dim));
  if (labels) {
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  } else {
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    spec.mutable_output()->set_dim(static_cast<uint32_t>(out_dim));
  }
  adapt::v1::FaastParams* p = spec.mutable_faast();
  p->set_ridge(ridge);
  p->set_auto_compile_every(0);
  p->set_auto_compile_delay_ms(0);
  p->set_few_shot(few_shot);
  return spec;
}

std::vector<float> NormalFloats(uint64_t seed, int64_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = normal(rng);
  return out;
}

void CheckSyrkSample(const double* a, int64_t k, int64_t n, const double* g) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  for (int probe = 0; probe < 16; ++probe) {
    int64_t i = pick(rng), j = pick(rng);
    if (i > j) std::swap(i, j);
    double sum = 0, scale = 0;
    for (int64_t r = 0; r < k; ++r) {
      sum += a[r * n + i] * a[r * n + j];
      scale += std::abs(a[r * n + i] * a[r * n + j]);
    }
    if (std::abs(g[i * n + j] - sum) > 1e-10 * (scale + 1)) {
      std::fprintf(stderr, "BLAS check failed: G[%ld,%ld] = %.17g, expected %.17g\n",
                   static_cast<long>(i), static_cast<long>(j), g[i * n + j], sum);
      std::exit(1);
    }
  }
}

void WriteJson(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << json.dump(2) << "\n";
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace adaptd::bench
