#include "server/stores/fwpkm_txn.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/fwpkm_store.h"

namespace adaptd {
namespace {

absl::Status DimensionError(int64_t got, int64_t expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "examples[0].input: dimension ", got, " does not match the store's dimension ", expected));
}

absl::Status CheckFinite(const std::vector<float>& v, int64_t width, const char* field) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      return absl::InvalidArgumentError(absl::StrCat("examples[", i / width, "].", field,
                                                     ": value ", i % width, " is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FwpkmTxn::CheckShape(const ExampleBatch& b) const {
  if (b.dim < 1 || b.keys.size() != static_cast<size_t>(b.rows * b.dim)) {
    return absl::InvalidArgumentError(absl::StrCat("examples: ", b.keys.size(), " key values for ",
                                                   b.rows, " rows of dimension ", b.dim));
  }
  if (b.passes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("passes: must be at least 1, got ", b.passes));
  }
  RETURN_IF_ERROR(CheckFinite(b.keys, b.dim, "input"));
  if (store_->next_ != b.sequence) {
    return absl::InvalidArgumentError(
        store_->next_ ? "examples: a store whose output is 'next' learns from sequences"
                      : "sequence: only stores whose output is 'next' learn from sequences");
  }
  if (store_->next_) return absl::OkStatus();
  if (store_->labels_) {
    if (b.labels.size() != static_cast<size_t>(b.rows)) {
      return absl::InvalidArgumentError(
          absl::StrCat("examples: ", b.labels.size(), " labels for ", b.rows, " rows"));
    }
    for (int64_t r = 0; r < b.rows; ++r) {
      if (b.labels[r].empty()) {
        return absl::InvalidArgumentError(absl::StrCat("examples[", r, "].label: is empty"));
      }
    }
    return absl::OkStatus();
  }
  const int64_t m = store_->out_dim_;
  if (b.targets.size() != static_cast<size_t>(b.rows * m)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "examples: ", b.targets.size(), " target values for ", b.rows, " rows of width ", m));
  }
  return CheckFinite(b.targets, m, "vector");
}

FwpkmTxn::FwpkmTxn(FwpkmStore* store, TxnKind kind) : Txn(store), store_(store), kind_(kind) {}

absl::Status FwpkmTxn::Add(const ExampleBatch& b) {
  if (absl::Status open = CheckOpen(); !open.ok()) return open;
  if (kind_ != TxnKind::kAdapt) {
    return absl::FailedPreconditionError(
        "fwpkm stores cannot forget examples: their writes are gradient steps, not sums");
  }
  if (b.rows == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckShape(b));

  // Labels new to this transaction, in first-seen order.
  std::vector<std::string> fresh;
  absl::flat_hash_map<std::string, int32_t> fresh_index;
  if (store_->labels_) {
    for (const std::string& name : b.labels) {
      if (column_of_.contains(name)) continue;
      if (fresh_index.try_emplace(name, static_cast<int32_t>(fresh.size())).second) {
        fresh.push_back(name);
      }
    }
  }
  std::vector<std::string> query = labels_;
  query.insert(query.end(), fresh.begin(), fresh.end());
  const FwpkmStore::TxnView view = store_->ViewForTxn(query);
  if (view.dim > 0 && b.dim != view.dim) return DimensionError(b.dim, view.dim);
  if (dim_ > 0 && b.dim != dim_) return DimensionError(b.dim, dim_);
  int64_t unknown = 0;
  for (bool known : view.known) unknown += known ? 0 : 1;
  if (view.labels + unknown > store_->max_labels_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.fwpkm.max_labels: the store would hold ", view.labels + unknown,
                     " labels, more than its limit of ", store_->max_labels_));
  }

  std::shared_ptr<const FwpkmProjection> projection = projection_;
  if (projection == nullptr) {
    projection =
        view.projection != nullptr && view.dim == b.dim
            ? view.projection
            : std::make_shared<const FwpkmProjection>(store_->seed_, b.dim, store_->key_dim_);
  }
  Segment seg;
  seg.passes = b.passes;
  seg.restart_sequence = b.restart_sequence;
  FwpkmQueue& items = seg.items;
  const int64_t kd = store_->key_dim_;
  items.items = b.rows;
  items.queries.resize(b.rows * kd);
  for (int64_t r = 0; r < b.rows; ++r) {
    projection->Apply(b.keys.data() + r * b.dim, items.queries.data() + r * kd);
  }
  PrequentialStats stats;
  if (store_->labels_) {
    items.labels.resize(b.rows);
    for (int64_t r = 0; r < b.rows; ++r) {
      auto it = column_of_.find(b.labels[r]);
      items.labels[r] = it != column_of_.end()
                            ? it->second
                            : static_cast<int32_t>(labels_.size()) + fresh_index[b.labels[r]];
    }
    if (!recorded_) stats = store_->Evaluate(items.queries.data(), b.rows, &b.labels, nullptr);
  } else if (store_->next_) {
    items.targets = b.keys;
    // Within the batch, item r predicts item r + 1.
    if (!recorded_) {
      stats = store_->Evaluate(items.queries.data(), b.rows - 1, nullptr, b.keys.data() + b.dim);
    }
  } else {
    items.targets = b.targets;
    if (!recorded_) {
      stats = store_->Evaluate(items.queries.data(), b.rows, nullptr, b.targets.data());
    }
  }

  for (const std::string& name : fresh) {
    column_of_.emplace(name, static_cast<int32_t>(labels_.size()));
    labels_.push_back(name);
  }
  dim_ = b.dim;
  projection_ = std::move(projection);
  segments_.push_back(std::move(seg));
  staged_ += b.rows;
  prequential_.evaluated += stats.evaluated;
  prequential_.correct += stats.correct;
  prequential_.loss_sum += stats.loss_sum;
  return absl::OkStatus();
}

std::optional<PrequentialStats> FwpkmTxn::StagedPrequential() const {
  if (kind_ != TxnKind::kAdapt) return std::nullopt;
  return prequential_;
}

bool FwpkmTxn::TakeRecordedPrequential(const PrequentialStats& recorded) {
  if (kind_ != TxnKind::kAdapt) return false;
  prequential_ = recorded;
  recorded_ = true;
  return true;
}

}  // namespace adaptd
