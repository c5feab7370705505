// Snapshot file format 2 against a plain memcpy: encode (EncodeStoreFile: the store's arrays
// written into a fresh file, and their checksums), decode (DecodeSnapshotState: every checksum
// checked), restore (RestoreStore from the decoded sections), and memcpy of the file's bytes
// into a fresh buffer, side by side in one run, over the fwpkm state of tests/large (2^24
// slots, 2.06 GiB; pass --rounds for more than one measurement each, the median is printed).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/bench_common.h"
#include "server/base/binary_format.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"
#include "tests/large/big_fwpkm_state.h"

namespace adaptd::bench {
namespace {

void Row(const char* what, double seconds, size_t bytes) {
  std::printf("| %-34s | %8.3f | %6.2f |\n", what, seconds, bytes / seconds / 1e9);
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) {
  using namespace adaptd;
  using namespace adaptd::bench;
  CLI::App app("snapshot file format 2 against memcpy");
  int rounds = 1;
  app.add_option("--rounds", rounds, "measurements of each step (median)");
  CLI11_PARSE(app, argc, argv);
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend();
  std::unique_ptr<Store> store = Take(large::BigFwpkmStore(backend.get()), "build");
  std::vector<double> encode, decode, restore, copy, crc;
  size_t bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    double t = NowSeconds();
    std::string file = Take(EncodeStoreFile(*store), "encode");
    encode.push_back(NowSeconds() - t);
    bytes = file.size();
    t = NowSeconds();
    std::string copied(file.size(), '\0');
    std::memcpy(copied.data(), file.data(), file.size());
    copy.push_back(NowSeconds() - t);
    copied = std::string();
    t = NowSeconds();
    volatile uint32_t sum = Crc32Of(file);
    (void)sum;
    crc.push_back(NowSeconds() - t);
    t = NowSeconds();
    DecodedSnapshot decoded = Take(DecodeSnapshotState(file), "decode");
    decode.push_back(NowSeconds() - t);
    if (r + 1 == rounds) store.reset();  // the restore's copy replaces the original
    t = NowSeconds();
    std::unique_ptr<Store> restored =
        Take(RestoreStore(decoded.header, decoded.arrays, backend.get()), "restore");
    restore.push_back(NowSeconds() - t);
  }
  std::printf("%s\nfwpkm state: 2^24 slots, width 32, bfloat16; file %zu bytes\n\n",
              MachineLine(DescribeMachine()).c_str(), bytes);
  std::printf("| %-34s | %8s | %6s |\n", "step", "seconds", "GB/s");
  std::printf("|%s|%s|%s|\n", std::string(36, '-').c_str(), std::string(10, '-').c_str(),
              std::string(8, '-').c_str());
  Row("memcpy into a fresh buffer", Median(copy), bytes);
  Row("CRC-32 of the file (zlib)", Median(crc), bytes);
  Row("encode (EncodeStoreFile)", Median(encode), bytes);
  Row("decode (DecodeSnapshotState)", Median(decode), bytes);
  Row("restore (RestoreStore, sections)", Median(restore), bytes);
  return 0;
}
