#include "server/core/warm_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace adaptd {
namespace {

// The transaction a warm store hands out: it stages nothing.
class RefusingTxn final : public Txn {
 public:
  RefusingTxn(const Store* owner, absl::Status refusal)
      : Txn(owner), refusal_(std::move(refusal)) {}
  absl::Status Add(const ExampleBatch&) override { return refusal_; }
  uint64_t staged() const override { return 0; }

 private:
  const absl::Status refusal_;
};

}  // namespace

namespace {

// `info` without its labels when they are the read-out's column names (Describe adds them back
// from there), so a warm store holds them once; as it is otherwise (labels added since the
// read-out was published). The label strings are freed, not kept for reuse as a cleared
// repeated field keeps them.
adapt::v1::StoreInfo WithoutReadoutLabels(adapt::v1::StoreInfo info, const LinearReadout& readout) {
  if (info.labels_size() == 0 || readout.label_names == nullptr) return info;
  const std::vector<std::string>& names = *readout.label_names;
  if (names.size() == static_cast<size_t>(info.labels_size()) &&
      std::equal(names.begin(), names.end(), info.labels().begin())) {
    google::protobuf::RepeatedPtrField<std::string>().Swap(info.mutable_labels());
  }
  return info;
}

}  // namespace

WarmStore::WarmStore(adapt::v1::StoreInfo info, std::shared_ptr<const LinearReadout> readout,
                     kernels::Backend* backend)
    : WarmStore(std::make_shared<const adapt::v1::StoreInfo>(
                    WithoutReadoutLabels(std::move(info), *readout)),
                readout, backend) {}

WarmStore::WarmStore(std::shared_ptr<const adapt::v1::StoreInfo> info,
                     std::shared_ptr<const LinearReadout> readout, kernels::Backend* backend)
    : info_(std::move(info)), readout_(std::move(readout)), backend_(backend) {
  bytes_ = sizeof(*this) + readout_->weights.capacity() * sizeof(float) + info_->SpaceUsedLong();
  if (readout_->label_names != nullptr) {
    for (const std::string& name : *readout_->label_names) bytes_ += sizeof(name) + name.size();
  }
}

absl::Status WarmStore::Refuse(const char* what) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "the store is warm (only its read-out is in memory) and takes no ", what, ": load it first"));
}

std::unique_ptr<Txn> WarmStore::Begin(TxnKind) {
  return std::make_unique<RefusingTxn>(this, Refuse("writes"));
}

absl::StatusOr<CommitResult> WarmStore::Commit(Txn&) { return Refuse("writes"); }

absl::StatusOr<adapt::v1::CompileResponse> WarmStore::Compile(const adapt::v1::CompileRequest&) {
  return Refuse("compiles");
}

absl::StatusOr<adapt::v1::StoreSnapshot> WarmStore::Snapshot() const { return Refuse("snapshots"); }

void WarmStore::Describe(adapt::v1::StoreInfo* info) const {
  *info = *info_;
  if (info->labels_size() == 0 && readout_->label_names != nullptr) {
    for (const std::string& name : *readout_->label_names) info->add_labels(name);
  }
  info->set_memory_bytes(bytes_);
}

adapt::v1::StoreInfo WarmStore::ColdInfo() const {
  adapt::v1::StoreInfo info;
  Describe(&info);
  info.set_memory_bytes(info_->memory_bytes());
  return info;
}

std::shared_ptr<const adapt::v1::StoreInfo> WarmStore::SharedColdInfo() const {
  // Describe adds labels only to a description without them.
  if (info_->labels_size() > 0 || readout_->label_names == nullptr ||
      readout_->label_names->empty()) {
    return info_;
  }
  return std::make_shared<const adapt::v1::StoreInfo>(ColdInfo());
}

absl::StatusOr<Predictions> WarmStore::Predict(const float* keys, int64_t rows, int64_t dim,
                                               int top_k) const {
  const LinearReadout& r = *readout_;
  RETURN_IF_ERROR(CheckReadShape(r.dim, rows, dim));
  std::vector<float> x(keys, keys + rows * dim);
  if (r.prepare && rows > 0) r.prepare(rows, x.data());
  std::vector<float> outputs(rows * r.columns, 0.0f);
  if (rows > 0 && r.columns > 0) {
    RETURN_IF_ERROR(backend_->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, r.columns, r.dim,
                                   1.0f, x.data(), r.dim, r.weights.data(), r.columns, 0.0f,
                                   outputs.data(), r.columns));
  }
  return PredictionsFromReadout(r, rows, top_k, std::move(outputs), backend_);
}

absl::StatusOr<Predictions> PredictionsFromReadout(const LinearReadout& r, int64_t rows, int top_k,
                                                   std::vector<float> outputs,
                                                   kernels::Backend* backend) {
  Predictions out;
  out.version = r.version;
  out.rows = rows;
  if (!r.labels) {
    out.out_dim = r.columns;
    out.vectors = std::move(outputs);
    return out;
  }
  const int k = static_cast<int>(std::clamp<int64_t>(top_k, 1, std::max<int64_t>(1, r.columns)));
  out.top_k = k;
  out.label_names = r.label_names;
  out.label_ids.resize(rows * k);
  out.scores.resize(rows * k);
  if (rows > 0) {
    RETURN_IF_ERROR(backend->TopK(rows, r.columns, outputs.data(), r.columns, k,
                                  out.label_ids.data(), out.scores.data()));
  }
  return out;
}

}  // namespace adaptd
