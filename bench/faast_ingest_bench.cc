// Ingest into a faast store (Txn Add + Commit: G += XᵀX, C += XᵀY in float64) against the
// arithmetic alone: cblas_dsyrk of the same batch, already in float64, into a d × d accumulator
// plus cblas_dgemm of XᵀY into d × m. Both run on the same batches in the same process, taking
// turns batch by batch; the table reports the median over rounds of the throughput ratio
// store / BLAS (goal ≥ 0.8) and the median throughputs.
#include <cblas.h>

#include <cstdio>
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

constexpr int kPoolBatches = 4;  // distinct batches cycled through

struct Options {
  std::vector<int64_t> dims = {256, 1024, 2048};
  std::vector<int64_t> batches = {256, 1024};
  int64_t columns = 64;  // labels, and the vector width M
  double flops = 4e9;    // dsyrk flops per measurement
  int rounds = 3;
  int threads = 0;
  std::string json;
};

struct Case {
  int64_t dim = 0;
  int64_t batch = 0;
  bool labels = true;
  bool prequential = false;  // a compiled store evaluates each batch before adding it
};

// A pool of batches: as the store receives them, and in float64 for the BLAS baseline.
struct Workload {
  std::vector<ExampleBatch> batches;
  std::vector<std::vector<double>> x;  // batch × dim
  std::vector<std::vector<double>> y;  // batch × columns (one-hot for labels)
};

Workload MakeWorkload(const Case& c, int64_t columns, uint64_t seed) {
  Workload w;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> label(0, columns - 1);
  for (int p = 0; p < kPoolBatches; ++p) {
    ExampleBatch b;
    b.rows = c.batch;
    b.dim = c.dim;
    b.keys = NormalFloats(seed + 101 * (p + 1), c.batch * c.dim);
    std::vector<double> y(c.batch * columns, 0.0);
    if (c.labels) {
      for (int64_t r = 0; r < c.batch; ++r) {
        const int64_t l = label(rng);
        b.labels.push_back("label_" + std::to_string(l));
        y[r * columns + l] = 1.0;
      }
    } else {
      b.targets = NormalFloats(seed + 103 * (p + 1), c.batch * columns);
      y.assign(b.targets.begin(), b.targets.end());
    }
    w.x.emplace_back(b.keys.begin(), b.keys.end());
    w.y.push_back(std::move(y));
    w.batches.push_back(std::move(b));
  }
  return w;
}

// Time spent by each side over one measurement. The sides take turns batch by batch (the
// order flipping every batch), so that both see the same load on a shared machine.
struct Timing {
  double store_s = 0;
  double add_s = 0;  // of store_s, inside Txn::Add (the rest is Begin and Commit)
  double blas_s = 0;
};

void StoreBatch(Store& store, const ExampleBatch& batch, Timing* t) {
  const double start = NowSeconds();
  std::unique_ptr<Txn> txn = store.Begin(TxnKind::kAdapt);
  const double add_start = NowSeconds();
  Check(txn->Add(batch), "Txn::Add");
  t->add_s += NowSeconds() - add_start;
  Check(store.Commit(*txn).status(), "Store::Commit");
  t->store_s += NowSeconds() - start;
}

// The arithmetic of one batch: G += XᵀX (upper triangle), C += XᵀY.
void BlasBatch(const double* x, const double* y, int64_t dim, int64_t batch, int64_t columns,
               std::vector<double>& g, std::vector<double>& c, Timing* t) {
  const double start = NowSeconds();
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, batch, 1.0, x, dim, 1.0, g.data(), dim);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dim, columns, batch, 1.0, x, dim, y, columns,
              1.0, c.data(), columns);
  t->blas_s += NowSeconds() - start;
}

Timing Measure(Store& store, const Workload& w, int64_t count, int64_t dim, int64_t batch,
               int64_t columns, std::vector<double>& g, std::vector<double>& c) {
  Timing t;
  for (int64_t i = 0; i < count; ++i) {
    const int p = static_cast<int>(i % kPoolBatches);
    if (i % 2 == 1) StoreBatch(store, w.batches[p], &t);
    BlasBatch(w.x[p].data(), w.y[p].data(), dim, batch, columns, g, c, &t);
    if (i % 2 == 0) StoreBatch(store, w.batches[p], &t);
  }
  return t;
}

nlohmann::json RunCase(const Case& c, const Options& o, kernels::Backend* backend) {
  const int64_t d = c.dim, m = o.columns;
  const Workload w = MakeWorkload(c, m, 1000 * d + c.batch);
  const double per_row = static_cast<double>(d) * static_cast<double>(d + 1);
  const int64_t count = std::max<int64_t>(2, static_cast<int64_t>(o.flops / per_row / c.batch));

  std::vector<double> g(d * d, 0.0), cm(d * m, 0.0);
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, c.batch, 1.0, w.x[0].data(), d, 0.0,
              g.data(), d);
  CheckSyrkSample(w.x[0].data(), c.batch, d, g.data());

  // A prequential store needs a published version; ridge makes that compile cheap.
  const double ridge = c.prequential ? 1.0 : 0.0;
  std::unique_ptr<Store> store =
      Take(CreateStore(FaastSpec(d, c.labels, m, ridge, /*few_shot=*/false), backend), "create");
  Measure(*store, w, 1, d, c.batch, m, g, cm);  // allocates G and C, learns the labels
  if (c.prequential) Check(store->Compile(adapt::v1::CompileRequest()).status(), "Compile");

  std::vector<double> ratio, store_rate, blas_rate, add_share;
  const double rows = static_cast<double>(count * c.batch);
  for (int r = 0; r < o.rounds; ++r) {
    const Timing t = Measure(*store, w, count, d, c.batch, m, g, cm);
    ratio.push_back(t.blas_s / t.store_s);
    store_rate.push_back(rows / t.store_s);
    blas_rate.push_back(rows / t.blas_s);
    add_share.push_back(t.add_s / t.store_s);
  }
  return {{"dim", d},
          {"output", c.labels ? "labels:" + std::to_string(m) : "vector:" + std::to_string(m)},
          {"batch", c.batch},
          {"prequential", c.prequential},
          {"rows_per_measurement", count * c.batch},
          {"store_examples_per_s", Median(store_rate)},
          {"blas_examples_per_s", Median(blas_rate)},
          {"ratio", Median(ratio)},
          {"add_share", Median(add_share)},
          {"ratios", ratio}};
}

void PrintRow(const nlohmann::json& r) {
  std::printf("| %5ld | %-9s | %5ld | %-3s | %7ld | %10.0f | %10.0f | %5.2f | %4.0f%% |\n",
              r["dim"].get<long>(), r["output"].get<std::string>().c_str(), r["batch"].get<long>(),
              r["prequential"].get<bool>() ? "yes" : "no", r["rows_per_measurement"].get<long>(),
              r["store_examples_per_s"].get<double>(), r["blas_examples_per_s"].get<double>(),
              r["ratio"].get<double>(), 100 * r["add_share"].get<double>());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"faast ingest (Txn Add + Commit) against raw dsyrk + dgemm"};
  app.add_option("--dims", o.dims, "key dimensions")->delimiter(',');
  app.add_option("--batches", o.batches, "rows per Add (one transaction each)")->delimiter(',');
  app.add_option("--columns", o.columns, "labels, and the vector width M");
  app.add_option("--flops", o.flops, "dsyrk flops per measurement");
  app.add_option("--rounds", o.rounds, "measurements per side (median reported)");
  app.add_option("--threads", o.threads, "OpenBLAS threads (0: the library's default)");
  app.add_option("--json", o.json, "write the results here");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(o.threads);
  const Machine machine = DescribeMachine();
  std::printf("# faast ingest: store Add+Commit vs dsyrk+dgemm (float64, same batches)\n%s\n\n",
              MachineLine(machine).c_str());
  std::printf(
      "| d | output | batch | preq | rows/meas | store ex/s | BLAS ex/s | ratio | "
      "Add share |\n|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json results = nlohmann::json::array();
  for (int64_t d : o.dims) {
    for (int64_t batch : o.batches) {
      for (bool labels : {true, false}) {
        results.push_back(RunCase({d, batch, labels, false}, o, backend.get()));
        PrintRow(results.back());
      }
    }
    results.push_back(RunCase({d, o.batches.back(), true, true}, o, backend.get()));
    PrintRow(results.back());
  }
  WriteJson(
      o.json,
      {{"benchmark", "faast_ingest"}, {"machine", MachineJson(machine)}, {"results", results}});
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
