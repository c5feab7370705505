// The adaptd side of the scikit-learn comparison (bench/run_sklearn_peer.py drives both): reads
// the data that bench/sklearn_peer.py wrote, adapts a faast label store to the training rows
// (one Txn + Commit per batch), compiles it, and predicts the training and held-out rows. Prints
// one JSON object with the times and writes the predicted labels for the agreement check.
//
// Data files in --data: meta.json {rows, test_rows, dim, labels}, X_train.f32 / X_test.f32
// (row-major float32), y_train.i32 / y_test.i32 (class ids 0..labels-1). Label names in the
// store are the decimal class ids.
#include <cblas.h>

#include <cstdio>
#include <fstream>
#include <memory>
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
  std::string data;
  std::string solver = "ridge";  // or "spectral"
  double ridge = 1.0;
  int64_t batch = 1024;
  int threads = 0;
  std::string out;  // prefix of the prediction files
  bool floor = false;
};

template <typename T>
std::vector<T> ReadArray(const std::string& path, int64_t count) {
  std::vector<T> v(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(T)));
  if (!in || in.gcount() != static_cast<std::streamsize>(count * sizeof(T))) {
    Check(absl::NotFoundError("cannot read " + std::to_string(count) + " values from " + path),
          "data");
  }
  return v;
}

void WriteArray(const std::string& path, const std::vector<int32_t>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(int32_t)));
  if (!out) Check(absl::InternalError("cannot write " + path), "output");
}

std::vector<ExampleBatch> MakeBatches(const std::vector<float>& x, const std::vector<int32_t>& y,
                                      int64_t rows, int64_t dim, int64_t batch) {
  std::vector<ExampleBatch> out;
  for (int64_t start = 0; start < rows; start += batch) {
    ExampleBatch b;
    b.rows = std::min(batch, rows - start);
    b.dim = dim;
    b.keys.assign(x.begin() + start * dim, x.begin() + (start + b.rows) * dim);
    for (int64_t r = start; r < start + b.rows; ++r) b.labels.push_back(std::to_string(y[r]));
    out.push_back(std::move(b));
  }
  return out;
}

// Class ids of the top-1 predictions, and the fraction equal to `truth`.
std::vector<int32_t> ClassIds(const Predictions& p, const std::vector<int32_t>& truth,
                              double* accuracy) {
  std::vector<int32_t> ids(p.rows);
  int64_t hits = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    ids[r] = std::stoi((*p.label_names)[p.label_ids[r * p.top_k]]);
    hits += ids[r] == truth[r] ? 1 : 0;
  }
  *accuracy = p.rows == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(p.rows);
  return ids;
}

// The arithmetic each side cannot avoid, on the training matrix: the Gram XᵀX in float32
// (sklearn's ssyrk) and in float64 (the store's dsyrk, keys already converted), and the scoring
// product X·S in both precisions. Zero matrices for S: the time does not depend on the values.
nlohmann::json ArithmeticFloor(const std::vector<float>& x, int64_t rows, int64_t dim,
                               int64_t labels) {
  const std::vector<double> xd(x.begin(), x.end());
  std::vector<float> gf(dim * dim), sf(dim * labels, 0.0f), of(rows * labels);
  std::vector<double> gd(dim * dim), sd(dim * labels, 0.0), od(rows * labels);
  const double t0 = NowSeconds();
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, rows, 1.0f, x.data(), dim, 0.0f,
              gf.data(), dim);
  const double t1 = NowSeconds();
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, dim, rows, 1.0, xd.data(), dim, 0.0, gd.data(),
              dim);
  const double t2 = NowSeconds();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, labels, dim, 1.0f, x.data(), dim,
              sf.data(), labels, 0.0f, of.data(), labels);
  const double t3 = NowSeconds();
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, labels, dim, 1.0, xd.data(), dim,
              sd.data(), labels, 0.0, od.data(), labels);
  const double t4 = NowSeconds();
  return {{"ssyrk_s", t1 - t0}, {"dsyrk_s", t2 - t1}, {"sgemm_s", t3 - t2}, {"dgemm_s", t4 - t3}};
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"adaptd side of the scikit-learn RidgeClassifier comparison"};
  app.add_option("--data", o.data, "folder written by sklearn_peer.py gen")->required();
  app.add_option("--solver", o.solver, "ridge or spectral")
      ->check(CLI::IsMember({"ridge", "spectral"}));
  app.add_option("--ridge", o.ridge, "ridge of the ridge solver (sklearn's alpha)");
  app.add_option("--batch", o.batch, "rows per Add (one transaction each)");
  app.add_option("--threads", o.threads, "OpenBLAS threads (0: the library's default)");
  app.add_flag("--floor", o.floor, "also time the bare BLAS calls on the training matrix");
  app.add_option("--out", o.out, "prefix of the prediction files (<out>train.i32, <out>test.i32)");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json meta;
  std::ifstream(o.data + "/meta.json") >> meta;
  const int64_t rows = meta["rows"], test_rows = meta["test_rows"], dim = meta["dim"];
  const std::vector<float> x = ReadArray<float>(o.data + "/X_train.f32", rows * dim);
  const std::vector<int32_t> y = ReadArray<int32_t>(o.data + "/y_train.i32", rows);
  const std::vector<float> xt = ReadArray<float>(o.data + "/X_test.f32", test_rows * dim);
  const std::vector<int32_t> yt = ReadArray<int32_t>(o.data + "/y_test.i32", test_rows);
  const std::vector<ExampleBatch> batches = MakeBatches(x, y, rows, dim, o.batch);

  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend(o.threads);
  const double ridge = o.solver == "ridge" ? o.ridge : 0.0;
  std::unique_ptr<Store> store =
      Take(CreateStore(FaastSpec(dim, true, 0, ridge, /*few_shot=*/true), backend.get()), "create");

  const double t0 = NowSeconds();
  for (const ExampleBatch& b : batches) {
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    Check(txn->Add(b), "Txn::Add");
    Check(store->Commit(*txn).status(), "Store::Commit");
  }
  const double t1 = NowSeconds();
  adapt::v1::CompileResponse compiled =
      Take(store->Compile(adapt::v1::CompileRequest()), "Compile");
  const double t2 = NowSeconds();
  Predictions train = Take(store->Predict(x.data(), rows, dim, 1), "Predict train");
  const double t3 = NowSeconds();
  Predictions test = Take(store->Predict(xt.data(), test_rows, dim, 1), "Predict test");
  const double t4 = NowSeconds();

  // The streaming case: the first `batch` held-out rows arrive as one more batch; the store adds
  // them to G and C and compiles again (the peer refits on everything).
  const int64_t extra = std::min(o.batch, test_rows);
  const std::vector<int32_t> yt_extra(yt.begin(), yt.begin() + extra);
  const std::vector<ExampleBatch> more = MakeBatches(xt, yt_extra, extra, dim, o.batch);
  const double t5 = NowSeconds();
  std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
  Check(txn->Add(more[0]), "Txn::Add");
  Check(store->Commit(*txn).status(), "Store::Commit");
  Check(store->Compile(adapt::v1::CompileRequest()).status(), "Compile");
  const double t6 = NowSeconds();

  double train_acc = 0, test_acc = 0;
  const std::vector<int32_t> train_ids = ClassIds(train, y, &train_acc);
  const std::vector<int32_t> test_ids = ClassIds(test, yt, &test_acc);
  if (!o.out.empty()) {
    WriteArray(o.out + "train.i32", train_ids);
    WriteArray(o.out + "test.i32", test_ids);
  }
  nlohmann::json result = {{"side", "adaptd"},
                           {"solver", compiled.faast().solver()},
                           {"effective_rank", compiled.faast().effective_rank()},
                           {"adapt_s", t1 - t0},
                           {"compile_s", t2 - t1},
                           {"fit_s", t2 - t0},
                           {"predict_train_s", t3 - t2},
                           {"predict_test_s", t4 - t3},
                           {"update_rows", extra},
                           {"update_s", t6 - t5},
                           {"accuracy_train", train_acc},
                           {"accuracy_test", test_acc},
                           {"machine", MachineJson(DescribeMachine())}};
  if (o.floor) result["floor"] = ArithmeticFloor(x, rows, dim, meta["labels"].get<int64_t>());
  std::printf("%s\n", result.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace adaptd::bench

int main(int argc, char** argv) { return adaptd::bench::Main(argc, argv); }
