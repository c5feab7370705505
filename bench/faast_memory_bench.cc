// Memory per faast store, and the time to snapshot and restore them. Creates N stores through
// the Store API, adapts E examples to each (L labels, dimension d), compiles each and builds its
// float read-out (as the first grouped predict does), then reports the process's resident-set
// growth per store (/proc/self/statm) beside the sum of the stores' StoreInfo.memory_bytes and
// the allocator's own count of bytes in use (mallinfo2). It then snapshots every store
// (serialized, as on disk), restores it and checks that it predicts bit for bit as before, once
// from the full snapshot (the published read-out is restored as it is) and once with the read-out
// cleared from it, as a snapshot written before it was kept (the restore solves again).
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/bench_common.h"
#include "kernels/backend.h"
#include "server/stores/store.h"
#include "server/stores/store_factory.h"

namespace adaptd::bench {
namespace {

struct Options {
  int64_t stores = 5000;
  int64_t dim = 256;
  int64_t labels = 16;
  int64_t examples = 64;
  int64_t txns = 1;  // transactions per store, the examples split evenly
  bool few_shot = true;
  int threads = 1;
  std::string json;
};

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Bytes the allocator has handed out and not had back (heap chunks in use plus mmapped ones).
int64_t AllocatedBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

// One store: E examples in `txns` transactions, compiled, its read-out built.
std::unique_ptr<Store> FilledStore(const Options& o, uint64_t seed, kernels::Backend* backend) {
  std::unique_ptr<Store> store =
      Take(CreateStore(FaastSpec(o.dim, true, 0, 0.0, o.few_shot), backend), "create");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> label(0, o.labels - 1);
  const std::vector<float> keys = NormalFloats(seed, o.examples * o.dim);
  const int64_t per_txn = (o.examples + o.txns - 1) / o.txns;
  for (int64_t first = 0; first < o.examples; first += per_txn) {
    ExampleBatch b;
    b.rows = std::min(per_txn, o.examples - first);
    b.dim = o.dim;
    b.keys.assign(keys.begin() + first * o.dim, keys.begin() + (first + b.rows) * o.dim);
    for (int64_t r = 0; r < b.rows; ++r) {
      // Every label appears in the first transaction, so that all stores hold L labels.
      const int64_t l = first + r < o.labels ? first + r : label(rng);
      b.labels.push_back("label_" + std::to_string(l));
    }
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    Check(txn->Add(b), "adapt");
    Take(store->Commit(*txn), "commit");
  }
  Take(store->Compile(adapt::v1::CompileRequest()), "compile");
  if (store->Readout() == nullptr) Check(absl::InternalError("no read-out"), "readout");
  return store;
}

struct RestoreTiming {
  double snapshot_s = 0;  // Snapshot + SerializeToString
  double restore_s = 0;   // ParseFromString + RestoreStore
  int64_t snapshot_bytes = 0;
  int64_t mismatches = 0;  // stores whose restored predictions differ in any bit
};

bool SamePredictions(const Store& a, const Store& b, const std::vector<float>& probe, int64_t dim) {
  const int64_t rows = static_cast<int64_t>(probe.size()) / dim;
  Predictions pa = Take(a.Predict(probe.data(), rows, dim, 3), "predict");
  Predictions pb = Take(b.Predict(probe.data(), rows, dim, 3), "predict");
  return pa.version == pb.version && pa.label_ids == pb.label_ids && pa.scores == pb.scores;
}

// Snapshots and restores every store in turn (one restored store alive at a time);
// `old_format`: the published read-out is cleared from each snapshot first.
RestoreTiming SnapshotRestore(const std::vector<std::unique_ptr<Store>>& stores, bool old_format,
                              const std::vector<float>& probe, int64_t dim,
                              kernels::Backend* backend) {
  RestoreTiming t;
  for (const std::unique_ptr<Store>& store : stores) {
    double start = NowSeconds();
    adapt::v1::StoreSnapshot snapshot = Take(store->Snapshot(), "snapshot");
    if (old_format) {
      snapshot.mutable_faast()->clear_published();
      snapshot.mutable_faast()->clear_pending_examples();
    }
    std::string bytes;
    snapshot.SerializeToString(&bytes);
    t.snapshot_s += NowSeconds() - start;
    t.snapshot_bytes += static_cast<int64_t>(bytes.size());

    start = NowSeconds();
    adapt::v1::StoreSnapshot parsed;
    if (!parsed.ParseFromString(bytes)) Check(absl::DataLossError("unparsable"), "parse");
    std::unique_ptr<Store> restored = Take(RestoreStore(parsed, backend), "restore");
    t.restore_s += NowSeconds() - start;
    if (!SamePredictions(*store, *restored, probe, dim)) ++t.mismatches;
  }
  return t;
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"faast memory per store, and snapshot + restore time"};
  app.add_option("--stores", o.stores, "stores N");
  app.add_option("--dim", o.dim, "key dimension d");
  app.add_option("--labels", o.labels, "labels per store L");
  app.add_option("--examples", o.examples, "examples per store E");
  app.add_option("--txns", o.txns, "transactions per store");
  app.add_option("--few-shot", o.few_shot, "spec.faast.few_shot (the default keeps raw pairs)");
  app.add_option("--threads", o.threads, "OpenBLAS threads (0: the library's default)");
  app.add_option("--json", o.json, "write the results here");
  CLI11_PARSE(app, argc, argv);
  if (o.labels > o.examples) Check(absl::InvalidArgumentError("labels > examples"), "options");

  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(o.threads);
  const Machine machine = DescribeMachine();
  std::printf("# faast memory: N = %ld, d = %ld, %ld labels, %ld examples, %ld txn(s)\n%s\n\n",
              static_cast<long>(o.stores), static_cast<long>(o.dim), static_cast<long>(o.labels),
              static_cast<long>(o.examples), static_cast<long>(o.txns),
              MachineLine(machine).c_str());
  // One store first, dropped, so that the library's one-time buffers are not counted.
  FilledStore(o, 1, backend.get());
  const int64_t rss0 = ResidentBytes(), alloc0 = AllocatedBytes();
  const double build_start = NowSeconds();
  std::vector<std::unique_ptr<Store>> stores;
  stores.reserve(o.stores);
  for (int64_t i = 0; i < o.stores; ++i) stores.push_back(FilledStore(o, 1000 + i, backend.get()));
  const double build_s = NowSeconds() - build_start;
  const int64_t rss = ResidentBytes() - rss0, alloc = AllocatedBytes() - alloc0;
  malloc_trim(0);  // hands free pages inside the heap back: what is left is held or fragmented
  const int64_t rss_trimmed = ResidentBytes() - rss0;
  int64_t counted = 0;
  for (const std::unique_ptr<Store>& s : stores) {
    adapt::v1::StoreInfo info;
    s->Describe(&info);
    counted += static_cast<int64_t>(info.memory_bytes());
  }
  const double n = static_cast<double>(o.stores);
  std::printf("| per store | bytes |\n|---|---|\n");
  std::printf("| RSS growth | %.0f |\n", rss / n);
  std::printf("| RSS growth after malloc_trim(0) | %.0f |\n", rss_trimmed / n);
  std::printf("| allocator in use (mallinfo2) | %.0f |\n", alloc / n);
  std::printf("| StoreInfo.memory_bytes | %.0f |\n", counted / n);
  std::printf("\nmemory_bytes / RSS growth: %.3f; build %.1f s\n\n",
              static_cast<double>(counted) / rss, build_s);

  const std::vector<float> probe = NormalFloats(7, 4 * o.dim);
  const RestoreTiming kept = SnapshotRestore(stores, false, probe, o.dim, backend.get());
  const RestoreTiming solved = SnapshotRestore(stores, true, probe, o.dim, backend.get());
  std::printf("| restore path | snapshot s | restore s | snapshot MB | mismatches |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const auto& [name, t] : {std::pair<const char*, const RestoreTiming&>{"read-out kept", kept},
                                {"solved again (old format)", solved}}) {
    std::printf("| %s | %.2f | %.2f | %.1f | %ld |\n", name, t.snapshot_s, t.restore_s,
                t.snapshot_bytes / 1e6, static_cast<long>(t.mismatches));
  }
  WriteJson(o.json, {{"benchmark", "faast_memory"},
                     {"machine", MachineJson(machine)},
                     {"stores", o.stores},
                     {"dim", o.dim},
                     {"labels", o.labels},
                     {"examples", o.examples},
                     {"rss_per_store", rss / n},
                     {"rss_trimmed_per_store", rss_trimmed / n},
                     {"allocated_per_store", alloc / n},
                     {"memory_bytes_per_store", counted / n},
                     {"restore_kept_s", kept.restore_s},
                     {"restore_solved_s", solved.restore_s},
                     {"snapshot_kept_bytes", kept.snapshot_bytes},
                     {"snapshot_old_bytes", solved.snapshot_bytes}});
  return kept.mismatches == 0 ? 0 : 1;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
