// Predicts as the scheduler batches them: PredictItem is one waiting predict (its request and
// where its answer goes); RunPredictBatch answers a batch through Engine::PredictBatch, or
// Engine::Predict for a batch of one. Items belong to the scheduler until run; `done` is
// called exactly once, on the worker that runs the batch.
#ifndef ADAPTD_SERVER_SERVICE_PREDICT_BATCH_H_
#define ADAPTD_SERVER_SERVICE_PREDICT_BATCH_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/adapt.pb.h"
#include "server/core/engine.h"
#include "server/scheduler/scheduler.h"

namespace adaptd {

class PredictItem final : public BatchItem {
 public:
  using Done = std::function<void(absl::StatusOr<adapt::v1::PredictResponse>)>;
  // `request` must stay valid until `done` runs.
  PredictItem(const adapt::v1::PredictRequest* request, Done done)
      : request_(request), done_(std::move(done)) {}

  const adapt::v1::PredictRequest& request() const { return *request_; }
  void Answer(absl::StatusOr<adapt::v1::PredictResponse> result) { done_(std::move(result)); }

 private:
  const adapt::v1::PredictRequest* request_;
  Done done_;
};

// The scheduler's batch runner for PredictItems.
void RunPredictBatch(const Engine& engine, std::vector<std::unique_ptr<BatchItem>>& batch);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SERVICE_PREDICT_BATCH_H_
