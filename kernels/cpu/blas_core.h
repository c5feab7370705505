// Which OpenBLAS kernels (its "core") the server runs. Debian's OpenBLAS is built for every x86
// core and picks one at load time from the CPU's model; a model newer than the library (or a
// virtual CPU that hides its model) gets the generic SSE3 "Prescott" kernels, 3.5-6x slower than
// the AVX-512 ones on the same machine (bench/RESULTS.md). At start-up adaptd compares the
// library's pick with what the CPU's feature flags support and, when the flags allow a better
// class of kernels, restarts itself once with OPENBLAS_CORETYPE set to it (the variable is read
// only when the library loads). Every start ends with a numerical self-check of the kernels in
// use against plain float64 loops; a chosen core that fails it is dropped for the library's own
// pick. docs/BLAS.md has the reasoning; `--blas-core` the choices.
#ifndef ADAPTD_KERNELS_CPU_BLAS_CORE_H_
#define ADAPTD_KERNELS_CPU_BLAS_CORE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace adaptd::kernels {

// The instruction-set extensions that decide which OpenBLAS x86 kernels can run.
struct CpuFeatures {
  bool amd = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512cd = false;
};

// This machine's (cpuid, through the compiler's builtins).
CpuFeatures DetectCpuFeatures();
// "avx512f avx512bw ..." of those present, for log lines.
std::string DescribeFeatures(const CpuFeatures& features);

// The class of an OpenBLAS x86 core name, case-insensitive: 4 AVX-512 (SkylakeX, CooperLake,
// SapphireRapids), 3 AVX2 (Haswell, Zen, Excavator, Steamroller), 2 AVX (Sandybridge,
// Bulldozer, Piledriver), 1 any older x86 core OpenBLAS names (Prescott, Core2, Nehalem, ...),
// 0 a name it does not know.
int CoreClass(absl::string_view core);
// The core adaptd chooses for a CPU with `features`: SkylakeX (AVX-512 F, BW, VL, DQ and CD),
// Haswell or, on AMD, Zen (AVX2 and FMA), Sandybridge (AVX), or "" when nothing beyond SSE3.
std::string BestCore(const CpuFeatures& features);
// Whether a CPU with `features` can run `core` (its class is at most the best one's).
bool CanRun(const CpuFeatures& features, absl::string_view core);

// Where the kernels in use came from (the adaptd_build_info label blas_core_source).
enum class CoreSource {
  kLibrary,      // OpenBLAS's own pick (--blas-core=library, or nothing better to choose)
  kCpuFeatures,  // chosen by adaptd from the CPU's features (--blas-core=auto)
  kFlag,         // named by --blas-core=NAME
  kEnvironment,  // OPENBLAS_CORETYPE set by whoever started adaptd
};
const char* CoreSourceName(CoreSource source);

// What to do at start-up. `mode` is the --blas-core value: "auto", "library" or a core name.
// `library_core` is what OpenBLAS runs now; `env_coretype` OPENBLAS_CORETYPE (nullptr when
// unset); `chosen` the note a previous start of this process left for its restart (nullptr on
// the first start). InvalidArgument for a core name OpenBLAS does not know or this CPU cannot
// run.
struct CorePlan {
  CoreSource source = CoreSource::kLibrary;
  // Set: restart with OPENBLAS_CORETYPE=restart_with (and the note `source`).
  std::string restart_with;
  // Why, for the start-up log line.
  std::string reason;
};
absl::StatusOr<CorePlan> PlanCore(absl::string_view mode, absl::string_view library_core,
                                  const char* env_coretype, const char* chosen,
                                  const CpuFeatures& features);

// The kernels OpenBLAS runs in this process (openblas_get_corename), and its version line
// ("OpenBLAS 0.3.21").
std::string LibraryCore();
std::string BlasVersion();

// Products, rank-k updates and a symmetric eigendecomposition of fixed pseudo-random inputs,
// in float64 and float32, compared with plain float64 loops; Internal naming the routine and
// the error when one is off by more than rounding.
absl::Status BlasSelfCheck();

// The choice this process made (main sets it once, before serving); a process that never set
// it reports the library's own pick.
struct BlasChoice {
  std::string version;
  std::string core;
  CoreSource source = CoreSource::kLibrary;
};
void SetBlasChoice(BlasChoice choice);
BlasChoice CurrentBlasChoice();

// The environment variable a start that chose a core leaves for its restart: the source's
// name.
inline constexpr char kChosenCoreEnv[] = "ADAPTD_BLAS_CORE_CHOSEN";
// Set for the restart after a chosen core failed its self-check: the reason, logged there.
inline constexpr char kCoreFallbackEnv[] = "ADAPTD_BLAS_CORE_FALLBACK";

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_CPU_BLAS_CORE_H_
