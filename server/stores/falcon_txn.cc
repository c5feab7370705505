#include "server/stores/falcon_txn.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/falcon_store.h"

namespace adaptd {
namespace {

absl::Status DimensionError(absl::string_view field, int64_t got, int64_t expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, "[0]: dimension ", got, " does not match the store's dimension ", expected));
}

}  // namespace

absl::Status FalconTxn::CheckShape(const ExampleBatch& b) const {
  const char* field = store_->next_ ? "sequence" : "examples";
  if (b.sequence != store_->next_) {
    return absl::InvalidArgumentError(
        store_->next_ ? "examples: a store whose output is 'next' learns from sequences"
                      : "sequence: only stores whose output is 'next' learn from sequences");
  }
  if (b.dim < 1 || b.keys.size() != static_cast<size_t>(b.rows * b.dim)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", b.keys.size(), " key values for ",
                                                   b.rows, " rows of dimension ", b.dim));
  }
  for (size_t i = 0; i < b.keys.size(); ++i) {
    if (!std::isfinite(b.keys[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i / b.dim, "].input: value ", i % b.dim, " is not finite"));
    }
  }
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
  } else if (!store_->next_) {
    const int64_t m = store_->out_dim_;
    if (b.targets.size() != static_cast<size_t>(b.rows * m)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "examples: ", b.targets.size(), " target values for ", b.rows, " rows of width ", m));
    }
    for (size_t i = 0; i < b.targets.size(); ++i) {
      if (!std::isfinite(b.targets[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("examples[", i / m, "].vector: value ", i % m, " is not finite"));
      }
    }
  }
  const int64_t fixed = store_->dim();
  if (fixed > 0 && b.dim != fixed) return DimensionError(field, b.dim, fixed);
  if (dim_ > 0 && b.dim != dim_) return DimensionError(field, b.dim, dim_);
  return absl::OkStatus();
}

FalconTxn::FalconTxn(FalconStore* store, TxnKind kind) : Txn(store), store_(store), kind_(kind) {}

absl::Status FalconTxn::Add(const ExampleBatch& b) {
  if (absl::Status open = CheckOpen(); !open.ok()) return open;
  if (kind_ == TxnKind::kForget) {
    return absl::FailedPreconditionError(
        "falcon stores learn online and cannot forget examples (forget is for faast stores)");
  }
  if (b.rows == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckShape(b));
  dim_ = b.dim;
  keys_.insert(keys_.end(), b.keys.begin(), b.keys.end());
  labels_.insert(labels_.end(), b.labels.begin(), b.labels.end());
  targets_.insert(targets_.end(), b.targets.begin(), b.targets.end());
  if (b.restart_sequence) restarts_.push_back(rows_);
  rows_ += b.rows;
  return absl::OkStatus();
}

}  // namespace adaptd
