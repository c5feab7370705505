// Shared pieces of the benchmark binaries: a monotonic clock, medians, a description of the
// machine (CPU, cores, which OpenBLAS kernel runs and with how many threads), faast store specs,
// seeded data, and fatal checks. A benchmark reports ratios measured side by side in one run.
//
// Thread safety: plain functions for single-threaded drivers.
// Layout: matrices are row-major, one example per row, as in server/stores/store.h.
#ifndef ADAPTD_BENCH_BENCH_COMMON_H_
#define ADAPTD_BENCH_BENCH_COMMON_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "nlohmann/json.hpp"

namespace adaptd::bench {

double NowSeconds();

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double Median(std::vector<double> values);

struct Machine {
  std::string cpu;           // /proc/cpuinfo "model name"
  int cores = 0;             // online CPUs
  std::string blas_core;     // the kernel OpenBLAS picked (openblas_get_corename)
  int blas_threads = 0;      // openblas_get_num_threads
  std::string coretype_env;  // OPENBLAS_CORETYPE, "(unset)" when absent
  std::string date;          // UTC, ISO 8601
};
Machine DescribeMachine();
std::string MachineLine(const Machine& machine);
nlohmann::json MachineJson(const Machine& machine);

// Exits with a message naming `what` when `status` is not OK: a benchmark that cannot run its
// workload has nothing to report.
void Check(const absl::Status& status, const char* what);
template <typename T>
T Take(absl::StatusOr<T> value, const char* what) {
  Check(value.status(), what);
  return std::move(value).value();
}

// A faast spec for the benchmarks: identity encoder, labels (max_labels large enough) or a
// vector output of width `out_dim`, auto-compiles off.
adapt::v1::StoreSpec FaastSpec(int64_t dim, bool labels, int64_t out_dim, double ridge,
                               bool few_shot);

// `n` standard normal floats from `seed`.
std::vector<float> NormalFloats(uint64_t seed, int64_t n);

// Checks a few entries of the upper triangle of `g` (n × n) = AᵀA, A k × n, against plain
// float64 sums: guards against a BLAS kernel that computes wrong results on this processor.
void CheckSyrkSample(const double* a, int64_t k, int64_t n, const double* g);

// Writes `json` to `path` (nothing when `path` is empty).
void WriteJson(const std::string& path, const nlohmann::json& json);

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_BENCH_COMMON_H_
