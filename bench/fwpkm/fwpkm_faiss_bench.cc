// fwpkm_faiss_bench: an fwpkm store that has had M random key → value pairs written, against an
// exact FAISS flat index (IndexFlatL2) holding the same M keys, as M grows. Both answer the same
// batch of queries (stored keys): predict latency per query, and recall of the fwpkm readout:
// the share of queries whose readout is nearer (cosine) to the exact nearest neighbour's value
// than to any other stored value, the capacity bench's definition.
// Usage: fwpkm_faiss_bench [max_M] [sub_keys] [batch]. Prints one line per M.
// FAISS runs with OpenMP's default thread count; set OMP_NUM_THREADS=1 to match the store's
// single-threaded Predict.
#include <faiss/IndexFlat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"

namespace adaptd {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void Run(int64_t max_m, uint32_t sub_keys, int64_t batch) {
  const int dim = 32, width = 32;
  for (int64_t m_pairs : {int64_t{1000}, int64_t{10000}, int64_t{100000}, int64_t{1000000}}) {
    if (m_pairs > max_m) break;
    std::mt19937_64 rng(m_pairs);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> keys(m_pairs * dim), values(m_pairs * width);
    for (float& x : keys) x = normal(rng);
    for (float& x : values) x = normal(rng);

    adapt::v1::StoreSpec spec;
    spec.set_kind(adapt::v1::STORE_KIND_FWPKM);
    spec.set_dim(dim);
    spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    spec.mutable_output()->set_dim(width);
    spec.mutable_fwpkm()->set_sub_keys(sub_keys);
    FwpkmStore store(*NormalizeFwpkmSpec(spec), &kernels::HostBackend());
    const auto w0 = Clock::now();
    {
      ExampleBatch b;
      b.dim = dim;
      b.rows = m_pairs;
      b.keys = keys;
      b.targets = values;
      auto txn = store.Begin(TxnKind::kAdapt);
      if (!txn->Add(b).ok() || !store.Commit(*txn).ok() ||
          !store.Compile(adapt::v1::CompileRequest()).ok()) {
        std::printf("fwpkm write failed at M=%lld\n", static_cast<long long>(m_pairs));
        return;
      }
    }
    const double write_s = Seconds(w0);
    faiss::IndexFlatL2 index(dim);
    const auto a0 = Clock::now();
    index.add(m_pairs, keys.data());
    const double add_s = Seconds(a0);

    // Queries: `batch` stored keys drawn at random.
    const int64_t nq = std::min(batch, m_pairs);
    std::vector<int64_t> ids(nq);
    std::uniform_int_distribution<int64_t> pick(0, m_pairs - 1);
    std::vector<float> queries(nq * dim);
    for (int64_t t = 0; t < nq; ++t) {
      ids[t] = pick(rng);
      std::copy_n(keys.data() + ids[t] * dim, dim, queries.data() + t * dim);
    }
    // Warm-up, then the timed batch (best of 3) for each side.
    double fwpkm_s = 1e30, faiss_s = 1e30;
    absl::StatusOr<Predictions> p;
    std::vector<float> dist(nq);
    std::vector<faiss::Index::idx_t> nn(nq);
    for (int rep = 0; rep < 4; ++rep) {
      const auto f0 = Clock::now();
      p = store.Predict(queries.data(), nq, dim, 1);
      if (rep > 0) fwpkm_s = std::min(fwpkm_s, Seconds(f0));
      const auto s0 = Clock::now();
      index.search(nq, queries.data(), 1, dist.data(), nn.data());
      if (rep > 0) faiss_s = std::min(faiss_s, Seconds(s0));
    }
    if (!p.ok()) {
      std::printf("fwpkm predict failed: %s\n", p.status().ToString().c_str());
      return;
    }
    // Recall: the stored value nearest (cosine) to each readout, over all M values, by an exact
    // inner-product index over the normalised values.
    std::vector<float> unit(values);
    for (int64_t u = 0; u < m_pairs; ++u) {
      float* v = unit.data() + u * width;
      double s = 0;
      for (int j = 0; j < width; ++j) s += double{v[j]} * v[j];
      for (int j = 0; j < width; ++j) v[j] = static_cast<float>(v[j] / std::sqrt(s));
    }
    faiss::IndexFlatIP by_value(width);
    by_value.add(m_pairs, unit.data());
    std::vector<float> sim(nq);
    std::vector<faiss::Index::idx_t> nearest(nq);
    by_value.search(nq, p->vectors.data(), 1, sim.data(), nearest.data());
    int64_t hits = 0, faiss_exact = 0;
    for (int64_t t = 0; t < nq; ++t) {
      hits += nearest[t] == nn[t] ? 1 : 0;
      faiss_exact += nn[t] == ids[t] ? 1 : 0;
    }
    adapt::v1::StoreInfo info;
    store.Describe(&info);
    std::printf(
        "faiss M=%lld N=%llu batch=%lld fwpkm_predict_us=%.2f faiss_flat_us=%.2f "
        "faiss/fwpkm=%.2f fwpkm_recall=%.4f faiss_self_nn=%.4f fwpkm_write_us=%.2f "
        "faiss_add_us=%.3f fwpkm_mb=%.1f faiss_mb=%.1f\n",
        static_cast<long long>(m_pairs), static_cast<unsigned long long>(info.fwpkm().slots()),
        static_cast<long long>(nq), 1e6 * fwpkm_s / nq, 1e6 * faiss_s / nq, faiss_s / fwpkm_s,
        static_cast<double>(hits) / nq, static_cast<double>(faiss_exact) / nq,
        1e6 * write_s / m_pairs, 1e6 * add_s / m_pairs, info.memory_bytes() / 1e6,
        m_pairs * dim * 4 / 1e6);
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) {
  const int64_t max_m = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const uint32_t sub_keys = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 4096;
  const int64_t batch = argc > 3 ? std::atoll(argv[3]) : 1024;
  adaptd::Run(max_m, sub_keys, batch);
  return 0;
}
