// Test helpers for the falcon store: specs, sequence batches, a fingerprint of everything
// observable, and the reference run of a stream through FalconRecurrent. Reuses the data and
// backend helpers of faast_test_util.h. Test-only; thread-compatible.
//
// Layout: row-major; keys n × d, targets n × m.
#ifndef ADAPTD_SERVER_STORES_FALCON_TEST_UTIL_H_
#define ADAPTD_SERVER_STORES_FALCON_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/falcon_store.h"
#include "server/stores/store_factory.h"

namespace adaptd::falcon_test {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;

inline adapt::v1::StoreSpec Spec(FalconParams::Variant variant, OutputSpec::Kind kind,
                                 uint32_t m = 0, uint32_t dim = 0) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FALCON);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(kind);
  spec.mutable_output()->set_dim(m);
  spec.set_dim(dim);
  spec.mutable_falcon()->set_variant(variant);
  return spec;
}

inline std::unique_ptr<FalconStore> Make(const adapt::v1::StoreSpec& spec,
                                         kernels::Backend* backend) {
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return nullptr;
  return std::unique_ptr<FalconStore>(static_cast<FalconStore*>(store->release()));
}

inline ExampleBatch SequenceBatch(const std::vector<float>& keys, int64_t dim, int64_t first,
                                  int64_t rows, bool restart = false) {
  ExampleBatch b;
  b.rows = rows;
  b.dim = dim;
  b.keys.assign(keys.begin() + first * dim, keys.begin() + (first + rows) * dim);
  b.sequence = true;
  b.restart_sequence = restart;
  return b;
}

// Everything observable about a store, for "unchanged" checks (memory_bytes counts vector
// capacities, which a copy does not keep).
inline std::string Fingerprint(const Store& store) {
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  info.clear_memory_bytes();
  absl::StatusOr<adapt::v1::StoreSnapshot> snap = store.Snapshot();
  EXPECT_TRUE(snap.ok());
  return info.SerializeAsString() + "|" + (snap.ok() ? snap->SerializeAsString() : "");
}

// The reference: `pairs` pairs (float64 keys, normalised already) one at a time.
inline FalconMemory Reference(const adapt::v1::StoreSpec& spec, const std::vector<double>& x,
                              const std::vector<double>& y, int64_t d, int64_t m,
                              std::vector<double>* predictions = nullptr) {
  absl::StatusOr<adapt::v1::StoreSpec> normalized = NormalizeFalconSpec(spec);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  FalconMemory mem;
  mem.Reset(d, m);
  const int64_t n = static_cast<int64_t>(x.size()) / d;
  if (predictions != nullptr) predictions->assign(n * m, 0.0);
  FalconRecurrent(FalconConfigOf(normalized->falcon()), x.data(), y.data(), n, &mem,
                  predictions == nullptr ? nullptr : predictions->data());
  return mem;
}

}  // namespace adaptd::falcon_test

#endif  // ADAPTD_SERVER_STORES_FALCON_TEST_UTIL_H_
