#include "server/stores/faast_txn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/faast_buffer_pool.h"
#include "server/stores/faast_store.h"
#include "server/stores/faast_weights.h"

namespace adaptd {
namespace {

void ScaleAll(std::vector<double>& v, double factor) {
  for (double& x : v) x *= factor;
}

// A row's weight: 1 unless the store decays (weights then holds one per row).
inline double RowWeight(const std::vector<double>& weights, int64_t r) {
  return weights.empty() ? 1.0 : weights[r];
}

absl::Status DimensionError(int64_t got, int64_t expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "examples[0].input: dimension ", got, " does not match the store's dimension ", expected));
}

}  // namespace

namespace {

// The index of the first value of v[0, n) that is not finite, or n. Blocks of 1,024 are tested
// with a branch-free OR of "exponent all ones" (a loop the compiler vectorises); only a block
// that holds one is searched.
size_t FirstNonFinite(const float* v, size_t n) {
  constexpr size_t kBlock = 1024;
  size_t b = 0;
  for (; b + kBlock <= n; b += kBlock) {
    uint32_t bad = 0;
    for (size_t i = 0; i < kBlock; ++i) {  // a fixed count: vectorised at -O2
      uint32_t bits;
      std::memcpy(&bits, v + b + i, sizeof bits);
      bad |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
    if (bad == 0) continue;
    for (size_t i = b; i < b + kBlock; ++i) {
      if (!std::isfinite(v[i])) return i;
    }
  }
  for (; b < n; ++b) {
    if (!std::isfinite(v[b])) return b;
  }
  return n;
}

}  // namespace

absl::Status FaastTxn::CheckShape(const ExampleBatch& b) const {
  if (b.dim < 1 || b.keys.size() != static_cast<size_t>(b.rows * b.dim)) {
    return absl::InvalidArgumentError(absl::StrCat("examples: ", b.keys.size(), " key values for ",
                                                   b.rows, " rows of dimension ", b.dim));
  }
  if (const size_t i = FirstNonFinite(b.keys.data(), b.keys.size()); i < b.keys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("examples[", i / b.dim, "].input: value ", i % b.dim, " is not finite"));
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
    if (store_->one_hot_) return absl::OkStatus();
  }
  // Vector stores, and label-embedding stores whose targets are the label embeddings.
  const int64_t m = store_->out_dim_;
  if (b.targets.size() != static_cast<size_t>(b.rows * m)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "examples: ", b.targets.size(), " target values for ", b.rows, " rows of width ", m));
  }
  if (const size_t i = FirstNonFinite(b.targets.data(), b.targets.size()); i < b.targets.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("examples[", i / m, "].vector: value ", i % m, " is not finite"));
  }
  return absl::OkStatus();
}

FaastTxn::ColumnPlan FaastTxn::PlanColumns(const ExampleBatch& b) const {
  ColumnPlan plan;
  if (!store_->labels_) return plan;
  plan.row_column.resize(b.rows);
  absl::flat_hash_map<std::string, int32_t> fresh_index;
  for (int64_t r = 0; r < b.rows; ++r) {
    const std::string& name = b.labels[r];
    if (auto it = column_of_.find(name); it != column_of_.end()) {
      plan.row_column[r] = it->second;
      continue;
    }
    auto [it, inserted] = fresh_index.try_emplace(name, static_cast<int32_t>(plan.fresh.size()));
    if (inserted) plan.fresh.push_back(name);
    plan.row_column[r] = static_cast<int32_t>(labels_.size()) + it->second;
  }
  return plan;
}

void FaastTxn::Evaluate(const ExampleBatch& b, const std::vector<double>& keys,
                        PrequentialStats* stats) const {
  std::shared_ptr<const FaastWeights> w = store_->published();
  if (w == nullptr || w->dim != b.dim) return;
  const int64_t m = w->columns;
  if (store_->labels_ && w->float_scoring && w->label_vectors == nullptr && m > 0) {
    // A label store scores as Predict does, in float32 with the caller's keys (labels agree
    // with the float64 path but for near ties; docs/ALGORITHMS.md §1.4), through a float32 copy
    // of S made here (the store's cached read-out is left as it is); rows float32 cannot score
    // are scored again in float64.
    const std::vector<float> s(w->s.begin(), w->s.end());
    std::vector<float> scores(b.rows * m);
    if (!store_->backend_
             ->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, b.rows, m, b.dim, 1.0f, b.keys.data(),
                    b.dim, s.data(), m, 0.0f, scores.data(), m)
             .ok()) {
      return;  // evaluation is advisory; the adapt itself goes on
    }
    std::vector<int64_t> best(b.rows);
    for (int64_t r = 0; r < b.rows; ++r) {
      const float* row = scores.data() + r * m;
      int64_t top = 0;
      for (int64_t j = 1; j < m; ++j) top = row[j] > row[top] ? j : top;
      best[r] = top;
    }
    const std::vector<int64_t> again = RowsToRescore(scores.data(), b.rows, m);
    if (!again.empty()) {
      const int64_t n = static_cast<int64_t>(again.size());
      std::vector<double> x(n * b.dim);
      for (int64_t i = 0; i < n; ++i) {
        std::copy_n(keys.data() + again[i] * b.dim, b.dim, x.data() + i * b.dim);
      }
      absl::StatusOr<std::vector<double>> exact = FaastOutputs(*w, x.data(), n, store_->backend_);
      if (!exact.ok()) return;
      for (int64_t i = 0; i < n; ++i) best[again[i]] = FaastBestLabel(*w, exact->data() + i * m);
    }
    for (int64_t r = 0; r < b.rows; ++r) {
      const bool hit = best[r] >= 0 && (*w->label_names)[best[r]] == b.labels[r];
      ++stats->evaluated;
      stats->correct += hit ? 1 : 0;
      stats->loss_sum += hit ? 0.0 : 1.0;
    }
    return;
  }
  absl::StatusOr<std::vector<double>> out = FaastOutputs(*w, keys.data(), b.rows, store_->backend_);
  if (!out.ok()) return;  // evaluation is advisory; the adapt itself goes on
  for (int64_t r = 0; r < b.rows; ++r) {
    const double* row = out->data() + r * m;
    ++stats->evaluated;
    if (store_->labels_) {
      const int64_t best = FaastBestLabel(*w, row);
      const bool hit = best >= 0 && (*w->label_names)[best] == b.labels[r];
      stats->correct += hit ? 1 : 0;
      stats->loss_sum += hit ? 0.0 : 1.0;
    } else {
      double se = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double e = row[j] - b.targets[r * m + j];
        se += e * e;
      }
      stats->loss_sum += se / static_cast<double>(m);
    }
  }
}

absl::Status FaastTxn::Stage(const ExampleBatch& b, std::vector<double>& keys,
                             const ColumnPlan& plan, bool keep_raw) {
  const int64_t rows = b.rows;
  const bool adapt = kind_ == TxnKind::kAdapt;
  AddColumns(b, plan);
  // Decay is per example (docs/ALGORITHMS.md, 1.1): what is staged already decays by γ once
  // per example added, and example r of this batch weighs γ^(rows−1−r), the newest 1. So the
  // weights follow the stream alone, however it is cut into messages and calls.
  std::vector<double> weights;  // per row, when the store decays
  std::vector<double> weighted_keys;
  if (adapt && store_->decay_ != 1.0) DecayForBatch(b, keys, &weights, &weighted_keys);
  if (adapt) delta_.decayed += rows;

  absl::Status s = StageTargets(b, keys, plan, weights);
  if (s.ok() && keep_raw) {
    StageRaw(b, keys, plan, weights);
  } else if (!keep_raw) {
    delta_.raw_complete = false;
    delta_.raw.Clear();
  }
  // Last: the keys (or their weighted copy) may move into the staged rows.
  if (s.ok()) s = StageGram(weights.empty() ? keys : weighted_keys, rows);
  if (!s.ok()) {
    broken_ = true;
    return s;
  }
  double added = 0;
  for (int64_t r = 0; r < rows; ++r) added += RowWeight(weights, r);
  delta_.weighted_examples += added;
  delta_.examples += rows;
  return absl::OkStatus();
}

void FaastTxn::AddColumns(const ExampleBatch& b, const ColumnPlan& plan) {
  const int64_t d = b.dim;
  if (delta_.dim == 0) {
    delta_.dim = d;
    delta_.columns = store_->one_hot_ ? 0 : store_->out_dim_;
    delta_.ct.assign(delta_.columns * d, 0.0);
  }
  const int32_t known = static_cast<int32_t>(labels_.size());
  for (const std::string& name : plan.fresh) {
    column_of_.emplace(name, static_cast<int32_t>(labels_.size()));
    labels_.push_back(name);
  }
  if (store_->embedded_ && !plan.fresh.empty()) {
    const int64_t p = store_->out_dim_;
    std::vector<bool> filled(plan.fresh.size(), false);
    label_vectors_.resize(labels_.size() * p);
    for (int64_t r = 0; r < b.rows; ++r) {
      const int32_t col = plan.row_column[r];
      if (col < known || filled[col - known]) continue;
      filled[col - known] = true;
      std::copy(b.targets.begin() + r * p, b.targets.begin() + (r + 1) * p,
                label_vectors_.begin() + static_cast<int64_t>(col) * p);
    }
  }
  if (store_->one_hot_) {
    delta_.columns = static_cast<int64_t>(labels_.size());
    delta_.ct.resize(delta_.columns * d, 0.0);
  }
}

void FaastTxn::DecayForBatch(const ExampleBatch& b, const std::vector<double>& keys,
                             std::vector<double>* weights, std::vector<double>* weighted_keys) {
  const int64_t d = b.dim, rows = b.rows;
  const double factor = std::pow(store_->decay_, static_cast<double>(rows));
  if (delta_.g_written) ScaleAll(delta_.g, factor);
  ScaleAll(delta_.staged, std::sqrt(factor));  // staged rows are keys times √weight
  ScaleAll(delta_.ct, factor);
  delta_.weighted_examples *= factor;
  delta_.raw.ScaleWeights(factor);
  weights->resize(rows);
  double w = 1.0;
  for (int64_t r = rows - 1; r >= 0; --r) {
    (*weights)[r] = w;
    w *= store_->decay_;
  }
  *weighted_keys = keys;  // row r times √w_r, for G = Σ w·x xᵀ
  for (int64_t r = 0; r < rows; ++r) {
    const double root = std::sqrt((*weights)[r]);
    for (int64_t i = 0; i < d; ++i) (*weighted_keys)[r * d + i] *= root;
  }
}

absl::Status FaastTxn::StageTargets(const ExampleBatch& b, const std::vector<double>& keys,
                                    const ColumnPlan& plan, const std::vector<double>& weights) {
  const int64_t d = b.dim, rows = b.rows;
  if (store_->one_hot_) {
    for (int64_t r = 0; r < rows; ++r) {
      double* dst = delta_.ct.data() + plan.row_column[r] * d;
      const double* x = keys.data() + r * d;
      const double w = RowWeight(weights, r);
      for (int64_t i = 0; i < d; ++i) dst[i] += w * x[i];
    }
    return absl::OkStatus();
  }
  const int64_t m = store_->out_dim_;
  std::vector<double> y = ToDouble(b.targets.data(), rows * m);
  if (!weights.empty()) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < m; ++j) y[r * m + j] *= weights[r];
    }
  }
  return store_->backend_->Gemm(kernels::Trans::kYes, kernels::Trans::kNo, m, d, rows, 1.0,
                                y.data(), m, keys.data(), d, 1.0, delta_.ct.data(), d);
}

void FaastTxn::StageRaw(const ExampleBatch& b, const std::vector<double>& keys,
                        const ColumnPlan& plan, const std::vector<double>& weights) {
  FaastRawPairs& raw = delta_.raw;
  raw.keys.insert(raw.keys.end(), keys.begin(), keys.end());
  if (store_->one_hot_) {
    raw.label_ids.insert(raw.label_ids.end(), plan.row_column.begin(), plan.row_column.end());
  } else {
    raw.targets.insert(raw.targets.end(), b.targets.begin(), b.targets.end());
  }
  for (int64_t r = 0; r < b.rows; ++r) raw.weights.push_back(RowWeight(weights, r));
  raw.rows += b.rows;
}

absl::Status FaastTxn::StageGram(std::vector<double>& gram_keys, int64_t rows) {
  const int64_t d = delta_.dim;
  // Up to d rows: keep the keys for the commit's SYRK into the statistics, where the
  // backend runs on the host (a failure there would leave the statistics half changed).
  if (!delta_.g_written && delta_.staged_rows + rows <= d && store_->backend_->RunsOnHost()) {
    if (delta_.staged_rows == 0) {
      FaastBufferPool::Shared().Give(std::move(delta_.staged));
      delta_.staged = std::move(gram_keys);  // taken, not copied
    } else {
      delta_.staged.insert(delta_.staged.end(), gram_keys.begin(), gram_keys.begin() + rows * d);
    }
    delta_.staged_rows += rows;
    return absl::OkStatus();
  }
  if (delta_.g.empty()) delta_.g = FaastBufferPool::Shared().Take(d * d);
  if (delta_.staged_rows > 0) {
    RETURN_IF_ERROR(store_->backend_->SyrkUpper(d, delta_.staged_rows, 1.0, delta_.staged.data(), d,
                                                delta_.g_written ? 1.0 : 0.0, delta_.g.data(), d));
    delta_.g_written = true;
    FaastBufferPool::Shared().Give(std::move(delta_.staged));
    delta_.staged = std::vector<double>();
    delta_.staged_rows = 0;
  }
  RETURN_IF_ERROR(store_->backend_->SyrkUpper(d, rows, 1.0, gram_keys.data(), d,
                                              delta_.g_written ? 1.0 : 0.0, delta_.g.data(), d));
  delta_.g_written = true;
  return absl::OkStatus();
}

std::optional<PrequentialStats> FaastTxn::StagedPrequential() const {
  if (kind_ != TxnKind::kAdapt) return std::nullopt;
  return prequential_;
}

bool FaastTxn::TakeRecordedPrequential(const PrequentialStats& recorded) {
  if (kind_ != TxnKind::kAdapt) return false;
  prequential_ = recorded;
  recorded_ = true;
  return true;
}

FaastTxn::FaastTxn(FaastStore* store, TxnKind kind) : Txn(store), store_(store), kind_(kind) {}

FaastTxn::~FaastTxn() {
  FaastBufferPool::Shared().Give(std::move(delta_.g));
  FaastBufferPool::Shared().Give(std::move(delta_.staged));
}

absl::Status FaastTxn::Add(const ExampleBatch& b) {
  if (absl::Status open = CheckOpen(); !open.ok()) return open;
  if (broken_) {
    return absl::FailedPreconditionError("the transaction failed earlier and cannot go on");
  }
  if (kind_ == TxnKind::kForget && store_->decay_ != 1.0) {
    // Each example's weight is γ to the number of examples adapted after it, which the store
    // does not keep per example: a removal could only be approximate.
    return absl::FailedPreconditionError(absl::StrCat(
        "forget: the store decays (spec.faast.decay = ", store_->decay_,
        "), so an example's weight depends on how many examples came after it, which the store "
        "does not keep: it cannot be removed exactly; Forget needs decay 1"));
  }
  if (b.rows == 0) return absl::OkStatus();
  RETURN_IF_ERROR(CheckShape(b));
  const bool adapt = kind_ == TxnKind::kAdapt;
  ColumnPlan plan = PlanColumns(b);

  std::vector<std::string> query = adapt ? maybe_new_ : std::vector<std::string>();
  query.insert(query.end(), plan.fresh.begin(), plan.fresh.end());
  const FaastStore::TxnView view = store_->ViewForTxn(query);

  if (view.dim > 0 && b.dim != view.dim) return DimensionError(b.dim, view.dim);
  if (delta_.dim > 0 && b.dim != delta_.dim) return DimensionError(b.dim, delta_.dim);

  std::vector<std::string> still_new;
  if (adapt) {
    for (size_t i = 0; i < query.size(); ++i) {
      if (!view.known[i]) still_new.push_back(query[i]);
    }
    const int64_t total = view.labels + static_cast<int64_t>(still_new.size());
    if (total > store_->max_labels_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec.faast.max_labels: the store would hold ", total,
                       " labels, more than its limit of ", store_->max_labels_));
    }
  } else {
    for (size_t i = 0; i < query.size(); ++i) {
      if (view.known[i]) continue;
      int64_t row = 0;
      while (b.labels[row] != query[i]) ++row;
      return absl::InvalidArgumentError(absl::StrCat("examples[", row, "].label: label '", query[i],
                                                     "' was never adapted to this store"));
    }
    if (delta_.examples + b.rows > view.examples) {
      return absl::FailedPreconditionError(
          absl::StrCat("examples: cannot forget ", delta_.examples + b.rows,
                       " examples, the store holds ", view.examples));
    }
  }

  // From the pool: a batch's keys in float64 are megabytes, and a fresh allocation of that
  // size costs its page faults every time.
  std::vector<double> keys = FaastBufferPool::Shared().Take(b.rows * b.dim);
  std::copy(b.keys.begin(), b.keys.begin() + b.rows * b.dim, keys.begin());
  PrequentialStats batch_stats;
  if (adapt && !recorded_) {
    store_->SolveNotedCompileBeforeEvaluating();
    Evaluate(b, keys, &batch_stats);
  }
  const uint64_t after = delta_.examples + static_cast<uint64_t>(b.rows);
  const bool keep_raw = store_->few_shot_ && view.raw_kept && delta_.raw_complete &&
                        (!adapt || view.examples + after < static_cast<uint64_t>(b.dim));
  const absl::Status staged = Stage(b, keys, plan, keep_raw);
  FaastBufferPool::Shared().Give(std::move(keys));  // unless the staged rows took them
  RETURN_IF_ERROR(staged);
  if (adapt) maybe_new_ = std::move(still_new);
  if (adapt && !recorded_) {
    prequential_.evaluated += batch_stats.evaluated;
    prequential_.correct += batch_stats.correct;
    prequential_.loss_sum += batch_stats.loss_sum;
  }
  return absl::OkStatus();
}

}  // namespace adaptd
