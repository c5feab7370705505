#include "server/http/civetweb_tls.h"

#include <link.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"

namespace adaptd::http {
namespace {

constexpr char kMissing[] = "SSL_get_peer_certificate";
// civetweb 1.15's entry: {const char* name; int required; void (*ptr)(void)}, three words.
constexpr size_t kEntryWords = 3;

struct Range {
  uintptr_t begin, end;
  bool writable;
};

struct Search {
  std::vector<Range> ranges;  // civetweb's loaded segments
  bool found = false;
};

int CollectCivetweb(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name == nullptr || !absl::StrContains(info->dlpi_name, "libcivetweb.so")) {
    return 0;
  }
  auto* search = static_cast<Search*>(data);
  search->found = true;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    search->ranges.push_back({begin, begin + segment.p_memsz, (segment.p_flags & PF_W) != 0});
  }
  return 1;
}

// Whether `address` points at a function name of civetweb's table, inside its segments.
bool IsName(const Search& search, uintptr_t address, const char* name = nullptr) {
  for (const Range& range : search.ranges) {
    if (address < range.begin || address >= range.end) continue;
    const auto* text = reinterpret_cast<const char*>(address);
    const size_t room = range.end - address;
    if (name != nullptr) {
      const size_t length = std::strlen(name) + 1;
      return room >= length && std::memcmp(text, name, length) == 0;
    }
    return room >= 4 && std::memcmp(text, "SSL_", 4) == 0;
  }
  return false;
}

}  // namespace

absl::Status RepairCivetwebTls() {
  Search search;
  dl_iterate_phdr(&CollectCivetweb, &search);
  if (!search.found) return absl::OkStatus();  // civetweb linked in some other way: not Debian's
  for (const Range& range : search.ranges) {
    if (!range.writable) continue;
    auto* words = reinterpret_cast<uintptr_t*>(range.begin);
    const size_t count = (range.end - range.begin) / sizeof(uintptr_t);
    for (size_t i = kEntryWords; i + 2 * kEntryWords <= count; ++i) {
      if (!IsName(search, words[i], kMissing)) continue;
      uintptr_t& ptr = words[i + 2];
      if (ptr != 0) return absl::OkStatus();  // a civetweb that found the function
      // The entries around it are the layout known: names three words apart.
      if (!IsName(search, words[i - kEntryWords]) || !IsName(search, words[i + kEntryWords])) {
        break;
      }
      if (words[i - 1] == 0) {  // the entry before is empty too: OpenSSL was not loaded
        return absl::FailedPreconditionError(
            "civetweb could not load OpenSSL: it opens libssl.so and libcrypto.so by those "
            "unversioned names (libssl-dev installs them as links to libssl.so.3 and "
            "libcrypto.so.3)");
      }
      ptr = reinterpret_cast<uintptr_t>(&SSL_get1_peer_certificate);
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError(
      "civetweb's OpenSSL table has no usable SSL_get_peer_certificate (OpenSSL 3 names it "
      "SSL_get1_peer_certificate) and its layout is not civetweb 1.15's: it would crash on the "
      "first TLS connection");
}

}  // namespace adaptd::http
