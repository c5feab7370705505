// Helpers of state_engine_bench: the stores' data (random incompressible values that carry
// their store and version, so reads can be checked, and catalog records), dropping the page
// cache, disk usage and percentiles.
//
// Thread-safety: the functions keep no shared state except CacheDropMode's record of how the
// last DropCaches worked; call them from one thread.
#ifndef ADAPTD_BENCH_STATE_ENGINE_UTIL_H_
#define ADAPTD_BENCH_STATE_ENGINE_UTIL_H_

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace adaptd::bench {

// Concatenation of strings and integers. absl::StrCat takes absl::string_view, which this
// abseil build does not alias to std::string_view, so std::string_view arguments fail there.
inline void AppendTo(std::string* out, std::string_view part) { out->append(part); }
template <std::integral T>
void AppendTo(std::string* out, T part) {
  out->append(std::to_string(part));
}
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (AppendTo(&out, parts), ...);
  return out;
}

// `bytes` random bytes; the first 16 are the store index and version (bytes >= 16).
void FillValue(std::string* value, int64_t bytes, int64_t store, uint64_t version);
// Checks a value read back is what FillValue made for this store (size, index, version).
absl::Status CheckValue(std::string_view value, int64_t bytes, int64_t store, uint64_t version);
// A catalog record of about 200 bytes, shaped like a store's descriptor.
void FillCatalog(std::string* out, std::string_view tenant, std::string_view store,
                 uint64_t version, int64_t value_bytes);
uint64_t Checksum(std::string_view data);

// Flushes dirty pages and drops the page cache (drop_caches when allowed, else
// posix_fadvise(DONTNEED) on every file under `dir`); CacheDropMode says which worked. With
// enabled false (smoke runs on a shared machine) it does nothing and says so.
void DropCaches(const std::string& dir, bool enabled);
std::string CacheDropMode();

uint64_t DiskBytes(const std::string& dir);  // allocated blocks of every file under dir
uint64_t FreeBytes(const std::string& dir);  // free space of dir's file system
double Percentile(std::vector<double> values, double q);

}  // namespace adaptd::bench

#endif  // ADAPTD_BENCH_STATE_ENGINE_UTIL_H_
