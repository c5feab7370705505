// Predictor::PredictBatch: the batched predict behind the scheduler (predictor.h), in four
// steps: validate each request as Predict does (ValidatePredict), encode the inputs of
// requests that share an encoder and dimension as one batch, read out (one grouped GEMM for
// the stores with a linear read-out, each other store's own Predict), and count.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/core/predictor.h"
#include "server/core/warm_store.h"

namespace adaptd {
namespace {

using Results = std::vector<absl::StatusOr<adapt::v1::PredictResponse>>;

struct Pending {
  PredictTarget target;
  EncodedBatch keys;
  std::shared_ptr<const LinearReadout> readout;
  std::vector<float> outputs;  // grouped stores: rows × columns
  // Stores with a feedback window: the keys as encoded (a read-out may prepare them in place).
  std::vector<float> served_keys;
};

// One batch on its way: each request's state, result, and whether it is still running.
struct BatchRun {
  explicit BatchRun(const std::vector<const adapt::v1::PredictRequest*>& r)
      : requests(r),
        results(r.size(), absl::InternalError("predict: not run")),
        pending(r.size()),
        live(r.size(), false) {}
  void Fail(size_t i, absl::Status status) {
    results[i] = std::move(status);
    live[i] = false;
  }

  const std::vector<const adapt::v1::PredictRequest*>& requests;
  Results results;
  std::vector<Pending> pending;
  std::vector<bool> live;
};

std::string InputName(size_t i) { return absl::StrCat("inputs[", i, "]"); }

// Splits one encoded batch of `members`' inputs (in order) into each member's keys.
void SplitKeys(BatchRun& run, const std::vector<size_t>& members, const EncodedBatch& batch) {
  int64_t row = 0;
  for (size_t i : members) {
    const int64_t rows = run.requests[i]->inputs_size();
    EncodedBatch& own = run.pending[i].keys;
    own.rows = rows;
    own.dim = batch.dim;
    own.keys.assign(batch.keys.begin() + row * batch.dim,
                    batch.keys.begin() + (row + rows) * batch.dim);
    own.truncated.clear();
    for (int64_t t : batch.truncated) {
      if (t >= row && t < row + rows) own.truncated.push_back(t - row);
    }
    row += rows;
  }
}

// Encoding: one Encode per (encoder, store dimension); on an error the requests of that group
// are encoded alone, so each one's error names its own inputs.
void EncodeGroups(BatchRun& run, int64_t max_dim) {
  std::map<std::pair<const Encoder*, int64_t>, std::vector<size_t>> by_encoder;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const PredictTarget& t = run.pending[i].target;
    if (run.live[i]) by_encoder[{t.encoder, t.store->dim()}].push_back(i);
  }
  for (const auto& [key, members] : by_encoder) {
    if (members.size() > 1) {
      std::vector<const adapt::v1::Input*> all;
      for (size_t i : members) {
        for (const auto& input : run.requests[i]->inputs()) all.push_back(&input);
      }
      auto batch = key.first->Encode(all, key.second, max_dim, InputName);
      if (batch.ok() && batch->rows == static_cast<int64_t>(all.size())) {
        SplitKeys(run, members, *batch);
        continue;
      }
    }
    for (size_t i : members) {
      auto batch = key.first->Encode(InputsOf(*run.requests[i]), key.second, max_dim, InputName);
      if (!batch.ok()) {
        run.Fail(i, batch.status());
        continue;
      }
      run.pending[i].keys = *std::move(batch);
    }
  }
}

// Request i's product with its store's linear read-out, as a member of one grouped GEMM.
kernels::GemmGroup ReadoutProduct(Pending& p) {
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
  return g;
}

// Read-out: the stores with a linear read-out in one grouped GEMM and top-k; the others their
// own Predict.
void ReadOut(BatchRun& run, kernels::Backend* backend) {
  std::vector<kernels::GemmGroup> groups;
  std::vector<size_t> grouped;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    if (!run.live[i]) continue;
    Pending& p = run.pending[i];
    p.readout = p.target.store->Readout();
    if (p.readout != nullptr && p.readout->dim == p.keys.dim) {
      groups.push_back(ReadoutProduct(p));
      grouped.push_back(i);
      continue;
    }
    auto predictions =
        p.target.store->Predict(p.keys.keys.data(), p.keys.rows, p.keys.dim, p.target.top_k);
    if (!predictions.ok()) {
      run.Fail(i, predictions.status());
      continue;
    }
    run.results[i] = ToPredictResponse(*predictions);
  }
  if (groups.empty()) return;
  const absl::Status status = backend->GroupedGemm(groups);
  for (size_t i : grouped) {
    Pending& p = run.pending[i];
    if (!status.ok()) {
      run.Fail(i, status);
      continue;
    }
    auto out = PredictionsFromReadout(*p.readout, p.keys.rows, p.target.top_k, std::move(p.outputs),
                                      backend);
    if (!out.ok()) {
      run.Fail(i, out.status());
      continue;
    }
    run.results[i] = ToPredictResponse(*out);
  }
}

}  // namespace

std::vector<absl::StatusOr<adapt::v1::PredictResponse>> Predictor::PredictBatch(
    const std::vector<const adapt::v1::PredictRequest*>& requests) const {
  BatchRun run(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<PredictTarget> target = ValidatePredict(*requests[i]);
    if (!target.ok()) {
      run.results[i] = target.status();
      continue;
    }
    run.pending[i].target = *std::move(target);
    run.live[i] = true;
  }
  EncodeGroups(run, max_dim_);
  for (size_t i = 0; i < requests.size(); ++i) {
    Pending& p = run.pending[i];
    if (run.live[i] && p.target.remembered != nullptr) p.served_keys = p.keys.keys;
  }
  ReadOut(run, backend_);
  for (size_t i = 0; i < requests.size(); ++i) {
    const Pending& p = run.pending[i];
    if (run.live[i] && run.results[i].ok()) {
      run.results[i]->set_truncated_texts(p.keys.truncated.size());
      RememberServed(p.target, p.served_keys, p.keys.dim, &*run.results[i]);
    }
  }
  if (metrics_ != nullptr) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (!run.live[i]) continue;
      const Pending& p = run.pending[i];
      metrics_->RecordPredict(requests[i]->tenant(), KindName(p.target.store->spec().kind()),
                              static_cast<double>(p.keys.rows));
    }
  }
  return std::move(run.results);
}

}  // namespace adaptd
