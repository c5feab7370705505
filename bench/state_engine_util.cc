#include "bench/state_engine_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_format.h"

namespace adaptd::bench {
namespace {

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::string drop_mode = "not tried";

}  // namespace

void FillValue(std::string* value, int64_t bytes, int64_t store, uint64_t version) {
  value->resize(static_cast<size_t>(bytes));
  uint64_t state = static_cast<uint64_t>(store) * 1000003u + version;
  char* p = value->data();
  const uint64_t head[2] = {static_cast<uint64_t>(store), version};
  std::memcpy(p, head, sizeof(head));
  for (int64_t at = 16; at < bytes; at += 8) {
    const uint64_t word = SplitMix(&state);
    std::memcpy(p + at, &word, std::min<int64_t>(8, bytes - at));
  }
}

absl::Status CheckValue(std::string_view value, int64_t bytes, int64_t store, uint64_t version) {
  uint64_t head[2] = {0, 0};
  if (static_cast<int64_t>(value.size()) == bytes) std::memcpy(head, value.data(), sizeof(head));
  if (head[0] != static_cast<uint64_t>(store) || head[1] != version) {
    return absl::DataLossError(Cat("store ", store, ": read ", value.size(), " bytes of store ",
                                   head[0], " version ", head[1], ", expected ", bytes,
                                   " bytes of version ", version));
  }
  return absl::OkStatus();
}

void FillCatalog(std::string* out, std::string_view tenant, std::string_view store,
                 uint64_t version, int64_t value_bytes) {
  *out = Cat("{\"tenant\":\"", tenant, "\",\"name\":\"", store,
             "\",\"kind\":\"faast\",\"incarnation\":", 1000 + version,
             ",\"durable_lsn\":", 5000000 + version, ",\"dims\":256,\"labels\":16,",
             "\"state_bytes\":", value_bytes, ",\"residency\":\"cold\",\"spec\":\"");
  out->resize(196, 'x');  // the rest of a spec, about 200 bytes in all
  out->append("\"}");
}

uint64_t Checksum(std::string_view data) {
  uint64_t h = 0xcbf29ce484222325ull;
  size_t at = 0;
  for (; at + 8 <= data.size(); at += 8) {
    uint64_t word;
    std::memcpy(&word, data.data() + at, 8);
    h = (h ^ word) * 0x100000001b3ull;
  }
  for (; at < data.size(); ++at) h = (h ^ static_cast<unsigned char>(data[at])) * 0x100000001b3ull;
  return h;
}

void DropCaches(const std::string& dir, bool enabled) {
  if (!enabled) {
    drop_mode = "none (--drop-caches=false): the cold figures are warm";
    return;
  }
  ::sync();
  if (FILE* f = std::fopen("/proc/sys/vm/drop_caches", "w")) {
    const bool ok = std::fputs("3\n", f) >= 0;
    if (std::fclose(f) == 0 && ok) {
      drop_mode = "sync; echo 3 > /proc/sys/vm/drop_caches (cold reads are cold)";
      return;
    }
  }
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  drop_mode =
      "drop_caches refused; posix_fadvise(DONTNEED) on the engine's files instead "
      "(data pages dropped, directory and inode caches kept)";
}

std::string CacheDropMode() { return drop_mode; }

uint64_t DiskBytes(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st;
    if (::lstat(entry.path().c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

uint64_t FreeBytes(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return 0;
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(q * values.size()));
  return values[at];
}

}  // namespace adaptd::bench
