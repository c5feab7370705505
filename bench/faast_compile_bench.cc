// Compile of a faast store against LAPACK alone on the same G: the spectral path (store Compile
// with ridge 0) against LAPACKE_dsyevd, and the ridge path (ridge > 0) against LAPACKE_dpotrf +
// LAPACKE_dpotrs with the same right-hand sides. G comes from n = d + 512 random keys, so it
// has full rank and the store solves through G (few_shot off). Each round runs both sides back
// to back, in alternating order; the table reports the median of the per-round time ratios
// store / LAPACK (goal ≤ 1.2) and the median times.
#include <cblas.h>
#include <lapacke.h>

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

struct Options {
  std::vector<int64_t> dims = {256, 1024, 2048};
  int64_t columns = 64;
  int64_t extra_rows = 512;
  double ridge = 1.0;
  int rounds = 3;
  int threads = 0;
  std::string json;
};

// The same examples, for the stores and (in float64, with one-hot targets) for LAPACK.
struct Problem {
  int64_t d = 0, n = 0, m = 0;
  std::vector<ExampleBatch> batches;
  std::vector<double> g;  // d × d, upper triangle
  std::vector<double> c;  // d × m
};

Problem MakeProblem(int64_t d, const Options& o) {
  Problem p;
  p.d = d;
  p.n = d + o.extra_rows;
  p.m = o.columns;
  const std::vector<float> keys = NormalFloats(7 * d, p.n * d);
  const std::vector<double> x(keys.begin(), keys.end());
  std::vector<double> y(p.n * p.m, 0.0);
  std::mt19937_64 rng(d);
  std::uniform_int_distribution<int64_t> label(0, p.m - 1);
  for (int64_t start = 0; start < p.n; start += 1024) {
    ExampleBatch b;
    b.rows = std::min<int64_t>(1024, p.n - start);
    b.dim = d;
    b.keys.assign(keys.begin() + start * d, keys.begin() + (start + b.rows) * d);
    for (int64_t r = start; r < start + b.rows; ++r) {
      const int64_t l = label(rng);
      b.labels.push_back("label_" + std::to_string(l));
      y[r * p.m + l] = 1.0;
    }
    p.batches.push_back(std::move(b));
  }
  p.g.assign(d * d, 0.0);
  p.c.assign(d * p.m, 0.0);
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, p.n, 1.0, x.data(), d, 0.0, p.g.data(), d);
  CheckSyrkSample(x.data(), p.n, d, p.g.data());
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, p.m, p.n, 1.0, x.data(), d, y.data(), p.m,
              0.0, p.c.data(), p.m);
  return p;
}

std::unique_ptr<Store> FilledStore(const Problem& p, double ridge, kernels::Backend* backend) {
  std::unique_ptr<Store> store =
      Take(CreateStore(FaastSpec(p.d, true, 0, ridge, /*few_shot=*/false), backend), "create");
  for (const ExampleBatch& b : p.batches) {
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    Check(txn->Add(b), "Txn::Add");
    Check(store->Commit(*txn).status(), "Store::Commit");
  }
  return store;
}

struct StoreCompile {
  double seconds = 0;
  double solve_seconds = 0;  // as the store reports it (the solve, without copies or publish)
  uint32_t rank = 0;
};

StoreCompile TimeStoreCompile(Store& store) {
  const double start = NowSeconds();
  adapt::v1::CompileResponse r = Take(store.Compile(adapt::v1::CompileRequest()), "Compile");
  return {NowSeconds() - start, r.faast().compile_seconds(), r.faast().effective_rank()};
}

double TimeDsyevd(const Problem& p) {
  std::vector<double> a = p.g, w(p.d);
  const double start = NowSeconds();
  const lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', p.d, a.data(), p.d, w.data());
  const double seconds = NowSeconds() - start;
  if (info != 0) Check(absl::InternalError("dsyevd info " + std::to_string(info)), "dsyevd");
  return seconds;
}

double TimeCholesky(const Problem& p, double ridge) {
  std::vector<double> a = p.g, b = p.c;
  for (int64_t i = 0; i < p.d; ++i) a[i * p.d + i] += ridge;
  const double start = NowSeconds();
  lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', p.d, a.data(), p.d);
  if (info == 0)
    info = LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'U', p.d, p.m, a.data(), p.d, b.data(), p.m);
  const double seconds = NowSeconds() - start;
  if (info != 0) Check(absl::InternalError("dpotrf/dpotrs info " + std::to_string(info)), "potr");
  return seconds;
}

// Medians of each side and of the per-round ratios (each round's two runs are adjacent in time).
nlohmann::json Summary(int64_t d, const char* path, const char* lapack,
                       const std::vector<double>& store, const std::vector<double>& solve,
                       const std::vector<double>& base) {
  std::vector<double> ratio;
  for (size_t i = 0; i < store.size(); ++i) ratio.push_back(store[i] / base[i]);
  return {{"dim", d},
          {"path", path},
          {"lapack", lapack},
          {"store_ms", 1e3 * Median(store)},
          {"solve_ms", 1e3 * Median(solve)},
          {"lapack_ms", 1e3 * Median(base)},
          {"ratio", Median(ratio)},
          {"ratios", ratio}};
}

void PrintRow(const nlohmann::json& r) {
  std::printf("| %5ld | %-8s | %-15s | %9.1f | %9.1f | %9.1f | %5.2f |\n", r["dim"].get<long>(),
              r["path"].get<std::string>().c_str(), r["lapack"].get<std::string>().c_str(),
              r["store_ms"].get<double>(), r["solve_ms"].get<double>(),
              r["lapack_ms"].get<double>(), r["ratio"].get<double>());
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"faast compile against LAPACKE dsyevd (spectral) and dpotrf+dpotrs (ridge)"};
  app.add_option("--dims", o.dims, "key dimensions")->delimiter(',');
  app.add_option("--columns", o.columns, "labels (right-hand sides)");
  app.add_option("--extra-rows", o.extra_rows, "examples beyond d");
  app.add_option("--ridge", o.ridge, "ridge of the ridge path");
  app.add_option("--rounds", o.rounds, "measurements per side (median reported)");
  app.add_option("--threads", o.threads, "OpenBLAS threads (0: the library's default)");
  app.add_option("--json", o.json, "write the results here");
  CLI11_PARSE(app, argc, argv);

  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(o.threads);
  const Machine machine = DescribeMachine();
  std::printf("# faast compile: store Compile vs LAPACKE on the same G (float64)\n%s\n\n",
              MachineLine(machine).c_str());
  std::printf(
      "| d | path | LAPACK | store ms | solve ms | LAPACK ms | ratio |\n"
      "|---|---|---|---|---|---|---|\n");
  nlohmann::json results = nlohmann::json::array();
  for (int64_t d : o.dims) {
    const Problem p = MakeProblem(d, o);
    std::unique_ptr<Store> spectral = FilledStore(p, 0.0, backend.get());
    std::unique_ptr<Store> ridge = FilledStore(p, o.ridge, backend.get());
    std::vector<double> sp_store, sp_solve, sp_base, rd_store, rd_solve, rd_base;
    for (int r = 0; r < o.rounds; ++r) {
      const bool store_first = r % 2 == 0;
      if (!store_first) sp_base.push_back(TimeDsyevd(p));
      const StoreCompile sc = TimeStoreCompile(*spectral);
      if (sc.rank != static_cast<uint32_t>(d)) {
        std::fprintf(stderr, "note: spectral rank %u of %ld\n", sc.rank, static_cast<long>(d));
      }
      sp_store.push_back(sc.seconds);
      sp_solve.push_back(sc.solve_seconds);
      if (store_first) sp_base.push_back(TimeDsyevd(p));

      if (!store_first) rd_base.push_back(TimeCholesky(p, o.ridge));
      const StoreCompile rc = TimeStoreCompile(*ridge);
      rd_store.push_back(rc.seconds);
      rd_solve.push_back(rc.solve_seconds);
      if (store_first) rd_base.push_back(TimeCholesky(p, o.ridge));
    }
    results.push_back(Summary(d, "spectral", "dsyevd", sp_store, sp_solve, sp_base));
    PrintRow(results.back());
    results.push_back(Summary(d, "ridge", "dpotrf+dpotrs", rd_store, rd_solve, rd_base));
    PrintRow(results.back());
  }
  WriteJson(
      o.json,
      {{"benchmark", "faast_compile"}, {"machine", MachineJson(machine)}, {"results", results}});
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
