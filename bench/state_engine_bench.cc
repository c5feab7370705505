// Which on-disk engine should hold adaptd's per-store state: LMDB, RocksDB or a file per store
// (today's layout)? Each engine runs the same workload in turn, in one process, on one disk:
//  1. initial load: N stores (a value of B random bytes plus a ~200-byte catalog record each),
//     1,000 stores per durable checkpoint;
//  2. incremental checkpoints: R rounds, each rewriting a random 10% of the stores; disk bytes
//     afterwards against live bytes (RocksDB also after a forced CompactRange);
//  3. open to ready: close, drop the page cache, reopen and scan every catalog record;
//  4. point reads of whole values, cold (page cache dropped) and then warm: p50 and p99;
//  5. one large value (default 4 GiB) in 16 MiB chunks, written and read back with a checksum.
// Only the engine calls are timed, not making the data. It prints one markdown table.
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "bench/state_engine_util.h"
#include "bench/state_engines.h"
#include "server/base/status_macros.h"

namespace adaptd::bench {
namespace {

struct Options {
  std::string engine = "all";
  int64_t stores = 100000;
  int64_t value_bytes = 16384;
  std::string dir = "/tmp/state-engine-bench";
  int rounds = 3;
  int64_t reads = 2000;
  double large_gib = 4;
  int64_t per_commit = 1000;
  int64_t tenants = 100;
  bool drop_caches = true;
  bool lmdb_readahead = false;
  int rocksdb_memtable_mib = 256;
};

struct Result {
  std::string engine, settings;
  double load_s = 0, round_s = 0, open_s = 0, compact_s = 0;
  double disk = 0, disk_compacted = -1, live = 0;
  int64_t catalog_records = 0;
  double cold_p50 = 0, cold_p99 = 0, warm_p50 = 0, warm_p99 = 0;
  std::string large;  // "write / read MB/s" or why it was skipped
  double large_write = 0, large_read = 0;
};

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string Tenant(const Options& o, int64_t i) { return absl::StrFormat("t%03d", i % o.tenants); }
std::string Store(int64_t i) { return absl::StrFormat("s%07d", i); }

// Writes the stores in `order` (version `version`), one checkpoint per o.per_commit stores.
// Returns the seconds spent in engine calls.
absl::StatusOr<double> WriteStores(StateEngine& e, const Options& o,
                                   const std::vector<int64_t>& order, uint64_t version) {
  std::string value, catalog;
  double timed = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const int64_t i = order[n];
    FillValue(&value, o.value_bytes, i, version);
    FillCatalog(&catalog, Tenant(o, i), Store(i), version, o.value_bytes);
    auto t = Clock::now();
    RETURN_IF_ERROR(e.WriteStore(Tenant(o, i), Store(i), catalog, value));
    if ((n + 1) % o.per_commit == 0 || n + 1 == order.size()) RETURN_IF_ERROR(e.Commit());
    timed += Since(t);
  }
  return timed;
}

// Reads `which` and checks each value is the version last written; latencies in ms.
absl::StatusOr<std::vector<double>> ReadStores(StateEngine& e, const Options& o,
                                               const std::vector<int64_t>& which,
                                               const std::vector<uint64_t>& versions) {
  std::vector<double> ms;
  std::string value;
  for (int64_t i : which) {
    auto t = Clock::now();
    RETURN_IF_ERROR(e.ReadValue(Tenant(o, i), Store(i), &value));
    ms.push_back(Since(t) * 1e3);
    RETURN_IF_ERROR(CheckValue(value, o.value_bytes, i, versions[i]));
  }
  return ms;
}

absl::Status LargeValue(StateEngine& e, const Options& o, const std::string& dir, Result* r) {
  const int64_t chunk = int64_t{16} << 20;
  const int64_t chunks = static_cast<int64_t>(o.large_gib * (1 << 30)) / chunk;
  const uint64_t need = static_cast<uint64_t>(chunks * chunk) * 3 / 2 + (1ull << 30);
  if (o.large_gib <= 0 || chunks == 0) {
    r->large = "not run (--large-gib 0)";
    return absl::OkStatus();
  }
  if (FreeBytes(dir) < need) {
    r->large =
        absl::StrFormat("skipped: %.1f GB free, %.1f GB needed", FreeBytes(dir) / 1e9, need / 1e9);
    std::printf("note: %s large value %s\n", e.Name().c_str(), r->large.c_str());
    return absl::OkStatus();
  }
  std::string value;
  uint64_t written_sum = 0, read_sum = 0;
  double timed = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    FillValue(&value, chunk, c, 7);
    written_sum ^= Checksum(value) * (2 * c + 1);
    auto t = Clock::now();
    RETURN_IF_ERROR(e.WriteStore("t000", absl::StrFormat("big/%05d", c), "", value));
    if ((c + 1) % 64 == 0 || c + 1 == chunks) RETURN_IF_ERROR(e.Commit());  // 1 GiB checkpoints
    timed += Since(t);
  }
  r->large_write = chunks * chunk / timed / 1e6;
  e.Close();
  DropCaches(dir, o.drop_caches);
  auto t = Clock::now();
  RETURN_IF_ERROR(e.Open());
  for (int64_t c = 0; c < chunks; ++c) {
    RETURN_IF_ERROR(e.ReadValue("t000", absl::StrFormat("big/%05d", c), &value));
    if (static_cast<int64_t>(value.size()) != chunk) {
      return absl::DataLossError(Cat("large value chunk ", c, ": wrong size"));
    }
    read_sum ^= Checksum(value) * (2 * c + 1);
  }
  r->large_read = chunks * chunk / Since(t) / 1e6;
  if (read_sum != written_sum) return absl::DataLossError("large value: checksum mismatch");
  r->large = absl::StrFormat("%.0f / %.0f", r->large_write, r->large_read);
  return absl::OkStatus();
}

absl::StatusOr<Result> RunEngine(const std::string& name, const Options& o) {
  Result r;
  r.engine = name;
  const std::string dir = (std::filesystem::path(o.dir) / name).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const int64_t catalog_bytes = 200;
  r.live = static_cast<double>(o.stores) * (o.value_bytes + catalog_bytes + 2 * 16);
  ASSIGN_OR_RETURN(auto engine, MakeStateEngine(name, {dir, static_cast<uint64_t>(r.live),
                                                       o.lmdb_readahead, o.rocksdb_memtable_mib}));
  r.settings = engine->Settings();
  RETURN_IF_ERROR(engine->Open());
  std::mt19937_64 rng(42);
  std::vector<int64_t> all(o.stores);
  for (int64_t i = 0; i < o.stores; ++i) all[i] = i;
  std::vector<uint64_t> versions(o.stores, 0);

  std::fprintf(stderr, "[%s] load\n", name.c_str());
  ASSIGN_OR_RETURN(r.load_s, WriteStores(*engine, o, all, 0));

  std::fprintf(stderr, "[%s] %d checkpoint rounds\n", name.c_str(), o.rounds);
  std::vector<int64_t> order = all;
  for (int round = 1; round <= o.rounds; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> some(order.begin(), order.begin() + std::max<int64_t>(1, o.stores / 10));
    ASSIGN_OR_RETURN(double s, WriteStores(*engine, o, some, round));
    for (int64_t i : some) versions[i] = round;
    r.round_s += s / o.rounds;
  }
  engine->WaitIdle();
  r.disk = static_cast<double>(DiskBytes(dir));
  if (name == "rocksdb") {
    auto t = Clock::now();
    RETURN_IF_ERROR(engine->CompactAll());
    engine->WaitIdle();
    r.compact_s = Since(t);
    r.disk_compacted = static_cast<double>(DiskBytes(dir));
  }

  std::fprintf(stderr, "[%s] open to ready\n", name.c_str());
  engine->Close();
  DropCaches(dir, o.drop_caches);
  auto t = Clock::now();
  RETURN_IF_ERROR(engine->Open());
  RETURN_IF_ERROR(engine->ScanCatalog(
      [&](std::string_view, std::string_view rec) { r.catalog_records += rec.empty() ? 0 : 1; }));
  r.open_s = Since(t);
  if (r.catalog_records != o.stores) {
    return absl::DataLossError(
        Cat(name, ": catalog scan found ", r.catalog_records, " records, expected ", o.stores));
  }

  std::fprintf(stderr, "[%s] point reads\n", name.c_str());
  engine->Close();
  DropCaches(dir, o.drop_caches);
  RETURN_IF_ERROR(engine->Open());
  std::vector<int64_t> which(o.reads);
  std::uniform_int_distribution<int64_t> pick(0, o.stores - 1);
  for (auto& i : which) i = pick(rng);
  ASSIGN_OR_RETURN(std::vector<double> cold, ReadStores(*engine, o, which, versions));
  ASSIGN_OR_RETURN(std::vector<double> warm, ReadStores(*engine, o, which, versions));
  r.cold_p50 = Percentile(cold, 0.50), r.cold_p99 = Percentile(cold, 0.99);
  r.warm_p50 = Percentile(warm, 0.50), r.warm_p99 = Percentile(warm, 0.99);

  std::fprintf(stderr, "[%s] large value\n", name.c_str());
  RETURN_IF_ERROR(LargeValue(*engine, o, dir, &r));
  engine->Close();
  std::filesystem::remove_all(dir);  // room for the next engine
  return r;
}

void PrintTable(const Options& o, const std::vector<Result>& results) {
  std::printf("\nN = %ld stores, B = %ld bytes, %d rounds of 10%%, %ld reads, cache drop: %s\n\n",
              o.stores, o.value_bytes, o.rounds, o.reads, CacheDropMode().c_str());
  std::string head = "| metric |", rule = "|---|";
  for (const Result& r : results) head += " " + r.engine + " |", rule += "---:|";
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  auto row = [&](const char* metric, auto cell) {
    std::string line = Cat("| ", metric, " |");
    for (const Result& r : results) line += " " + cell(r) + " |";
    std::printf("%s\n", line.c_str());
  };
  const double bytes = o.stores * (o.value_bytes + 200.0);
  auto f = [](const char* fmt, double v) { return absl::StrFormat(fmt, v); };
  row("load: stores/s", [&](const Result& r) { return f("%.0f", o.stores / r.load_s); });
  row("load: MB/s", [&](const Result& r) { return f("%.1f", bytes / r.load_s / 1e6); });
  row("checkpoint 10%: s per round", [&](const Result& r) { return f("%.2f", r.round_s); });
  row("disk after rounds: GB (× live)", [&](const Result& r) {
    return absl::StrFormat("%.2f (%.2f×)", r.disk / 1e9, r.disk / r.live);
  });
  row("after CompactRange: GB (× live), s", [&](const Result& r) {
    return r.disk_compacted < 0 ? std::string("n/a")
                                : absl::StrFormat("%.2f (%.2f×), %.1f s", r.disk_compacted / 1e9,
                                                  r.disk_compacted / r.live, r.compact_s);
  });
  row("open + catalog scan (cold): s", [&](const Result& r) { return f("%.2f", r.open_s); });
  row("read cold: p50 / p99 ms",
      [&](const Result& r) { return absl::StrFormat("%.2f / %.2f", r.cold_p50, r.cold_p99); });
  row("read warm: p50 / p99 ms",
      [&](const Result& r) { return absl::StrFormat("%.3f / %.3f", r.warm_p50, r.warm_p99); });
  const std::string large = absl::StrFormat("%g GiB value: write / read MB/s", o.large_gib);
  row(large.c_str(), [&](const Result& r) { return r.large; });
  std::printf("\n");
  for (const Result& r : results) std::printf("- %s: %s\n", r.engine.c_str(), r.settings.c_str());
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"On-disk engines for per-store state: LMDB, RocksDB, a file per store"};
  app.add_option("--engine", o.engine, "lmdb, rocksdb, files or all")
      ->check(CLI::IsMember({"lmdb", "rocksdb", "files", "all"}));
  app.add_option("--stores", o.stores, "number of stores N")->check(CLI::Range(1, 100000000));
  app.add_option("--value-bytes", o.value_bytes, "bytes per store value B")
      ->check(CLI::Range(16, 1 << 30));
  app.add_option("--dir", o.dir, "a directory on the disk to measure (emptied per engine)");
  app.add_option("--rounds", o.rounds, "incremental checkpoint rounds")->check(CLI::Range(0, 100));
  app.add_option("--reads", o.reads, "random point reads")->check(CLI::Range(1, 10000000));
  app.add_option("--large-gib", o.large_gib, "size of the one large value (0: skip)")
      ->check(CLI::Range(0.0, 1024.0));
  app.add_flag("--drop-caches,!--no-drop-caches", o.drop_caches,
               "drop the page cache before the cold phases (needs root; default on)");
  app.add_flag("--lmdb-readahead,!--lmdb-no-readahead", o.lmdb_readahead,
               "LMDB with OS readahead, or MDB_NORDAHEAD with madvise per value (default)");
  app.add_option("--rocksdb-memtable-mib", o.rocksdb_memtable_mib, "RocksDB write_buffer_size")
      ->check(CLI::Range(4, 4096));
  CLI11_PARSE(app, argc, argv);

  std::filesystem::create_directories(o.dir);
  const double need = 2.5 * o.stores * (o.value_bytes + 300.0);
  if (FreeBytes(o.dir) < need) {
    std::fprintf(stderr, "--dir %s: %.1f GB free, the run needs about %.1f GB\n", o.dir.c_str(),
                 FreeBytes(o.dir) / 1e9, need / 1e9);
    return 1;
  }
  std::vector<std::string> names = {o.engine};
  if (o.engine == "all") names = {"lmdb", "rocksdb", "files"};
  std::vector<Result> results;
  for (const std::string& name : names) {
    absl::StatusOr<Result> r = RunEngine(name, o);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 1;
    }
    results.push_back(*std::move(r));
  }
  PrintTable(o, results);
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
