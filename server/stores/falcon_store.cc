#include "server/stores/falcon_store.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/falcon_chunked.h"
#include "server/stores/falcon_txn.h"
#include "server/stores/memory_bytes.h"

namespace adaptd {
namespace {

using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

constexpr double kResidualAverageDecay = 0.99;

int64_t ColumnsFor(const StoreSpec& spec, int64_t dim) {
  switch (spec.output().kind()) {
    case OutputSpec::KIND_NEXT:
      return dim;
    case OutputSpec::KIND_VECTOR:
      return spec.output().dim();
    default:
      return 0;  // labels: columns arrive with the labels
  }
}

// Best first, ties to the earlier column; k clamped to [1, columns].
void FillTopK(const std::vector<double>& out, int64_t rows, int64_t m, int top_k, Predictions* p) {
  const int k = static_cast<int>(std::clamp<int64_t>(top_k, 1, m));
  p->top_k = k;
  p->label_ids.resize(rows * k);
  p->scores.resize(rows * k);
  std::vector<int32_t> order(m);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = out.data() + r * m;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int32_t a, int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    for (int i = 0; i < k; ++i) {
      p->label_ids[r * k + i] = order[i];
      p->scores[r * k + i] = static_cast<float>(row[order[i]]);
    }
  }
}

}  // namespace

FalconStore::FalconStore(const StoreSpec& spec, kernels::Backend* backend)
    : backend_(backend),
      config_(FalconConfigOf(spec.falcon())),
      labels_(spec.output().kind() == OutputSpec::KIND_LABELS),
      next_(spec.output().kind() == OutputSpec::KIND_NEXT),
      out_dim_(spec.output().dim()) {
  auto v = std::make_shared<FalconVersion>();
  v->spec = spec;
  if (spec.dim() > 0) v->memory.Reset(spec.dim(), ColumnsFor(spec, spec.dim()));
  published_ = std::move(v);
}

FalconStore::FalconStore(FalconVersion state, kernels::Backend* backend)
    : FalconStore(state.spec, backend) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < state.labels->size(); ++i) {
    label_index_.emplace((*state.labels)[i], static_cast<int64_t>(i));
  }
  absl::MutexLock pub_lock(&pub_mu_);
  published_ = std::make_shared<const FalconVersion>(std::move(state));
}

std::shared_ptr<const FalconVersion> FalconStore::published() const {
  absl::MutexLock lock(&pub_mu_);
  return published_;
}

StoreSpec FalconStore::spec() const { return published()->spec; }

int64_t FalconStore::dim() const { return published()->memory.dim; }

std::unique_ptr<Txn> FalconStore::Begin(TxnKind kind) {
  return std::make_unique<FalconTxn>(this, kind);
}

absl::Status FalconStore::BuildPairs(const FalconTxn& txn, FalconVersion* next, Pairs* pairs) {
  const int64_t d = txn.dim_, n = txn.rows_;
  FalconMemory& mem = next->memory;
  if (mem.dim == 0) {
    mem.Reset(d, ColumnsFor(next->spec, d));
    next->spec.set_dim(static_cast<uint32_t>(d));
  }
  if (next_) {
    // x_t = φ(k_{t−1}), y_t = k_t; the first item of a sequence has no predecessor (x_1 = 0,
    // η_1 = 0): the store's very first item, and the first of a batch that restarts it.
    std::vector<double> items(txn.keys_.begin(), txn.keys_.end());
    std::vector<double> kept = std::move(next->last_key);
    const double* prev = kept.empty() ? nullptr : kept.data();
    auto restart = txn.restarts_.begin();
    pairs->rows = 0;
    pairs->x.reserve(n * d);
    pairs->y.reserve(n * d);
    for (int64_t r = 0; r < n; ++r) {
      if (restart != txn.restarts_.end() && *restart == r) {
        prev = nullptr;
        ++restart;
      }
      const double* item = items.data() + r * d;
      if (prev != nullptr) {
        pairs->x.insert(pairs->x.end(), prev, prev + d);
        pairs->y.insert(pairs->y.end(), item, item + d);
        ++pairs->rows;
      }
      prev = item;
    }
    next->last_key.assign(items.end() - d, items.end());
  } else {
    pairs->rows = n;
    pairs->x.assign(txn.keys_.begin(), txn.keys_.end());
    if (!labels_) pairs->y.assign(txn.targets_.begin(), txn.targets_.end());
  }
  NormalizeKeys(config_.key_norm, pairs->rows, d, pairs->x.data());
  if (!labels_) return absl::OkStatus();

  const int64_t base = static_cast<int64_t>(next->labels->size());
  auto names = std::make_shared<std::vector<std::string>>(*next->labels);
  absl::flat_hash_map<std::string, int64_t> fresh;
  pairs->label_column.resize(n);
  pairs->visible.resize(n);
  for (int64_t r = 0; r < n; ++r) {
    const std::string& name = txn.labels_[r];
    pairs->visible[r] = static_cast<int64_t>(names->size());
    if (auto it = label_index_.find(name); it != label_index_.end()) {
      pairs->label_column[r] = it->second;
      continue;
    }
    auto [it, inserted] = fresh.try_emplace(name, static_cast<int64_t>(names->size()));
    if (inserted) names->push_back(name);
    pairs->label_column[r] = it->second;
  }
  const int64_t total = static_cast<int64_t>(names->size());
  if (total > kFalconMaxLabels) {
    return absl::ResourceExhaustedError(absl::StrCat("examples: the store would hold ", total,
                                                     " labels, more than its limit of ",
                                                     kFalconMaxLabels));
  }
  mem.AddColumns(total - base);
  pairs->y.assign(n * total, 0.0);
  for (int64_t r = 0; r < n; ++r) pairs->y[r * total + pairs->label_column[r]] = 1.0;
  next->labels = std::move(names);
  return absl::OkStatus();
}

void FalconStore::Account(const Pairs& pairs, const std::vector<double>& pred, FalconVersion* next,
                          PrequentialStats* stats) {
  const int64_t m = next->memory.columns;
  const bool labels = !pairs.label_column.empty();
  // FalconChunked has counted these pairs already.
  const int64_t first = next->memory.steps - pairs.rows;
  for (int64_t t = 0; t < pairs.rows; ++t) {
    const double* p = pred.data() + t * m;
    const double* y = pairs.y.data() + t * m;
    double sq = 0;
    for (int64_t j = 0; j < m; ++j) sq += (y[j] - p[j]) * (y[j] - p[j]);
    const double norm = std::sqrt(sq);
    next->residual_norm = norm;
    next->residual_norm_avg = first + t == 0 ? norm
                                             : kResidualAverageDecay * next->residual_norm_avg +
                                                   (1 - kResidualAverageDecay) * norm;
    ++stats->evaluated;
    if (!labels) {
      stats->loss_sum += sq / static_cast<double>(m);
      continue;
    }
    // Top-1 among the labels known before this example (a label's first example is a miss).
    int64_t best = -1;
    for (int64_t j = 0; j < pairs.visible[t]; ++j) {
      if (best < 0 || p[j] > p[best]) best = j;
    }
    const bool hit = best >= 0 && best == pairs.label_column[t];
    stats->correct += hit ? 1 : 0;
    stats->loss_sum += hit ? 0.0 : 1.0;
  }
}

absl::StatusOr<CommitResult> FalconStore::Commit(Txn& txn) {
  ASSIGN_OR_RETURN(FalconTxn* const t, ClaimTxn<FalconTxn>(txn, this));
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const FalconVersion> current = published();
  CommitResult result;
  result.version = current->version;
  if (t->rows_ == 0) {
    t->MarkCommitted();
    return result;
  }
  RETURN_IF_ERROR(
      CheckCommitDimension(current->memory.dim, t->dim_, next_ ? "sequence[0]" : "examples[0]"));
  auto next = std::make_shared<FalconVersion>(*current);
  Pairs pairs;
  RETURN_IF_ERROR(BuildPairs(*t, next.get(), &pairs));
  std::vector<double> pred(pairs.rows * next->memory.columns);
  RETURN_IF_ERROR(FalconChunked(config_, kFalconChunk, pairs.x.data(), pairs.y.data(), pairs.rows,
                                &next->memory, pred.data(), backend_));
  Account(pairs, pred, next.get(), &result.prequential);
  next->prequential.evaluated += result.prequential.evaluated;
  next->prequential.correct += result.prequential.correct;
  next->prequential.loss_sum += result.prequential.loss_sum;
  next->examples += static_cast<uint64_t>(t->rows_);
  next->version = current->version + 1;
  for (size_t i = label_index_.size(); i < next->labels->size(); ++i) {
    label_index_.emplace((*next->labels)[i], static_cast<int64_t>(i));
  }
  result.examples = static_cast<uint64_t>(t->rows_);
  result.version = next->version;
  {
    absl::MutexLock pub_lock(&pub_mu_);
    published_ = std::move(next);
  }
  t->MarkCommitted();
  t->keys_ = {};
  t->labels_ = {};
  t->targets_ = {};
  return result;
}

absl::StatusOr<Predictions> FalconStore::Predict(const float* keys, int64_t rows, int64_t dim,
                                                 int top_k) const {
  std::shared_ptr<const FalconVersion> v = published();
  const FalconMemory& mem = v->memory;
  if (mem.dim == 0) {
    return absl::FailedPreconditionError(
        "the store has no examples yet, so its key dimension is not fixed: adapt first");
  }
  if (labels_ && mem.columns == 0) {
    return absl::FailedPreconditionError("the store has no labels yet: adapt some examples first");
  }
  RETURN_IF_ERROR(CheckReadShape(mem.dim, rows, dim));
  const int64_t m = mem.columns;
  std::vector<double> x(keys, keys + rows * (rows > 0 ? dim : 0));
  NormalizeKeys(config_.key_norm, rows, mem.dim, x.data());
  std::vector<double> out(rows * m, 0.0);
  if (rows > 0) {
    RETURN_IF_ERROR(backend_->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, m, mem.dim, 1.0,
                                   x.data(), mem.dim, mem.s.data(), m, 0.0, out.data(), m));
  }
  Predictions p;
  p.version = v->version;
  p.rows = rows;
  if (labels_) {
    p.label_names = v->labels;
    FillTopK(out, rows, m, top_k, &p);
  } else {
    p.out_dim = m;
    p.vectors.assign(out.begin(), out.end());
  }
  return p;
}

std::shared_ptr<const LinearReadout> FalconStore::Readout() const {
  std::shared_ptr<const FalconVersion> v = published();
  const FalconMemory& mem = v->memory;
  if (mem.dim == 0 || mem.columns == 0) return nullptr;
  return readout_cache_.Get(v, [&] {
    auto r = std::make_shared<LinearReadout>();
    r->version = v->version;
    r->dim = mem.dim;
    r->columns = mem.columns;
    r->labels = labels_;
    r->weights.assign(mem.s.begin(), mem.s.end());
    if (labels_) r->label_names = v->labels;
    r->prepare = ReadoutKeyNorm(config_.key_norm, mem.dim);
    return std::shared_ptr<const LinearReadout>(std::move(r));
  });
}

absl::StatusOr<BaseReadout> FalconStore::ExportBase() const {
  std::shared_ptr<const FalconVersion> v = published();
  const FalconMemory& mem = v->memory;
  if (mem.dim == 0 || mem.columns == 0 || v->version == 0) {
    return absl::FailedPreconditionError("spec.base: the base has learned nothing yet");
  }
  BaseReadout out;
  out.version = v->version;
  out.dim = mem.dim;
  out.columns = mem.columns;
  out.labels = labels_;
  if (labels_) out.label_names = *v->labels;
  out.s = mem.s;
  out.key_norm = v->spec.falcon().key_norm();
  return out;
}

absl::Status FalconStore::StartFromBase(const BaseReadout& base) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const FalconVersion> current = published();
  if (current->version != 0 || current->examples != 0) {
    return absl::FailedPreconditionError("spec.base: a store takes its base when it is created");
  }
  if (base.key_norm != current->spec.falcon().key_norm()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.falcon.key_norm: the base reads keys with key_norm ",
                     adapt::v1::FalconParams::KeyNorm_Name(base.key_norm),
                     "; a store that starts from its state must too"));
  }
  const int64_t want = ColumnsFor(current->spec, base.dim);
  if (base.labels != labels_ || (!labels_ && base.columns != want)) {
    return absl::InvalidArgumentError(
        "spec.base: the base's output differs from the store's (labels, or vectors of one width)");
  }
  if (current->memory.dim != 0 && current->memory.dim != base.dim) {
    return absl::InvalidArgumentError(absl::StrCat("spec.base: the base's dimension ", base.dim,
                                                   " differs from the store's ",
                                                   current->memory.dim));
  }
  auto next = std::make_shared<FalconVersion>(*current);
  next->spec.set_dim(static_cast<uint32_t>(base.dim));
  next->memory.Reset(base.dim, base.columns);
  next->memory.s = base.s;
  if (labels_) {
    next->labels = std::make_shared<const std::vector<std::string>>(base.label_names);
    for (size_t i = 0; i < base.label_names.size(); ++i) {
      label_index_.emplace(base.label_names[i], static_cast<int64_t>(i));
    }
  }
  next->version = 1;
  absl::MutexLock pub_lock(&pub_mu_);
  published_ = std::move(next);
  return absl::OkStatus();
}

absl::StatusOr<adapt::v1::CompileResponse> FalconStore::Compile(const adapt::v1::CompileRequest&) {
  return absl::FailedPreconditionError("falcon stores learn online; there is nothing to compile");
}

void FalconStore::Describe(adapt::v1::StoreInfo* info) const {
  std::shared_ptr<const FalconVersion> v = published();
  *info->mutable_spec() = v->spec;
  info->set_version(v->version);
  info->set_examples(v->examples);
  info->set_weighted_examples(static_cast<double>(v->examples));
  info->clear_labels();
  for (const std::string& name : *v->labels) info->add_labels(name);
  size_t index_bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    index_bytes = LabelIndexBytes(label_index_);
  }
  info->set_memory_bytes(sizeof(*this) + v->bytes() + index_bytes + readout_cache_.bytes());
  info->set_prequential_evaluated(v->prequential.evaluated);
  info->set_prequential_correct(v->prequential.correct);
  info->set_prequential_loss_sum(v->prequential.loss_sum);
  adapt::v1::FalconStats* stats = info->mutable_falcon();
  stats->set_steps(static_cast<uint64_t>(v->memory.steps));
  stats->set_residual_norm(v->residual_norm);
  stats->set_residual_norm_avg(v->residual_norm_avg);
  double sq = 0;
  for (double s : v->memory.s) sq += s * s;
  stats->set_state_norm(std::sqrt(sq));
}

absl::StatusOr<adapt::v1::StoreSnapshot> FalconStore::Snapshot() const {
  return SnapshotFromState(*this);
}

absl::Status FalconStore::WriteState(StateSink sink) const {
  // A published version never changes; holding it keeps the arrays valid while `sink` runs.
  std::shared_ptr<const FalconVersion> v = published();
  StoreStateOut state;
  *state.header.mutable_spec() = v->spec;
  FalconStateToState(*v, &state);
  return sink(state);
}

absl::StatusOr<std::unique_ptr<Store>> CreateFalconStore(const StoreSpec& spec,
                                                         kernels::Backend* backend) {
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFalconSpec(spec));
  return std::make_unique<FalconStore>(normalized, backend);
}

absl::StatusOr<std::unique_ptr<Store>> RestoreFalconStore(const adapt::v1::StoreSnapshot& snapshot,
                                                          const StateArrays& arrays,
                                                          kernels::Backend* backend) {
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFalconSpec(snapshot.spec()));
  if (snapshot.state_case() != adapt::v1::StoreSnapshot::kFalcon) {
    return absl::InvalidArgumentError("snapshot.falcon: missing for a falcon store");
  }
  FalconVersion state;
  RETURN_IF_ERROR(FalconStateFromProto(snapshot.falcon(), normalized, &state, arrays));
  return std::make_unique<FalconStore>(std::move(state), backend);
}

}  // namespace adaptd
