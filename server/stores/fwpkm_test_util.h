// Test helpers for the fwpkm store: specs, random data, batches, and store shortcuts.
// Test-only; thread-compatible. Layout: keys rows × dim, targets rows × M (row-major).
#ifndef ADAPTD_SERVER_STORES_FWPKM_TEST_UTIL_H_
#define ADAPTD_SERVER_STORES_FWPKM_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/store.h"

namespace adaptd::fwpkm_test {

inline std::vector<float> Gaussian(std::mt19937_64& rng, int64_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> out(n);
  for (float& x : out) x = normal(rng);
  return out;
}

inline adapt::v1::StoreSpec Spec(adapt::v1::OutputSpec::Kind kind, uint32_t out_dim, uint32_t dim) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FWPKM);
  spec.set_encoder("identity");
  spec.set_dim(dim);
  spec.mutable_output()->set_kind(kind);
  spec.mutable_output()->set_dim(out_dim);
  spec.mutable_fwpkm();
  return spec;
}

// A store on `backend` (the shared CPU backend by default).
inline std::unique_ptr<FwpkmStore> Make(const adapt::v1::StoreSpec& spec,
                                        kernels::Backend* backend = &kernels::HostBackend()) {
  absl::StatusOr<adapt::v1::StoreSpec> normalized = NormalizeFwpkmSpec(spec);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return std::make_unique<FwpkmStore>(*normalized, backend);
}

inline ExampleBatch VectorBatch(std::vector<float> keys, int64_t dim, std::vector<float> targets,
                                int passes = 1) {
  ExampleBatch b;
  b.dim = dim;
  b.rows = static_cast<int64_t>(keys.size()) / dim;
  b.keys = std::move(keys);
  b.targets = std::move(targets);
  b.passes = passes;
  return b;
}

inline ExampleBatch LabelBatch(std::vector<float> keys, int64_t dim,
                               std::vector<std::string> labels) {
  ExampleBatch b;
  b.dim = dim;
  b.rows = static_cast<int64_t>(keys.size()) / dim;
  b.keys = std::move(keys);
  b.labels = std::move(labels);
  return b;
}

inline ExampleBatch SequenceBatch(std::vector<float> items, int64_t dim, bool restart = false) {
  ExampleBatch b;
  b.dim = dim;
  b.rows = static_cast<int64_t>(items.size()) / dim;
  b.keys = std::move(items);
  b.sequence = true;
  b.restart_sequence = restart;
  return b;
}

inline absl::StatusOr<CommitResult> Apply(Store& store, const ExampleBatch& batch) {
  std::unique_ptr<Txn> txn = store.Begin(TxnKind::kAdapt);
  if (absl::Status s = txn->Add(batch); !s.ok()) return s;
  return store.Commit(*txn);
}

// The whole observable state (snapshot bytes and the description, less byte counts).
inline std::string Fingerprint(const Store& store) {
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = store.Snapshot();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  // Byte counts follow container capacities, which a restore need not reproduce.
  info.clear_memory_bytes();
  info.mutable_fwpkm()->clear_value_bytes();
  std::string out;
  snapshot->SerializeToString(&out);
  return out + info.SerializeAsString();
}

inline double Cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

}  // namespace adaptd::fwpkm_test

#endif  // ADAPTD_SERVER_STORES_FWPKM_TEST_UTIL_H_
