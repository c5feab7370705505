// FalconStore: online ridge-regression fast weights (docs/ALGORITHMS.md section 2). Every example
// (or sequence pair x_t = φ(k_{t−1}), y_t = k_t) updates S the moment its commit applies it,
// read-after-write; Predict reads the current S. Commits apply their examples in order with
// the chunk-parallel form (falcon_chunked.h) and record the prequential loss: the prediction
// made before each write.
//
// Thread safety: every public method may be called concurrently. Locks, in this order: mu_
// (serializes commits; held while a commit computes on a private copy of the state), pub_mu_
// (the published version pointer, held only to copy or swap it). Predict, Describe, spec(),
// Snapshot and WriteState take only pub_mu_, so readers never wait for a commit and always see the
// state between two whole commits. Layout: see falcon_rules.h (S is dim × columns, row-major).
#ifndef ADAPTD_SERVER_STORES_FALCON_STORE_H_
#define ADAPTD_SERVER_STORES_FALCON_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "kernels/backend.h"
#include "server/stores/falcon_params.h"
#include "server/stores/falcon_snapshot.h"
#include "server/stores/readout_cache.h"
#include "server/stores/store.h"

namespace adaptd {

class FalconTxn;

class FalconStore final : public Store {
 public:
  // `spec` must come from NormalizeFalconSpec; `backend` must outlive the store.
  FalconStore(const adapt::v1::StoreSpec& spec, kernels::Backend* backend);
  // A store holding `state` (from FalconStateFromProto), published as it is.
  FalconStore(FalconVersion state, kernels::Backend* backend);

  adapt::v1::StoreSpec spec() const override;
  int64_t dim() const override;
  std::unique_ptr<Txn> Begin(TxnKind kind) override;
  absl::StatusOr<CommitResult> Commit(Txn& txn) override;
  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override;
  absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) override;
  void Describe(adapt::v1::StoreInfo* info) const override;
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override;
  absl::Status WriteState(StateSink sink) const override;
  std::shared_ptr<const LinearReadout> Readout() const override;
  absl::StatusOr<BaseReadout> ExportBase() const override;
  absl::Status StartFromBase(const BaseReadout& base) override;

  // The current version, for tests and tools.
  std::shared_ptr<const FalconVersion> published() const ABSL_LOCKS_EXCLUDED(pub_mu_);

 private:
  friend class FalconTxn;

  // The transaction's pairs in float64: normalised keys, targets, and for label stores the
  // column of each pair and how many columns existed before it.
  struct Pairs {
    int64_t rows = 0;
    std::vector<double> x, y;
    std::vector<int64_t> label_column, visible;
  };
  absl::Status BuildPairs(const FalconTxn& txn, FalconVersion* next, Pairs* pairs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Account(const Pairs& pairs, const std::vector<double>& pred, FalconVersion* next,
                      PrequentialStats* stats);

  kernels::Backend* const backend_;
  // Fixed at creation.
  const FalconConfig config_;
  const bool labels_;
  const bool next_;
  const int64_t out_dim_;  // M for vector stores

  mutable absl::Mutex mu_ ABSL_ACQUIRED_BEFORE(pub_mu_);
  absl::flat_hash_map<std::string, int64_t> label_index_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex pub_mu_;
  std::shared_ptr<const FalconVersion> published_ ABSL_GUARDED_BY(pub_mu_);
  mutable ReadoutCache readout_cache_;
};

// The factory's entry points (store_factory.cc): validate, then build.
absl::StatusOr<std::unique_ptr<Store>> CreateFalconStore(const adapt::v1::StoreSpec& spec,
                                                         kernels::Backend* backend);
absl::StatusOr<std::unique_ptr<Store>> RestoreFalconStore(const adapt::v1::StoreSnapshot& snapshot,
                                                          const StateArrays& arrays,
                                                          kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_STORE_H_
