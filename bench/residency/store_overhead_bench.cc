// What a cold and a warm store cost in heap, measured inside one process with glibc's
// mallinfo2 (bytes handed out by malloc, every arena and mmap'd block included; freed memory
// the allocator keeps does not count), so the figure belongs to the engine's own structures
// and not to the page cache or the allocator's caching. N faast stores (the residency
// benchmark's: identity encoder, d, labels, examples, one compile) are filled and checkpointed
// by one engine; a second engine on the same data directory starts with every store cold
// (heap per cold store, less what an engine with no store holds), then one Predict per store
// makes each warm (heap per store made warm, beside the read-out's own floats). Prints one JSON
// line on stdout and a summary on stderr.
//
//   build/bench/residency/store_overhead_bench --stores 2000
#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "kernels/backend.h"
#include "nlohmann/json.hpp"
#include "server/config/config.h"
#include "server/core/engine.h"

namespace adaptd::bench {
namespace {

// RssAnon of /proc/self/status, in bytes: what the process's heap really occupies (freed
// memory the allocator keeps included).
uint64_t RssAnonBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

uint64_t HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

std::string StoreName(int64_t j) { return absl::StrCat("s", j); }

absl::Status Fill(Engine& engine, int64_t j, int dim, int labels, int examples) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant(absl::StrCat("t", j % 10));
  create.set_store(StoreName(j));
  adapt::v1::StoreSpec& spec = *create.mutable_spec();
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.set_dim(dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  if (auto info = engine.CreateStore(create); !info.ok()) return info.status();
  std::mt19937_64 rng(j);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> label(0, labels - 1);
  google::protobuf::RepeatedPtrField<adapt::v1::Example> batch;
  for (int i = 0; i < examples; ++i) {
    adapt::v1::Example* e = batch.Add();
    e->set_label(absl::StrCat("label_", i < labels ? i : label(rng)));
    for (int c = 0; c < dim; ++c) e->mutable_input()->mutable_vector()->add_values(normal(rng));
  }
  auto session = engine.StartWrite(TxnKind::kAdapt);
  if (absl::Status added = session->Add(create.tenant(), create.store(), batch); !added.ok()) {
    return added;
  }
  if (auto done = session->Finish(); !done.ok()) return done.status();
  adapt::v1::CompileRequest compile;
  compile.set_tenant(create.tenant());
  compile.set_store(create.store());
  absl::Notification compiled;
  absl::Status status;
  engine.Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
    status = r.status();
    compiled.Notify();
  });
  compiled.WaitForNotification();
  return status;
}

int Main(int argc, char** argv) {
  int64_t stores = 2000;
  int dim = 256, labels = 16, examples = 64;
  std::string dir = (std::filesystem::temp_directory_path() / "adaptd-store-overhead").string();
  CLI::App app("heap per cold and per warm store (bench/RESULTS.md, \"Residency\")");
  app.add_option("--stores", stores, "Stores (N)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  app.add_option("--dim", dim, "Key dimension d")
      ->capture_default_str()
      ->check(CLI::Range(1, 8192));
  app.add_option("--labels", labels, "Labels per store")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--examples", examples, "Labelled examples per store")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--data-dir", dir, "Scratch data directory (removed first and after)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::filesystem::remove_all(dir);
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(1);
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir(dir);
  config.set_log_fsync(false);
  config.set_memory_budget_bytes(uint64_t{256} << 20);  // the filling engine evicts as it goes
  {
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(config, backend.get(), nullptr);
    if (!engine.ok()) {
      std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
      return 1;
    }
    for (int64_t j = 0; j < stores; ++j) {
      if (absl::Status filled = Fill(**engine, j, dim, labels, examples); !filled.ok()) {
        std::fprintf(stderr, "store %lld: %s\n", static_cast<long long>(j),
                     filled.ToString().c_str());
        return 1;
      }
    }
    (*engine)->Shutdown();  // automatic compiles done, so the checkpoint leaves no log tail
    if (absl::Status flushed = (*engine)->Flush(); !flushed.ok()) {
      std::fprintf(stderr, "flush: %s\n", flushed.ToString().c_str());
      return 1;
    }
  }

  config.set_memory_budget_bytes(0);  // nothing evicted: every store read stays warm
  // What an engine holds with no store (its threads, pools, the state database's handles),
  // measured on an empty data directory and taken off the per-store figures.
  uint64_t fixed = 0;
  {
    adapt::v1::ServerConfig empty = config;
    empty.set_data_dir(dir + "-empty");
    std::filesystem::remove_all(empty.data_dir());
    malloc_trim(0);
    const uint64_t before = HeapBytes();
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(empty, backend.get(), nullptr);
    if (!engine.ok()) {
      std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
      return 1;
    }
    fixed = HeapBytes() - before;
    engine->reset();
    std::filesystem::remove_all(empty.data_dir());
  }
  malloc_trim(0);
  const uint64_t before = HeapBytes(), rss_before = RssAnonBytes();
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(config, backend.get(), nullptr);
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  const uint64_t cold = HeapBytes(), rss_cold = RssAnonBytes();
  uint64_t started_cold = 0;
  for (int64_t j = 0; j < stores; ++j) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant(absl::StrCat("t", j % 10));
    get.set_store(StoreName(j));
    auto info = (*engine)->GetStore(get);
    if (info.ok() && info->tier() == adapt::v1::TIER_COLD) ++started_cold;
  }
  uint64_t warm_stores = 0, warm_reported = 0;
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  for (int64_t j = 0; j < stores; ++j) {
    adapt::v1::PredictRequest predict;
    predict.set_tenant(absl::StrCat("t", j % 10));
    predict.set_store(StoreName(j));
    adapt::v1::FloatVector* key = predict.add_inputs()->mutable_vector();
    for (int c = 0; c < dim; ++c) key->add_values(normal(rng));
    if (auto r = (*engine)->Predict(predict); !r.ok()) {
      std::fprintf(stderr, "predict %lld: %s\n", static_cast<long long>(j),
                   r.status().ToString().c_str());
      return 1;
    }
  }
  const uint64_t warm = HeapBytes(), rss_warm = RssAnonBytes();
  for (int64_t j = 0; j < stores; ++j) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant(absl::StrCat("t", j % 10));
    get.set_store(StoreName(j));
    auto info = (*engine)->GetStore(get);
    if (info.ok() && info->tier() == adapt::v1::TIER_WARM) {
      ++warm_stores;
      warm_reported += info->memory_bytes();
    }
  }
  const double readout = double(dim) * labels * sizeof(float);
  const double per_cold = (double(cold - before) - double(fixed)) / stores;
  const double per_warm_growth = double(warm - cold) / stores;
  nlohmann::json line = {
      {"measurement", "store_overhead"},
      {"stores", stores},
      {"dim", dim},
      {"labels", labels},
      {"examples", examples},
      {"engine_fixed_heap_bytes", fixed},
      {"heap_per_cold_store_bytes", per_cold},
      {"heap_growth_per_store_made_warm_bytes", per_warm_growth},
      {"heap_per_warm_store_bytes", per_cold + per_warm_growth},
      {"readout_bytes", readout},
      {"rss_anon_per_cold_store_bytes", (double(rss_cold) - double(rss_before)) / stores},
      {"rss_anon_growth_per_store_made_warm_bytes", (double(rss_warm) - double(rss_cold)) / stores},
      {"started_cold", started_cold},
      {"warm_stores", warm_stores},
      {"memory_bytes_per_warm_store", warm_stores ? double(warm_reported) / warm_stores : 0.0},
  };
  std::printf("%s\n", line.dump().c_str());
  std::fprintf(
      stderr,
      "%lld stores (d = %d, %d labels): engine with no store %.2f MiB; heap per cold store "
      "%.2f KiB; made warm +%.2f KiB (the read-out's floats %.2f KiB); per warm store "
      "%.2f KiB; projected to 10^6 warm stores %.2f GiB\n",
      static_cast<long long>(stores), dim, labels, fixed / 1048576.0, per_cold / 1024,
      per_warm_growth / 1024, readout / 1024, (per_cold + per_warm_growth) / 1024,
      (per_cold + per_warm_growth) * 1e6 / (uint64_t{1} << 30));
  engine->reset();
  std::filesystem::remove_all(dir);
  // Every store started cold and was made warm, or the figures mean something else.
  return started_cold == static_cast<uint64_t>(stores) && warm_stores == started_cold ? 0 : 1;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
