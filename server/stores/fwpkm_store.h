// FwpkmStore: a sparse product-key memory that learns at inference time (docs/ALGORITHMS.md
// section 3; addressing in fwpkm_keys.h, the chunk update in fwpkm_update.h, parameters and
// the gate in fwpkm_params.h).
//
// Writes: a Txn validates, projects and stages its batches; Commit appends them to the store's
// queue and applies them in chunks of C items, in order, under the write lock: every full
// chunk, then what is left (a partial chunk, which writes values but takes no addressing
// step), so nothing waits once the call has ended and readers see the state between commits. Within
// a call, a chunk's items read the state the previous chunks left and do not see each other
// (causality per chunk); the prequential figures of a call are taken against the state before it.
// With passes = n > 1 a batch is queued n times and the queue is applied after each pass even when
// short of C ("update after each pass"). `next` stores pair each item's query with the following
// item's encoder output (y_t = v_{t+1}); the last item is carried to the next call. Compile applies
// any queued items (a state restored from before partial chunks were applied at commit may hold
// some); it answers FailedPrecondition only when the store holds nothing. Reads: Predict reads the
// current state: top-k readout v̂, output g·v̂, and a confidence: the share of the read weight on
// slots that were ever written. FailedPrecondition before the first chunk was applied. The version
// grows by one per chunk applied. Thread safety: every public method may be called concurrently.
// One reader/writer mutex: Predict, Describe, Snapshot, WriteState (while its sink runs) and
// Txn::Add share it; Commit and Compile hold it exclusively. Layout: queued queries items ×
// key_dim; queued targets items × width (row-major).
#ifndef ADAPTD_SERVER_STORES_FWPKM_STORE_H_
#define ADAPTD_SERVER_STORES_FWPKM_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/fwpkm_state.pb.h"
#include "kernels/backend.h"
#include "server/stores/fwpkm_keys.h"
#include "server/stores/fwpkm_update.h"
#include "server/stores/fwpkm_values.h"
#include "server/stores/store.h"

namespace adaptd {

class FwpkmTxn;

// Items waiting for a chunk (also a Txn's staged items).
struct FwpkmQueue {
  int64_t items = 0;
  std::vector<float> queries;   // items × key_dim
  std::vector<int32_t> labels;  // label stores: a column per item
  std::vector<float> targets;   // vector and next stores: items × width
  void Clear() { *this = FwpkmQueue(); }
};

class FwpkmStore final : public Store {
 public:
  // `spec` must come from NormalizeFwpkmSpec. Addressing (reads and chunk updates) runs on
  // `backend`, which must outlive the store.
  FwpkmStore(const adapt::v1::StoreSpec& spec, kernels::Backend* backend);
  // Rebuilds a store from a snapshot state (validated against `spec`).
  static absl::StatusOr<std::unique_ptr<FwpkmStore>> Restore(const adapt::v1::StoreSpec& spec,
                                                             const adapt::v1::FwpkmState& state,
                                                             const StateArrays& arrays,
                                                             kernels::Backend* backend);

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

 private:
  friend class FwpkmTxn;

  // What Txn::Add needs from the store, read in one locked section.
  struct TxnView {
    int64_t dim = 0;
    int64_t labels = 0;
    std::vector<bool> known;  // per queried name
    std::shared_ptr<const FwpkmProjection> projection;
  };
  TxnView ViewForTxn(const std::vector<std::string>& names) const ABSL_LOCKS_EXCLUDED(mu_);
  // Predict-before-update over staged items (queries items × key_dim); targets as in the queue,
  // labels by name. Nothing is evaluated before the first chunk.
  PrequentialStats Evaluate(const float* queries, int64_t items,
                            const std::vector<std::string>* labels, const float* targets) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Appends items (pass = one feed) and applies every full chunk; `flush` applies the rest too.
  void FeedLocked(const FwpkmQueue& items, bool flush) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyLocked(int64_t begin, int64_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t width() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return values_.width(); }
  uint64_t BytesLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  double EntropyLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Fixed at creation.
  const bool labels_;
  const bool next_;
  const int64_t out_dim_;  // M for vector stores
  const int64_t key_dim_;
  const int64_t chunk_;
  const uint32_t max_labels_;
  const uint64_t seed_;
  const FwpkmChunkParams params_;
  kernels::Backend* const backend_;

  mutable absl::Mutex mu_;
  adapt::v1::StoreSpec spec_ ABSL_GUARDED_BY(mu_);
  int64_t dim_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<const FwpkmProjection> projection_ ABSL_GUARDED_BY(mu_);
  FwpkmSubKeys keys_ ABSL_GUARDED_BY(mu_);
  FwpkmValues values_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const std::vector<std::string>> label_names_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int32_t> label_index_ ABSL_GUARDED_BY(mu_);
  FwpkmQueue queue_ ABSL_GUARDED_BY(mu_);
  std::vector<float> carry_ ABSL_GUARDED_BY(mu_);  // next stores: the last item's query
  std::array<std::vector<double>, 2> usage_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t chunks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  PrequentialStats prequential_ ABSL_GUARDED_BY(mu_);
};

// Factory entry points (store_factory.cc): validate, fill defaults, build or restore.
absl::StatusOr<std::unique_ptr<Store>> CreateFwpkmStore(const adapt::v1::StoreSpec& spec,
                                                        kernels::Backend* backend);
absl::StatusOr<std::unique_ptr<Store>> RestoreFwpkmStore(const adapt::v1::StoreSnapshot& snapshot,
                                                         const StateArrays& arrays,
                                                         kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_STORE_H_
