// Engine::PredictBatch: the batched predict behind the scheduler (engine.h).
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/core/engine.h"
#include "server/core/warm_store.h"

namespace adaptd {
namespace {

struct Pending {
  std::shared_ptr<Store> store;
  const Encoder* encoder = nullptr;
  int top_k = 1;
  EncodedBatch keys;
  std::shared_ptr<const LinearReadout> readout;
  std::vector<float> outputs;  // grouped stores: rows × columns
};

std::string InputName(size_t i) { return absl::StrCat("inputs[", i, "]"); }

}  // namespace

std::vector<absl::StatusOr<adapt::v1::PredictResponse>> Engine::PredictBatch(
    const std::vector<const adapt::v1::PredictRequest*>& requests) const {
  const size_t n = requests.size();
  std::vector<absl::StatusOr<adapt::v1::PredictResponse>> results(
      n, absl::InternalError("predict: not run"));
  std::vector<Pending> pending(n);
  std::vector<bool> live(n, false);

  // Validation, as Predict does it.
  for (size_t i = 0; i < n; ++i) {
    const adapt::v1::PredictRequest& request = *requests[i];
    auto store = FindForRead(request.tenant(), request.store());
    if (!store.ok()) {
      results[i] = store.status();
    } else if (request.inputs().empty()) {
      results[i] = absl::InvalidArgumentError("inputs: at least one input is required");
    } else if (request.top_k() > kMaxTopK) {
      results[i] = absl::InvalidArgumentError(
          absl::StrCat("top_k: at most ", kMaxTopK, ", got ", request.top_k()));
    } else {
      pending[i].store = *std::move(store);
      auto encoder = EncoderOf(*pending[i].store);
      if (!encoder.ok()) {
        results[i] = encoder.status();
        continue;
      }
      pending[i].encoder = *encoder;
      pending[i].top_k = static_cast<int>(std::max<uint32_t>(1, request.top_k()));
      live[i] = true;
    }
  }

  // Encoding: one Encode per (encoder, store dimension); on an error the requests of that
  // group are encoded alone, so each one's error names its own inputs.
  std::map<std::pair<const Encoder*, int64_t>, std::vector<size_t>> by_encoder;
  for (size_t i = 0; i < n; ++i) {
    if (live[i]) by_encoder[{pending[i].encoder, pending[i].store->dim()}].push_back(i);
  }
  for (const auto& [key, members] : by_encoder) {
    if (members.size() > 1) {
      std::vector<const adapt::v1::Input*> all;
      for (size_t i : members) {
        for (const auto& input : requests[i]->inputs()) all.push_back(&input);
      }
      auto batch = key.first->Encode(all, key.second, max_dim_, InputName);
      if (batch.ok() && batch->rows == static_cast<int64_t>(all.size())) {
        int64_t row = 0;
        for (size_t i : members) {
          const int64_t rows = requests[i]->inputs_size();
          EncodedBatch& own = pending[i].keys;
          own.rows = rows;
          own.dim = batch->dim;
          own.keys.assign(batch->keys.begin() + row * batch->dim,
                          batch->keys.begin() + (row + rows) * batch->dim);
          row += rows;
        }
        continue;
      }
    }
    for (size_t i : members) {
      auto batch = key.first->Encode(InputsOf(*requests[i]), key.second, max_dim_, InputName);
      if (!batch.ok()) {
        results[i] = batch.status();
        live[i] = false;
        continue;
      }
      pending[i].keys = *std::move(batch);
    }
  }

  // Stores with a linear read-out: one grouped GEMM; the others: their own Predict.
  std::vector<kernels::GemmGroup> groups;
  std::vector<size_t> grouped;
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    Pending& p = pending[i];
    p.readout = p.store->Readout();
    if (p.readout != nullptr && p.readout->dim == p.keys.dim) {
      if (p.readout->prepare) p.readout->prepare(p.keys.rows, p.keys.keys.data());
      p.outputs.resize(p.keys.rows * p.readout->columns);
      kernels::GemmGroup g;
      g.m = p.keys.rows;
      g.n = p.readout->columns;
      g.k = p.readout->dim;
      g.a = p.keys.keys.data();
      g.lda = g.k;
      g.b = p.readout->weights.data();
      g.ldb = g.n;
      g.c = p.outputs.data();
      g.ldc = g.n;
      groups.push_back(g);
      grouped.push_back(i);
      continue;
    }
    auto predictions = p.store->Predict(p.keys.keys.data(), p.keys.rows, p.keys.dim, p.top_k);
    if (!predictions.ok()) {
      results[i] = predictions.status();
      live[i] = false;
      continue;
    }
    results[i] = ToPredictResponse(*predictions);
  }
  if (!groups.empty()) {
    const absl::Status status = backend_->GroupedGemm(groups);
    for (size_t i : grouped) {
      Pending& p = pending[i];
      if (!status.ok()) {
        results[i] = status;
        live[i] = false;
        continue;
      }
      auto out =
          PredictionsFromReadout(*p.readout, p.keys.rows, p.top_k, std::move(p.outputs), backend_);
      if (!out.ok()) {
        results[i] = out.status();
        live[i] = false;
        continue;
      }
      results[i] = ToPredictResponse(*out);
    }
  }

  if (metrics_ != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      metrics_->RecordPredict(requests[i]->tenant(), KindName(pending[i].store->spec().kind()),
                              static_cast<double>(pending[i].keys.rows));
    }
  }
  return results;
}

}  // namespace adaptd
