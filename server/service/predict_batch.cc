#include "server/service/predict_batch.h"

namespace adaptd {

void RunPredictBatch(const Engine& engine, std::vector<std::unique_ptr<BatchItem>>& batch) {
  if (batch.size() == 1) {
    auto* item = static_cast<PredictItem*>(batch.front().get());
    item->Answer(engine.Predict(item->request()));
    return;
  }
  std::vector<const adapt::v1::PredictRequest*> requests;
  requests.reserve(batch.size());
  for (const auto& item : batch) {
    requests.push_back(&static_cast<const PredictItem*>(item.get())->request());
  }
  auto results = engine.PredictBatch(requests);
  for (size_t i = 0; i < batch.size(); ++i) {
    static_cast<PredictItem*>(batch[i].get())->Answer(std::move(results[i]));
  }
}

}  // namespace adaptd
