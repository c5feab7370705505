#include "kernels/cpu/blas_core.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace adaptd::kernels {
namespace {

struct NamedCore {
  const char* name;
  int cls;
};

// OpenBLAS's x86 core names (driver/others/dynamic.c) by class.
constexpr NamedCore kCores[] = {
    {"SkylakeX", 4},     {"CooperLake", 4}, {"SapphireRapids", 4}, {"Haswell", 3},
    {"Zen", 3},          {"Excavator", 3},  {"Steamroller", 3},    {"Sandybridge", 2},
    {"Bulldozer", 2},    {"Piledriver", 2}, {"Prescott", 1},       {"Core2", 1},
    {"Penryn", 1},       {"Dunnington", 1}, {"Nehalem", 1},        {"Westmere", 1},
    {"Atom", 1},         {"Nano", 1},       {"Barcelona", 1},      {"Opteron", 1},
    {"Opteron_SSE3", 1}, {"Bobcat", 1},     {"Athlon", 1},         {"Katmai", 1},
    {"Coppermine", 1},   {"Northwood", 1},  {"Banias", 1},
};

const char* ClassNeeds(int cls) {
  switch (cls) {
    case 4:
      return "AVX-512 (F, BW, VL, DQ, CD)";
    case 3:
      return "AVX2 and FMA";
    case 2:
      return "AVX";
    default:
      return "SSE3";
  }
}

std::optional<CoreSource> ParseSource(absl::string_view name) {
  for (CoreSource s : {CoreSource::kLibrary, CoreSource::kCpuFeatures, CoreSource::kFlag,
                       CoreSource::kEnvironment}) {
    if (name == CoreSourceName(s)) return s;
  }
  return std::nullopt;
}

// Deterministic values in [-1, 1).
std::vector<double> Values(size_t n, uint64_t seed) {
  std::vector<double> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& v : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<double>(x >> 11) / static_cast<double>(1ull << 52) - 1.0;
  }
  return out;
}

// max |got − want| / max |want|.
template <typename T>
double RelativeError(const std::vector<T>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

absl::Status Check(const char* routine, double error, double limit) {
  if (std::isfinite(error) && error <= limit) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("BLAS self-check: ", routine, " is off by ", error,
                                          " (relative), more than ", limit));
}

// C = alpha·A·B + beta·C, row-major, A m×k, B k×n, against a float64 loop.
template <typename T>
absl::Status CheckGemm(double limit) {
  const int m = 67, n = 53, k = 91;
  const double alpha = 1.25, beta = -0.5;
  const std::vector<double> a = Values(m * k, 1), b = Values(k * n, 2), c = Values(m * n, 3);
  std::vector<double> want(m * n);
  std::vector<T> ta(a.begin(), a.end()), tb(b.begin(), b.end()), tc(c.begin(), c.end());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        sum += static_cast<double>(ta[i * k + p]) * static_cast<double>(tb[p * n + j]);
      }
      want[i * n + j] = alpha * sum + beta * static_cast<double>(tc[i * n + j]);
    }
  }
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, ta.data(), k, tb.data(),
                n, beta, tc.data(), n);
    return Check("dgemm", RelativeError(tc, want), limit);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, static_cast<float>(alpha),
                ta.data(), k, tb.data(), n, static_cast<float>(beta), tc.data(), n);
    return Check("sgemm", RelativeError(tc, want), limit);
  }
}

// The upper triangle of C = Aᵀ·A (A k×n, row-major), as the faast statistics are formed.
absl::Status CheckSyrk() {
  const int n = 70, k = 83;
  const std::vector<double> a = Values(k * n, 4);
  std::vector<double> c(n * n, 0.0), want(n * n, 0.0), got(n * n, 0.0);
  for (int i = 0; i < n; ++i) {
    for (int j = i; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += a[p * n + i] * a[p * n + j];
      want[i * n + j] = sum;
    }
  }
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, n, k, 1.0, a.data(), n, 0.0, c.data(), n);
  for (int i = 0; i < n; ++i) {
    for (int j = i; j < n; ++j) got[i * n + j] = c[i * n + j];
  }
  return Check("dsyrk", RelativeError(got, want), 1e-12);
}

// A symmetric eigendecomposition A = V·diag(w)·Vᵀ (LAPACK's dsyevd, which runs on the BLAS):
// the residual ‖A·V − V·diag(w)‖ relative to ‖A‖, and ‖VᵀV − I‖.
absl::Status CheckSyevd() {
  const int n = 72;
  const std::vector<double> r = Values(n * n, 5);
  std::vector<double> a(n * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) a[i * n + j] = r[i * n + j] + r[j * n + i];
  }
  std::vector<double> v = a, w(n);
  const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, v.data(), n, w.data());
  if (info != 0) return absl::InternalError(absl::StrCat("BLAS self-check: dsyevd info ", info));
  double residual = 0, orthogonality = 0, scale = 0;
  for (double x : a) scale = std::max(scale, std::abs(x));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double av = 0, vtv = 0;
      for (int p = 0; p < n; ++p) {
        av += a[i * n + p] * v[p * n + j];
        vtv += v[p * n + i] * v[p * n + j];
      }
      residual = std::max(residual, std::abs(av - v[i * n + j] * w[j]));
      orthogonality = std::max(orthogonality, std::abs(vtv - (i == j ? 1.0 : 0.0)));
    }
  }
  if (absl::Status s = Check("dsyevd (residual)", residual / scale, 1e-11); !s.ok()) return s;
  return Check("dsyevd (orthogonality)", orthogonality, 1e-11);
}

std::mutex choice_mu;
std::optional<BlasChoice> choice;

}  // namespace

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.amd = __builtin_cpu_is("amd");
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512cd = __builtin_cpu_supports("avx512cd");
#endif
  return f;
}

std::string DescribeFeatures(const CpuFeatures& f) {
  std::vector<const char*> names;
  for (auto [present, name] : {std::pair{f.avx, "avx"},
                               {f.avx2, "avx2"},
                               {f.fma, "fma"},
                               {f.avx512f, "avx512f"},
                               {f.avx512bw, "avx512bw"},
                               {f.avx512vl, "avx512vl"},
                               {f.avx512dq, "avx512dq"},
                               {f.avx512cd, "avx512cd"}}) {
    if (present) names.push_back(name);
  }
  return names.empty() ? "no AVX" : absl::StrJoin(names, " ");
}

int CoreClass(absl::string_view core) {
  for (const NamedCore& c : kCores) {
    if (absl::EqualsIgnoreCase(core, c.name)) return c.cls;
  }
  return 0;
}

std::string BestCore(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512cd) return "SkylakeX";
  if (f.avx2 && f.fma) return f.amd ? "Zen" : "Haswell";
  if (f.avx) return "Sandybridge";
  return "";
}

bool CanRun(const CpuFeatures& features, absl::string_view core) {
  const int cls = CoreClass(core);
  if (cls <= 1) return cls == 1;
  return cls <= CoreClass(BestCore(features));
}

const char* CoreSourceName(CoreSource source) {
  switch (source) {
    case CoreSource::kCpuFeatures:
      return "cpu";
    case CoreSource::kFlag:
      return "flag";
    case CoreSource::kEnvironment:
      return "environment";
    case CoreSource::kLibrary:
      break;
  }
  return "library";
}

absl::StatusOr<CorePlan> PlanCore(absl::string_view mode, absl::string_view library_core,
                                  const char* env_coretype, const char* chosen,
                                  const CpuFeatures& features) {
  CorePlan plan;
  if (chosen != nullptr) {  // the restart a previous start asked for
    std::optional<CoreSource> source = ParseSource(chosen);
    plan.source = source.value_or(CoreSource::kLibrary);
    plan.reason = plan.source == CoreSource::kFlag
                      ? absl::StrCat("--blas-core=", mode)
                      : absl::StrCat("chosen for this CPU (", DescribeFeatures(features), ")");
    return plan;
  }
  // A core named by the flag is checked whatever the environment says: a typo in the flag is an
  // error to report, not a setting that happens to be ignored.
  const bool named = mode != "auto" && mode != "library";
  const int cls = named ? CoreClass(mode) : 0;
  if (named && cls == 0) {
    std::vector<const char*> names;
    for (const NamedCore& c : kCores) names.push_back(c.name);
    return absl::InvalidArgumentError(absl::StrCat("--blas-core: unknown OpenBLAS core \"", mode,
                                                   "\"; expected auto, library or one of ",
                                                   absl::StrJoin(names, ", ")));
  }
  if (named && !CanRun(features, mode)) {
    return absl::InvalidArgumentError(absl::StrCat("--blas-core: ", mode, " needs ",
                                                   ClassNeeds(cls), "; this CPU has ",
                                                   DescribeFeatures(features)));
  }
  if (env_coretype != nullptr && *env_coretype != '\0') {
    plan.source = CoreSource::kEnvironment;
    plan.reason = absl::StrCat("OPENBLAS_CORETYPE=", env_coretype, " in the environment");
    return plan;
  }
  if (mode == "library") {
    plan.reason = "--blas-core=library";
    return plan;
  }
  if (mode == "auto") {
    const std::string best = BestCore(features);
    if (best.empty() || CoreClass(library_core) >= CoreClass(best)) {
      plan.reason = "OpenBLAS's own pick, which suits this CPU";
      return plan;
    }
    plan.source = CoreSource::kCpuFeatures;
    plan.restart_with = best;
    plan.reason = absl::StrCat("OpenBLAS alone picks ", library_core, "; this CPU has ",
                               DescribeFeatures(features));
    return plan;
  }
  plan.source = CoreSource::kFlag;
  plan.reason = absl::StrCat("--blas-core=", mode);
  if (!absl::EqualsIgnoreCase(mode, library_core)) plan.restart_with = std::string(mode);
  return plan;
}

std::string LibraryCore() {
  const char* core = openblas_get_corename();
  return core == nullptr ? "unknown" : std::string(absl::StripAsciiWhitespace(core));
}

std::string BlasVersion() {
  const char* config = openblas_get_config();
  if (config == nullptr) return "OpenBLAS";
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"
  std::vector<absl::string_view> words = absl::StrSplit(config, ' ', absl::SkipEmpty());
  if (words.size() >= 2) return absl::StrCat(words[0], " ", words[1]);
  return std::string(config);
}

absl::Status BlasSelfCheck() {
  const double eps = std::numeric_limits<double>::epsilon();
  for (absl::Status s :
       {CheckGemm<double>(1e4 * eps), CheckGemm<float>(1e-5), CheckSyrk(), CheckSyevd()}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void SetBlasChoice(BlasChoice c) {
  std::lock_guard<std::mutex> lock(choice_mu);
  choice = std::move(c);
}

BlasChoice CurrentBlasChoice() {
  {
    std::lock_guard<std::mutex> lock(choice_mu);
    if (choice.has_value()) return *choice;
  }
  return BlasChoice{BlasVersion(), LibraryCore(), CoreSource::kLibrary};
}

}  // namespace adaptd::kernels
