// FaastStore: the statistics (writes through FaastTxn, Commit), reads (Predict, the float32
// read-out), bases, Describe and the state. Compiles are faast_compile.cc.
#include "server/stores/faast_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/faast_buffer_pool.h"
#include "server/stores/faast_compile_internal.h"
#include "server/stores/faast_txn.h"
#include "server/stores/memory_bytes.h"

namespace adaptd {

using adapt::v1::StoreSpec;

FaastStore::~FaastStore() = default;

FaastStore::FaastStore(const StoreSpec& spec, kernels::Backend* backend)
    : backend_(backend),
      labels_(spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS),
      embedded_(labels_ && !spec.output().label_encoder().empty()),
      one_hot_(labels_ && !embedded_),
      out_dim_(embedded_ ? spec.output().label_dim() : spec.output().dim()),
      decay_(spec.faast().decay()),
      prior_examples_(embedded_ ? spec.faast().prior_examples() : 0.0),
      few_shot_(spec.faast().few_shot()),
      max_labels_(spec.faast().max_labels()),
      auto_compile_every_(spec.faast().auto_compile_every()),
      auto_compile_delay_ms_(spec.faast().auto_compile_delay_ms()),
      spec_(spec),
      label_names_(std::make_shared<const std::vector<std::string>>()) {
  stats_.labels = one_hot_;
  stats_.dim = spec.dim();
  stats_.columns = one_hot_ ? 0 : out_dim_;
  stats_.raw_kept = few_shot_;
}

absl::StatusOr<std::unique_ptr<FaastStore>> FaastStore::Restore(const StoreSpec& spec,
                                                                FaastPersistent state,
                                                                kernels::Backend* backend) {
  StoreSpec with_dim = spec;
  with_dim.set_dim(static_cast<uint32_t>(state.stats.dim));
  auto store = std::make_unique<FaastStore>(with_dim, backend);
  {
    absl::MutexLock lock(&store->mu_);
    store->stats_ = std::move(state.stats);
    for (size_t i = 0; i < state.labels.size(); ++i) {
      store->label_index_.emplace(state.labels[i], static_cast<int32_t>(i));
    }
    store->label_names_ = std::make_shared<const std::vector<std::string>>(std::move(state.labels));
    store->prequential_ = state.prequential;
    store->label_vectors_ = std::move(state.label_vectors);
  }
  if (state.published.has_value()) {
    store->PublishRestored(std::move(*state.published), state.version, state.pending);
  } else if (state.version > 0) {
    // A snapshot from before the read-out was kept: solve the statistics again.
    RETURN_IF_ERROR(store->CompileAndPublish(adapt::v1::FaastParams(), state.version).status());
  } else {
    absl::MutexLock lock(&store->mu_);
    store->pending_ = state.pending;
  }
  return store;
}

void FaastStore::PublishRestored(FaastPublishedState published, uint64_t version,
                                 uint64_t pending) {
  auto weights = std::make_shared<FaastWeights>();
  weights->version = version;
  weights->labels = labels_;
  weights->columns = published.columns;
  weights->s = std::move(published.s);
  weights->float_scoring = FitsFloat(weights->s);
  absl::MutexLock lock(&mu_);
  weights->dim = stats_.dim;
  if (labels_) {
    // Labels are only appended, so the compile's are the first `published.labels`.
    const size_t count = static_cast<size_t>(published.labels);
    weights->label_names =
        count == label_names_->size()
            ? label_names_
            : std::make_shared<const std::vector<std::string>>(
                  label_names_->begin(), label_names_->begin() + static_cast<int64_t>(count));
  }
  if (embedded_) {
    weights->label_vectors = std::make_shared<const std::vector<double>>(
        UnitRows(label_vectors_.data(), published.labels, out_dim_));
  }
  last_stats_ = std::move(published.compile);
  pending_ = pending;
  absl::MutexLock pub_lock(&pub_mu_);
  published_ = std::move(weights);
}

StoreSpec FaastStore::spec() const {
  absl::MutexLock lock(&mu_);
  return spec_;
}

int64_t FaastStore::dim() const {
  absl::MutexLock lock(&mu_);
  return stats_.dim;
}

std::unique_ptr<Txn> FaastStore::Begin(TxnKind kind) {
  return std::make_unique<FaastTxn>(this, kind);
}

FaastStore::TxnView FaastStore::ViewForTxn(const std::vector<std::string>& names) const {
  absl::MutexLock lock(&mu_);
  TxnView view;
  view.dim = stats_.dim;
  view.examples = stats_.examples;
  view.raw_kept = stats_.raw_kept;
  view.labels = static_cast<int64_t>(label_names_->size());
  view.known.reserve(names.size());
  for (const std::string& name : names) view.known.push_back(label_index_.contains(name));
  return view;
}

std::shared_ptr<const FaastWeights> FaastStore::published() const {
  absl::MutexLock lock(&pub_mu_);
  return published_;
}

std::vector<std::vector<float>> FaastStore::LabelVectors(
    const std::vector<std::string>& names) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::vector<float>> out(names.size());
  if (!embedded_) return out;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = label_index_.find(names[i]);
    if (it == label_index_.end()) continue;
    const auto first = label_vectors_.begin() + static_cast<int64_t>(it->second) * out_dim_;
    out[i].assign(first, first + out_dim_);
  }
  return out;
}

std::shared_ptr<const LinearReadout> FaastStore::Readout() const {
  std::shared_ptr<const FaastWeights> w = published();
  if (w == nullptr || w->columns == 0 || w->dim == 0) return nullptr;
  if (w->label_vectors != nullptr) return nullptr;  // decoded by cosine: Predict only
  if (!w->float_scoring) return nullptr;            // outside float32's range: Predict, in float64
  return FloatReadout(w);
}

std::shared_ptr<const LinearReadout> FaastStore::FloatReadout(
    const std::shared_ptr<const FaastWeights>& w) const {
  return readout_cache_.Get(w, [&w] {
    auto r = std::make_shared<LinearReadout>();
    r->version = w->version;
    r->dim = w->dim;
    r->columns = w->columns;
    r->labels = w->labels;
    r->weights.assign(w->s.begin(), w->s.end());
    r->label_names = w->label_names;
    return std::shared_ptr<const LinearReadout>(std::move(r));
  });
}

uint64_t FaastStore::version() const {
  absl::MutexLock lock(&pub_mu_);
  return published_ == nullptr ? 0 : published_->version;
}

absl::Status FaastStore::MapColumns(const FaastTxn& txn, std::vector<int32_t>* column,
                                    std::vector<std::string>* fresh) const {
  const int64_t columns = txn.delta_.columns;
  column->resize(columns);
  if (!one_hot_) {
    for (int64_t j = 0; j < columns; ++j) (*column)[j] = static_cast<int32_t>(j);
  }
  if (!labels_) return absl::OkStatus();
  // One-hot: transaction label j is column j. Embedded: the columns are the embedding's.
  const int32_t base = static_cast<int32_t>(label_names_->size());
  for (size_t j = 0; j < txn.labels_.size(); ++j) {
    const std::string& name = txn.labels_[j];
    if (auto it = label_index_.find(name); it != label_index_.end()) {
      if (one_hot_) (*column)[j] = it->second;
    } else {
      if (one_hot_) (*column)[j] = base + static_cast<int32_t>(fresh->size());
      fresh->push_back(name);
    }
  }
  if (txn.kind_ == TxnKind::kForget && !fresh->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("examples: label '", (*fresh)[0], "' was never adapted to this store"));
  }
  const int64_t total = base + static_cast<int64_t>(fresh->size());
  if (total > max_labels_) {
    return absl::ResourceExhaustedError(absl::StrCat("spec.faast.max_labels: the store would hold ",
                                                     total, " labels, more than its limit of ",
                                                     max_labels_));
  }
  return absl::OkStatus();
}

void FaastStore::AppendLabels(const std::vector<std::string>& fresh, const FaastTxn& txn) {
  if (fresh.empty()) return;
  auto names = std::make_shared<std::vector<std::string>>(*label_names_);
  for (const std::string& name : fresh) {
    label_index_.emplace(name, static_cast<int32_t>(names->size()));
    names->push_back(name);
    if (embedded_) {
      const auto first = txn.label_vectors_.begin() + txn.column_of_.at(name) * out_dim_;
      label_vectors_.insert(label_vectors_.end(), first, first + out_dim_);
    }
  }
  label_names_ = std::move(names);
  if (one_hot_) stats_.AddColumns(static_cast<int64_t>(fresh.size()));
}

absl::StatusOr<CommitResult> FaastStore::Commit(Txn& txn) {
  ASSIGN_OR_RETURN(FaastTxn* const t, ClaimTxn<FaastTxn>(txn, this));
  if (t->broken_) {
    return absl::FailedPreconditionError("the transaction failed earlier; nothing was applied");
  }
  const FaastDelta& delta = t->delta_;
  CommitResult result;
  absl::MutexLock lock(&mu_);
  if (delta.examples > 0) {
    RETURN_IF_ERROR(CheckCommitDimension(stats_.dim, delta.dim));
    std::vector<int32_t> column;
    std::vector<std::string> fresh;
    RETURN_IF_ERROR(MapColumns(*t, &column, &fresh));
    // A replayed compile not solved yet solves the statistics as they were before this commit.
    if (replayed_ != nullptr && !replayed_->has_problem) {
      CopyProblemLocked(&replayed_->in);
      replayed_->has_problem = true;
    }
    if (t->kind_ == TxnKind::kForget) {
      if (delta.examples > stats_.examples) {
        return absl::FailedPreconditionError(
            absl::StrCat("examples: cannot forget ", delta.examples, " examples, the store holds ",
                         stats_.examples));
      }
      // Staged keys: their SYRK straight into G (a host backend: it cannot fail here).
      if (delta.staged_rows > 0) {
        RETURN_IF_ERROR(backend_->SyrkUpper(delta.dim, delta.staged_rows, -1.0, delta.staged.data(),
                                            delta.dim, 1.0, stats_.g.data(), delta.dim));
      }
      MergeForget(delta, column, &stats_);
    } else {
      if (stats_.g.empty()) {
        stats_.Allocate(delta.dim);
        spec_.set_dim(static_cast<uint32_t>(delta.dim));
      }
      AppendLabels(fresh, *t);
      MergeAdapt(delta, column, decay_, &stats_);
      if (delta.staged_rows > 0) {
        RETURN_IF_ERROR(backend_->SyrkUpper(delta.dim, delta.staged_rows, 1.0, delta.staged.data(),
                                            delta.dim, 1.0, stats_.g.data(), delta.dim));
      }
    }
    prequential_.evaluated += t->prequential_.evaluated;
    prequential_.correct += t->prequential_.correct;
    prequential_.loss_sum += t->prequential_.loss_sum;
    pending_ += delta.examples;
  }
  result.examples = delta.examples;
  result.prequential = t->prequential_;
  result.compile_now = auto_compile_every_ > 0 && pending_ >= auto_compile_every_;
  if (auto_compile_delay_ms_ > 0 && pending_ > 0) {
    result.compile_after = absl::Milliseconds(auto_compile_delay_ms_);
  }
  result.version = version();
  t->MarkCommitted();
  FaastBufferPool::Shared().Give(std::move(t->delta_.g));
  FaastBufferPool::Shared().Give(std::move(t->delta_.staged));
  t->delta_ = FaastDelta();  // the staged memory is not needed any more
  return result;
}

absl::StatusOr<Predictions> FaastStore::Predict(const float* keys, int64_t rows, int64_t dim,
                                                int top_k) const {
  std::shared_ptr<const FaastWeights> w = published();
  if (w == nullptr) {
    return absl::FailedPreconditionError(
        "the store has no compiled version yet: call Compile (or wait for the auto-compile)");
  }
  RETURN_IF_ERROR(CheckReadShape(w->dim, rows, dim));
  if (w->float_scoring && w->label_vectors == nullptr && w->columns > 0 && rows > 0) {
    return PredictInFloat(w, keys, rows, top_k);
  }
  // Converted and multiplied in blocks, so a large request needs no float64 copy of itself.
  constexpr int64_t kBlockRows = 512;
  std::vector<double> outputs(rows * w->columns, 0.0);
  std::vector<double> x;
  for (int64_t r0 = 0; r0 < rows && w->columns > 0; r0 += kBlockRows) {
    const int64_t n = std::min(kBlockRows, rows - r0);
    x.assign(keys + r0 * dim, keys + (r0 + n) * dim);
    ASSIGN_OR_RETURN(std::vector<double> block, FaastOutputs(*w, x.data(), n, backend_));
    std::copy(block.begin(), block.end(), outputs.begin() + r0 * w->columns);
  }
  Predictions out;
  FaastFillPredictions(*w, outputs, rows, top_k, &out);
  return out;
}

absl::StatusOr<Predictions> FaastStore::PredictInFloat(const std::shared_ptr<const FaastWeights>& w,
                                                       const float* keys, int64_t rows,
                                                       int top_k) const {
  std::shared_ptr<const LinearReadout> r = FloatReadout(w);
  const float* s = r->weights.data();
  const int64_t dim = w->dim;
  const int64_t columns = w->columns;
  std::vector<float> outputs(rows * columns);
  RETURN_IF_ERROR(backend_->Gemm(kernels::Trans::kNo, kernels::Trans::kNo, rows, columns, dim, 1.0f,
                                 keys, dim, s, columns, 0.0f, outputs.data(), columns));
  Predictions out;
  FaastFillPredictions(*w, outputs, rows, top_k, &out);
  // The rows float32 could not score are scored and ranked again from the float64 weights, so
  // they answer exactly as the float64 path does.
  const std::vector<int64_t> again = RowsToRescore(outputs.data(), rows, columns);
  if (again.empty()) return out;
  const int64_t n = static_cast<int64_t>(again.size());
  std::vector<double> x(n * dim);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(keys + again[i] * dim, keys + (again[i] + 1) * dim, x.begin() + i * dim);
  }
  ASSIGN_OR_RETURN(std::vector<double> exact, FaastOutputs(*w, x.data(), n, backend_));
  Predictions fixed;
  FaastFillPredictions(*w, exact, n, top_k, &fixed);
  const int64_t width = w->labels ? out.top_k : columns;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t from = i * width, to = again[i] * width;
    if (w->labels) {
      std::copy_n(fixed.label_ids.begin() + from, width, out.label_ids.begin() + to);
      std::copy_n(fixed.scores.begin() + from, width, out.scores.begin() + to);
    } else {
      std::copy_n(fixed.vectors.begin() + from, width, out.vectors.begin() + to);
    }
  }
  return out;
}

absl::StatusOr<BaseReadout> FaastStore::ExportBase() const {
  std::shared_ptr<const FaastWeights> w = published();
  if (embedded_) {
    return absl::InvalidArgumentError(
        "spec.base: a label-embedding store (output.label_encoder) cannot be a base");
  }
  if (w == nullptr || w->dim == 0) {
    return absl::FailedPreconditionError("spec.base: the base has no compiled version yet");
  }
  BaseReadout out;
  out.version = w->version;
  out.dim = w->dim;
  out.columns = w->columns;
  out.labels = w->labels;
  if (w->labels && w->label_names != nullptr) out.label_names = *w->label_names;
  out.s = w->s;
  return out;
}

absl::Status FaastStore::SetPriorLocked(const BaseReadout& base) {
  if (embedded_) {
    return absl::InvalidArgumentError(
        "spec.base: a label-embedding store (output.label_encoder) cannot start from a base");
  }
  if (base.version == 0) return absl::InvalidArgumentError("spec.base: the base's version is 0");
  if (base.key_norm != adapt::v1::FalconParams::KEY_NORM_NONE) {
    return absl::InvalidArgumentError(
        "spec.base: the base normalises its keys (falcon key_norm); a faast store reads them as "
        "they are");
  }
  if (stats_.dim != 0 && stats_.dim != base.dim) {
    return absl::InvalidArgumentError(absl::StrCat("spec.base: the base's dimension ", base.dim,
                                                   " differs from the store's ", stats_.dim));
  }
  if (base.labels != labels_ || (!labels_ && base.columns != out_dim_)) {
    return absl::InvalidArgumentError(
        "spec.base: the base's output differs from the store's (labels, or vectors of one width)");
  }
  std::vector<int32_t> column(base.columns);
  if (labels_) {
    std::vector<std::string> fresh;
    for (int64_t j = 0; j < base.columns; ++j) {
      const std::string& name = base.label_names[j];
      auto it = label_index_.find(name);
      column[j] = it != label_index_.end()
                      ? it->second
                      : static_cast<int32_t>(label_names_->size() + fresh.size());
      if (it == label_index_.end()) fresh.push_back(name);
    }
    const int64_t total = static_cast<int64_t>(label_names_->size() + fresh.size());
    if (total > max_labels_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec.faast.max_labels: with the base's labels the store would hold ", total,
                       ", more than ", max_labels_));
    }
    if (!fresh.empty()) {
      auto names = std::make_shared<std::vector<std::string>>(*label_names_);
      for (const std::string& name : fresh) {
        label_index_.emplace(name, static_cast<int32_t>(names->size()));
        names->push_back(name);
      }
      label_names_ = std::move(names);
    }
    if (stats_.g.empty()) stats_.Allocate(base.dim);
    if (!fresh.empty()) stats_.AddColumns(static_cast<int64_t>(fresh.size()));
  } else {
    for (int64_t j = 0; j < base.columns; ++j) column[j] = static_cast<int32_t>(j);
    if (stats_.g.empty()) stats_.Allocate(base.dim);
  }
  spec_.set_dim(static_cast<uint32_t>(base.dim));
  const int64_t d = base.dim, m = stats_.columns;
  stats_.prior_t.assign(m * d, 0.0);  // a label the base lacks starts at zero
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < base.columns; ++j) {
      stats_.prior_t[column[j] * d + i] = base.s[i * base.columns + j];
    }
  }
  stats_.prior_version = base.version;
  return absl::OkStatus();
}

absl::Status FaastStore::StartFromBase(const BaseReadout& base) {
  {
    absl::MutexLock lock(&mu_);
    if (stats_.examples > 0 || !label_names_->empty() || version() > 0 || stats_.has_prior()) {
      return absl::FailedPreconditionError("spec.base: a store takes its base when it is created");
    }
    if (!(spec_.faast().ridge() > 0)) {
      return absl::InvalidArgumentError(
          "spec.base: a faast store with a base needs faast.ridge > 0 (the ridge pulls towards "
          "the base; the spectral solve G⁺C has no place for it)");
    }
    RETURN_IF_ERROR(SetPriorLocked(base));
    pending_ = 0;
  }
  return CompileAndPublish(adapt::v1::FaastParams(), std::nullopt).status();
}

absl::Status FaastStore::SeedDeclaredLabels(const std::vector<std::string>& names,
                                            const std::vector<float>& vectors) {
  {
    absl::MutexLock lock(&mu_);
    if (!embedded_) return absl::FailedPreconditionError("the store does not embed its labels");
    if (stats_.examples > 0 || !label_names_->empty() || version() > 0) {
      return absl::FailedPreconditionError("labels are declared only when a store is created");
    }
    const auto& declared = spec_.output().labels();
    if (names.size() != static_cast<size_t>(declared.size()) ||
        !std::equal(names.begin(), names.end(), declared.begin())) {
      return absl::InvalidArgumentError("spec.output.labels: differ from the names given");
    }
    if (vectors.size() != names.size() * static_cast<size_t>(out_dim_)) {
      return absl::InvalidArgumentError(absl::StrCat("spec.output.labels: ", vectors.size(),
                                                     " embedding values for ", names.size(),
                                                     " labels of width ", out_dim_));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      label_index_.emplace(names[i], static_cast<int32_t>(i));
    }
    label_names_ = std::make_shared<const std::vector<std::string>>(names);
    label_vectors_ = vectors;
  }
  if (prior_examples_ <= 0 || names.empty()) return absl::OkStatus();
  return CompileAndPublish(adapt::v1::FaastParams(), std::nullopt).status();
}

void FaastStore::Describe(adapt::v1::StoreInfo* info) const {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const FaastWeights> w = published();
  *info->mutable_spec() = spec_;
  info->set_version(w == nullptr ? 0 : w->version);
  info->set_examples(stats_.examples);
  info->set_weighted_examples(stats_.weighted_examples);
  info->clear_labels();
  for (const std::string& name : *label_names_) info->add_labels(name);
  info->set_memory_bytes(BytesLocked(w.get()));
  info->set_prequential_evaluated(prequential_.evaluated);
  info->set_prequential_correct(prequential_.correct);
  info->set_prequential_loss_sum(prequential_.loss_sum);
  adapt::v1::FaastStats* stats = info->mutable_faast();
  *stats = last_stats_;
  stats->set_pending_examples(pending_);
}

size_t FaastStore::BytesLocked(const FaastWeights* w) const {
  size_t bytes = sizeof(*this) + spec_.SpaceUsedLong() - sizeof(spec_) + stats_.bytes() +
                 label_vectors_.capacity() * sizeof(float) + LabelNamesBytes(*label_names_) +
                 LabelIndexBytes(label_index_) + readout_cache_.bytes();
  if (w != nullptr) {
    bytes += w->bytes();
    // A compile's label list stops being shared with the store's once labels are added.
    if (w->label_names != nullptr && w->label_names != label_names_) {
      bytes += LabelNamesBytes(*w->label_names);
    }
  }
  return bytes;
}

absl::StatusOr<adapt::v1::StoreSnapshot> FaastStore::Snapshot() const {
  return SnapshotFromState(*this);
}

absl::Status FaastStore::WriteState(StateSink sink) const {
  absl::MutexLock lock(&mu_);
  // Held until `sink` returns: the arrays read these.
  std::shared_ptr<const FaastWeights> w = published();
  const FaastStatistics& stats = stats_;
  StoreStateOut state;
  *state.header.mutable_spec() = spec_;
  FaastStateToState(stats, *label_names_, w == nullptr ? 0 : w->version, prequential_, &state);
  adapt::v1::FaastState* faast = state.header.mutable_faast();
  faast->mutable_label_vectors()->Add(label_vectors_.begin(), label_vectors_.end());
  PublishedToState(w.get(), last_stats_, &state);
  // A compile under way counts as pending: its result may come after this snapshot.
  faast->set_pending_examples(pending_ + compiling_);
  return sink(state);
}

}  // namespace adaptd
