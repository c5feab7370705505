#include "server/core/predictor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/store_kind.h"

namespace adaptd {

absl::StatusOr<PredictTarget> Predictor::ValidatePredict(
    const adapt::v1::PredictRequest& request) const {
  PredictTarget target;
  ASSIGN_OR_RETURN(target.store,
                   targets_->FindForRead(request.tenant(), request.store(), &target.remembered));
  if (request.inputs().empty()) {
    return absl::InvalidArgumentError("inputs: at least one input is required");
  }
  if (request.top_k() > kMaxTopK) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k: at most ", kMaxTopK, ", got ", request.top_k()));
  }
  ASSIGN_OR_RETURN(target.encoder, targets_->EncoderOf(*target.store));
  target.top_k = static_cast<int>(std::max<uint32_t>(1, request.top_k()));
  return target;
}

absl::StatusOr<adapt::v1::PredictResponse> Predictor::Predict(
    const adapt::v1::PredictRequest& request) const {
  ASSIGN_OR_RETURN(PredictTarget target, ValidatePredict(request));
  const Store& store = *target.store;
  ASSIGN_OR_RETURN(EncodedBatch batch,
                   target.encoder->Encode(InputsOf(request), store.dim(), max_dim_, [](size_t i) {
                     return absl::StrCat("inputs[", i, "]");
                   }));
  ASSIGN_OR_RETURN(Predictions p,
                   target.store->Predict(batch.keys.data(), batch.rows, batch.dim, target.top_k));
  if (metrics_ != nullptr) {
    metrics_->RecordPredict(request.tenant(), KindName(store.spec().kind()),
                            static_cast<double>(p.rows));
  }
  adapt::v1::PredictResponse response = ToPredictResponse(p);
  response.set_truncated_texts(batch.truncated.size());
  RememberServed(target, batch.keys, batch.dim, &response);
  return response;
}

std::vector<const adapt::v1::Input*> InputsOf(const adapt::v1::PredictRequest& request) {
  std::vector<const adapt::v1::Input*> inputs;
  inputs.reserve(request.inputs_size());
  for (const auto& input : request.inputs()) inputs.push_back(&input);
  return inputs;
}

adapt::v1::PredictResponse ToPredictResponse(const Predictions& p) {
  adapt::v1::PredictResponse response;
  response.set_version(p.version);
  response.mutable_predictions()->Reserve(static_cast<int>(p.rows));
  for (int64_t r = 0; r < p.rows; ++r) {
    adapt::v1::Prediction* out = response.add_predictions();
    if (p.top_k > 0) {
      for (int j = 0; j < p.top_k; ++j) {
        adapt::v1::LabelScore* ls = out->add_labels();
        ls->set_label((*p.label_names)[p.label_ids[r * p.top_k + j]]);
        ls->set_score(p.scores[r * p.top_k + j]);
      }
    } else {
      out->mutable_vector()->Add(p.vectors.begin() + r * p.out_dim,
                                 p.vectors.begin() + (r + 1) * p.out_dim);
    }
    if (!p.confidence.empty()) out->set_confidence(p.confidence[r]);
  }
  return response;
}

void RememberServed(const PredictTarget& target, const std::vector<float>& keys, int64_t dim,
                    adapt::v1::PredictResponse* response) {
  if (target.remembered == nullptr) return;
  const absl::Time now = absl::Now();
  for (int r = 0; r < response->predictions_size(); ++r) {
    adapt::v1::Prediction* prediction = response->mutable_predictions(r);
    RememberedPrediction served;
    served.served = now;
    served.version = response->version();
    served.key.assign(keys.begin() + r * dim, keys.begin() + (r + 1) * dim);
    if (prediction->labels_size() > 0) {
      served.label = prediction->labels(0).label();
    } else {
      served.vector.assign(prediction->vector().begin(), prediction->vector().end());
    }
    prediction->set_prediction_id(target.remembered->Remember(std::move(served)));
  }
}

}  // namespace adaptd
