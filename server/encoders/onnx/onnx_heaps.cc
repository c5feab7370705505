#include "server/encoders/onnx/onnx_heaps.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "absl/time/clock.h"

namespace adaptd {
namespace {

// A non-negative number from `name`, or `fallback` when it is unset or empty.
double EnvNumber(const char* name, double fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  return std::max(0.0, std::atof(env));
}

// Whether the environment already sets glibc's thresholds: a deployment's choice (for
// instance MALLOC_MMAP_THRESHOLD_=131072, bench/RESULTS.md) is kept.
bool EnvironmentSetsThresholds() {
  for (const char* name : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && (std::strstr(tunables, "glibc.malloc.trim_threshold") != nullptr ||
                                 std::strstr(tunables, "glibc.malloc.mmap_threshold") != nullptr ||
                                 std::strstr(tunables, "glibc.malloc.top_pad") != nullptr);
}

int64_t HeapTrimIntervalNanos() {
  static const int64_t interval =
      static_cast<int64_t>(EnvNumber(kOnnxHeapTrimEnv, /*fallback=*/1.0) * 1e9);
  return interval;
}

}  // namespace

int64_t ConfigureHeapsForVaryingShapes() {
  static const int64_t trim_threshold = []() -> int64_t {
    const auto top =
        static_cast<int64_t>(EnvNumber(kOnnxHeapTopEnv, /*fallback=*/16.0) * (1 << 20));
    if (top == 0 || EnvironmentSetsThresholds()) return 0;
    // Setting either threshold stops glibc's rise of both; the mmap threshold is fixed where
    // that rise would end, so large blocks come from the heaps as before.
    if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOnnxMmapThresholdBytes)) != 1 ||
        mallopt(M_TRIM_THRESHOLD, static_cast<int>(top)) != 1) {
      return 0;
    }
    return top;
  }();
  return trim_threshold;
}

void TrimHeapsNowAndThen() {
  static std::atomic<int64_t> last_trim{0};
  const int64_t interval = HeapTrimIntervalNanos();
  if (interval == 0) return;
  const int64_t now = absl::GetCurrentTimeNanos();
  int64_t last = last_trim.load(std::memory_order_relaxed);
  if (now - last < interval) return;
  if (!last_trim.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  malloc_trim(0);
}

}  // namespace adaptd
