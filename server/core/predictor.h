// Predictor: Predict and PredictBatch over one validation (ValidatePredict): the store
// (NotFound), at least one input, top_k at most kMaxTopK, and the store's encoder checked
// against the fingerprint the store recorded. What it needs of the stores is
// ReadTargets. The batched path is predictor_batch.cc.
#ifndef ADAPTD_SERVER_CORE_PREDICTOR_H_
#define ADAPTD_SERVER_CORE_PREDICTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "kernels/backend.h"
#include "server/core/remembered_predictions.h"
#include "server/encoders/encoder.h"
#include "server/metrics/metrics.h"
#include "server/stores/store.h"

namespace adaptd {

inline constexpr uint32_t kMaxTopK = 10000;  // the largest top_k a predict may ask for

// What a predict needs of the stores it reads (StoreDirectory implements it).
class ReadTargets {
 public:
  virtual ~ReadTargets() = default;
  // What a predict reads of tenant/store: the hot store, or its warm form (loaded first when
  // cold; the whole store for kinds without one). NotFound naming it.
  // `remembered` (nullable) is set to what the store remembers of what it serves, for
  // Feedback (docs/FEEDBACK.md): null when its spec has no feedback window.
  virtual absl::StatusOr<std::shared_ptr<Store>> FindForRead(
      const std::string& tenant, const std::string& store,
      std::shared_ptr<RememberedPredictions>* remembered = nullptr) const = 0;
  // The store's encoder, checked against the fingerprint the store recorded.
  virtual absl::StatusOr<const Encoder*> EncoderOf(const Store& store) const = 0;
};

// A predict that passed validation: the store to read, its encoder, and how many labels.
struct PredictTarget {
  std::shared_ptr<Store> store;
  const Encoder* encoder = nullptr;
  int top_k = 1;
  std::shared_ptr<RememberedPredictions> remembered;  // null: the store has no window
};

class Predictor {
 public:
  // Each must outlive the predictor; `metrics` is nullable.
  Predictor(const ReadTargets* targets, kernels::Backend* backend, Metrics* metrics,
            int64_t max_dim)
      : targets_(targets), backend_(backend), metrics_(metrics), max_dim_(max_dim) {}

  absl::StatusOr<adapt::v1::PredictResponse> Predict(
      const adapt::v1::PredictRequest& request) const;

  // Predicts many requests at once (the scheduler's batches). Inputs of requests whose stores
  // share an encoder and dimension are encoded as one batch; stores with a linear read-out run
  // as one grouped GEMM and top-k, the others their own Predict. Result i equals
  // Predict(*requests[i]), scores up to float rounding (1e-5 relative).
  std::vector<absl::StatusOr<adapt::v1::PredictResponse>> PredictBatch(
      const std::vector<const adapt::v1::PredictRequest*>& requests) const;

 private:
  absl::StatusOr<PredictTarget> ValidatePredict(const adapt::v1::PredictRequest& request) const;

  const ReadTargets* const targets_;
  kernels::Backend* const backend_;
  Metrics* const metrics_;
  const int64_t max_dim_;
};

std::vector<const adapt::v1::Input*> InputsOf(const adapt::v1::PredictRequest& request);
adapt::v1::PredictResponse ToPredictResponse(const Predictions& predictions);
// With `target.remembered`: remembers each of `response`'s predictions with its key (row r of
// `keys`, rows × dim) and sets its prediction_id. Nothing otherwise.
void RememberServed(const PredictTarget& target, const std::vector<float>& keys, int64_t dim,
                    adapt::v1::PredictResponse* response);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_PREDICTOR_H_
