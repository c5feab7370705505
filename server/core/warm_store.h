// WarmStore: a store in the warm tier (docs/RESIDENCY.md): only what Predict needs, the
// published linear read-out (Store::Readout, float weights dim × columns) and the store's last
// description. It answers Predict as the store's grouped predicts do (PredictBatch: the float
// read-out, then top-k), so a store gives the same answers hot or warm from PredictBatch, and
// from Predict up to float rounding (a hot faast Predict multiplies in float64).
//
// It takes no writes: the engine hands a WarmStore only to reads (StoreDirectory::FindForRead); a
// write, compile or export loads the whole store first. Its write methods therefore refuse
// with FailedPrecondition, naming the store as warm, should one ever be called.
//
// Thread-safety: immutable; every method may be called concurrently.
#ifndef ADAPTD_SERVER_CORE_WARM_STORE_H_
#define ADAPTD_SERVER_CORE_WARM_STORE_H_

#include <cstdint>
#include <memory>

#include "kernels/backend.h"
#include "server/stores/store.h"

namespace adaptd {

class WarmStore final : public Store {
 public:
  // `info`: the store's description when it was hot (its memory_bytes the whole store's);
  // `readout` its published read-out (not null); `backend` outlives the WarmStore.
  // Shares `info` as it is (a cold slot's description, labels included).
  WarmStore(std::shared_ptr<const adapt::v1::StoreInfo> info,
            std::shared_ptr<const LinearReadout> readout, kernels::Backend* backend);
  // Keeps the labels once: dropped from `info` when they are the read-out's column names.
  WarmStore(adapt::v1::StoreInfo info, std::shared_ptr<const LinearReadout> readout,
            kernels::Backend* backend);

  adapt::v1::StoreSpec spec() const override { return info_->spec(); }
  int64_t dim() const override { return readout_->dim; }
  std::unique_ptr<Txn> Begin(TxnKind kind) override;
  absl::StatusOr<CommitResult> Commit(Txn& txn) override;
  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override;
  absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) override;
  // The description it was made with; memory_bytes is what the WarmStore holds.
  void Describe(adapt::v1::StoreInfo* info) const override;
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override;
  std::shared_ptr<const LinearReadout> Readout() const override { return readout_; }

  // What it holds: the read-out's weights and label names, and the description.
  uint64_t bytes() const { return bytes_; }
  // The description it was made with (memory_bytes: the whole store's), shared with its
  // slot; without the labels when they are the read-out's column names (Describe adds them).
  const std::shared_ptr<const adapt::v1::StoreInfo>& info() const { return info_; }
  // The whole description (labels included), memory_bytes the whole store's: what its slot
  // keeps when it goes cold.
  adapt::v1::StoreInfo ColdInfo() const;
  // The same, shared: `info()` itself when it is whole (it kept its labels), else a new one.
  std::shared_ptr<const adapt::v1::StoreInfo> SharedColdInfo() const;

 private:
  absl::Status Refuse(const char* what) const;

  const std::shared_ptr<const adapt::v1::StoreInfo> info_;
  const std::shared_ptr<const LinearReadout> readout_;
  kernels::Backend* const backend_;
  uint64_t bytes_ = 0;
};

// Predictions from `readout` for `outputs` (rows × readout.columns, keys · weights): top-k
// label ids and scores for label stores (k clamped to [1, columns]), the rows as vectors
// otherwise. Shared by WarmStore::Predict and the engine's grouped predicts.
absl::StatusOr<Predictions> PredictionsFromReadout(const LinearReadout& readout, int64_t rows,
                                                   int top_k, std::vector<float> outputs,
                                                   kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_WARM_STORE_H_
