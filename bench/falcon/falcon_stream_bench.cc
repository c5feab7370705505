// Falcon on a labelled stream: examples per second and prequential accuracy of label stores
// built through CreateStore, fed one example per transaction (Begin/Add/Commit, the
// read-after-write path) and in batches per commit (the chunk-parallel path). The prequential
// accuracy is the store's own: CommitResult.prequential, the top-1 prediction made before each
// write (a label's first example counts as a miss). bench/falcon/falcon_stream_peers.py runs
// scikit-learn and River on the same stream; bench/falcon/run_stream_peers.sh drives both.
//
// Input: --data=DIR with meta.txt ("n d classes drift_at"), x.f32 (n × d float32, row-major)
// and y.i32 (n int32 class ids), as `falcon_stream_peers.py gen` writes them. Without --data
// the binary makes a small stream itself (for the smoke test).
// Output: one JSON line per (method, path).
//
// Thread safety: single-threaded driver; the store's backend uses one thread.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "kernels/backend.h"
#include "server/stores/store.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;

struct Stream {
  int64_t n = 0, d = 0, classes = 0, drift_at = 0;
  std::vector<float> x;    // n × d
  std::vector<int32_t> y;  // n
};

bool ReadStream(const std::string& dir, Stream* s) {
  std::ifstream meta(dir + "/meta.txt");
  if (!(meta >> s->n >> s->d >> s->classes >> s->drift_at)) return false;
  s->x.resize(s->n * s->d);
  s->y.resize(s->n);
  std::ifstream xf(dir + "/x.f32", std::ios::binary), yf(dir + "/y.i32", std::ios::binary);
  xf.read(reinterpret_cast<char*>(s->x.data()), s->x.size() * sizeof(float));
  yf.read(reinterpret_cast<char*>(s->y.data()), s->y.size() * sizeof(int32_t));
  return xf.gcount() == static_cast<std::streamsize>(s->x.size() * sizeof(float)) &&
         yf.gcount() == static_cast<std::streamsize>(s->y.size() * sizeof(int32_t));
}

// Class centroids plus Gaussian noise; half the centroids are redrawn at drift_at.
Stream MakeStream(int64_t n, int64_t d, int64_t classes, uint64_t seed) {
  Stream s{n, d, classes, n / 2, std::vector<float>(n * d), std::vector<int32_t>(n)};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes) - 1);
  std::vector<float> centroids(classes * d);
  for (float& v : centroids) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    if (i == s.drift_at) {
      for (int64_t c = 0; c < classes; c += 2) {
        for (int64_t k = 0; k < d; ++k) centroids[c * d + k] = normal(rng);
      }
    }
    s.y[i] = label(rng);
    for (int64_t k = 0; k < d; ++k) s.x[i * d + k] = centroids[s.y[i] * d + k] + 2.5f * normal(rng);
  }
  return s;
}

struct Method {
  std::string name;
  FalconParams::Variant variant;
  double beta, lambda;
  uint32_t window;  // 0: the variant has none
};

struct Result {
  double seconds = 0;
  uint64_t evaluated = 0, correct = 0;
  uint64_t evaluated_after = 0, correct_after = 0;  // examples at or after drift_at
};

std::unique_ptr<Store> Create(const Method& m, int64_t d, kernels::Backend* backend) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FALCON);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.set_dim(static_cast<uint32_t>(d));
  FalconParams* p = spec.mutable_falcon();
  p->set_variant(m.variant);
  p->add_beta(m.beta);
  p->set_lambda(m.lambda);
  if (m.window > 0) p->set_window(m.window);
  p->set_key_norm(FalconParams::KEY_NORM_L2);
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend);
  if (!store.ok()) {
    std::fprintf(stderr, "CreateStore(%s): %s\n", m.name.c_str(),
                 store.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(store);
}

// Feeds the stream in commits of `batch` examples (1: one example per transaction). Commits
// never straddle drift_at, so the after-drift accuracy is exact for every batch size.
Result Run(const Method& m, const Stream& s, int64_t batch, kernels::Backend* backend) {
  std::unique_ptr<Store> store = Create(m, s.d, backend);
  std::vector<std::string> names(s.classes);
  for (int64_t c = 0; c < s.classes; ++c) names[c] = std::to_string(c);
  Result r;
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < s.n;) {
    const int64_t end = std::min({i + batch, s.n, i < s.drift_at ? s.drift_at : s.n});
    ExampleBatch b;
    b.rows = end - i;
    b.dim = s.d;
    b.keys.assign(s.x.begin() + i * s.d, s.x.begin() + end * s.d);
    b.labels.reserve(b.rows);
    for (int64_t j = i; j < end; ++j) b.labels.push_back(names[s.y[j]]);
    std::unique_ptr<Txn> txn = store->Begin(TxnKind::kAdapt);
    absl::Status added = txn->Add(b);
    absl::StatusOr<CommitResult> done =
        added.ok() ? store->Commit(*txn) : absl::StatusOr<CommitResult>(added);
    if (!done.ok()) {
      std::fprintf(stderr, "%s at example %lld: %s\n", m.name.c_str(), static_cast<long long>(i),
                   done.status().ToString().c_str());
      std::exit(1);
    }
    r.evaluated += done->prequential.evaluated;
    r.correct += done->prequential.correct;
    if (i >= s.drift_at) {
      r.evaluated_after += done->prequential.evaluated;
      r.correct_after += done->prequential.correct;
    }
    i = end;
  }
  r.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return r;
}

int Main(int argc, char** argv) {
  std::string data;
  int rounds = 3;
  int64_t chunk = 64, quick_n = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--data=", 0) == 0) data = arg.substr(7);
    if (arg.rfind("--rounds=", 0) == 0) rounds = std::max(1, std::atoi(arg.c_str() + 9));
    if (arg.rfind("--chunk=", 0) == 0) chunk = std::max<int64_t>(1, std::atoll(arg.c_str() + 8));
    if (arg.rfind("--n=", 0) == 0) quick_n = std::max<int64_t>(2, std::atoll(arg.c_str() + 4));
  }
  Stream s;
  if (data.empty()) {
    s = MakeStream(quick_n, 64, 10, 7);
  } else if (!ReadStream(data, &s)) {
    std::fprintf(stderr, "cannot read the stream in %s\n", data.c_str());
    return 1;
  }
  auto backend = kernels::MakeCpuBackend(1);
  const std::vector<Method> methods = {
      {"falcon-1", FalconParams::VARIANT_1, 0.5, 1e-3, 0},
      {"falcon-1A", FalconParams::VARIANT_1A, 0.5, 1e-2, 0},
      {"falcon-3", FalconParams::VARIANT_3, 0.5, 1e-3, 4},
  };
  for (const Method& m : methods) {
    for (const int64_t batch : {int64_t{1}, chunk}) {
      std::vector<double> rates;
      Result r;
      for (int k = 0; k < rounds; ++k) {
        r = Run(m, s, batch, backend.get());
        rates.push_back(static_cast<double>(s.n) / r.seconds);
      }
      std::sort(rates.begin(), rates.end());
      std::printf(
          "{\"bench\":\"falcon_stream\",\"method\":\"%s\",\"batch\":%lld,\"n\":%lld,\"d\":%lld,"
          "\"classes\":%lld,\"beta\":%g,\"lambda\":%g,\"window\":%u,\"key_norm\":\"l2\","
          "\"rounds\":%d,\"examples_per_s\":%.6g,\"prequential_accuracy\":%.6f,"
          "\"accuracy_after_drift\":%.6f,\"evaluated\":%llu}\n",
          m.name.c_str(), static_cast<long long>(batch), static_cast<long long>(s.n),
          static_cast<long long>(s.d), static_cast<long long>(s.classes), m.beta, m.lambda,
          m.window, rounds, rates[rates.size() / 2],
          r.evaluated ? static_cast<double>(r.correct) / r.evaluated : 0.0,
          r.evaluated_after ? static_cast<double>(r.correct_after) / r.evaluated_after : 0.0,
          static_cast<unsigned long long>(r.evaluated));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) { return adaptd::Main(argc, argv); }
