#include "server/stores/fwpkm_store.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_txn.h"
#include "server/stores/memory_bytes.h"

namespace adaptd {

using adapt::v1::FwpkmParams;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

namespace {

FwpkmChunkParams ChunkParamsOf(const FwpkmParams& p) {
  FwpkmChunkParams out;
  out.k = static_cast<int>(p.top_k());
  out.eps = static_cast<float>(p.idw_eps());
  out.value_lr = p.value_lr();
  out.addressing_lr = p.addressing_lr();
  out.gated = p.gate() == FwpkmParams::GATE_CONFIDENCE;
  return out;
}

void AppendItems(const FwpkmQueue& from, int64_t begin, int64_t count, int64_t key_dim,
                 int64_t width, FwpkmQueue* to) {
  to->queries.insert(to->queries.end(), from.queries.begin() + begin * key_dim,
                     from.queries.begin() + (begin + count) * key_dim);
  if (!from.labels.empty()) {
    to->labels.insert(to->labels.end(), from.labels.begin() + begin,
                      from.labels.begin() + begin + count);
  } else {
    to->targets.insert(to->targets.end(), from.targets.begin() + begin * width,
                       from.targets.begin() + (begin + count) * width);
  }
  to->items += count;
}

}  // namespace

FwpkmStore::FwpkmStore(const StoreSpec& spec, kernels::Backend* backend)
    : labels_(spec.output().kind() == OutputSpec::KIND_LABELS),
      next_(spec.output().kind() == OutputSpec::KIND_NEXT),
      out_dim_(spec.output().dim()),
      key_dim_(spec.fwpkm().key_dim()),
      chunk_(spec.fwpkm().chunk()),
      max_labels_(spec.fwpkm().max_labels()),
      seed_(spec.fwpkm().projection_seed()),
      params_(ChunkParamsOf(spec.fwpkm())),
      backend_(backend),
      spec_(spec),
      keys_(static_cast<int>(spec.fwpkm().sub_keys()), static_cast<int>(key_dim_ / 2), seed_),
      values_(spec.fwpkm().value_type() == FwpkmParams::VALUE_TYPE_BFLOAT16,
              labels_ ? 0 : (next_ ? spec.dim() : out_dim_)),
      label_names_(std::make_shared<const std::vector<std::string>>()) {
  dim_ = spec.dim();
  if (dim_ > 0) projection_ = std::make_shared<const FwpkmProjection>(seed_, dim_, key_dim_);
  for (auto& u : usage_) u.assign(keys_.n(), 0.0);
}

StoreSpec FwpkmStore::spec() const {
  absl::ReaderMutexLock lock(&mu_);
  return spec_;
}

int64_t FwpkmStore::dim() const {
  absl::ReaderMutexLock lock(&mu_);
  return dim_;
}

std::unique_ptr<Txn> FwpkmStore::Begin(TxnKind kind) {
  return std::make_unique<FwpkmTxn>(this, kind);
}

FwpkmStore::TxnView FwpkmStore::ViewForTxn(const std::vector<std::string>& names) const {
  absl::ReaderMutexLock lock(&mu_);
  TxnView view;
  view.dim = dim_;
  view.labels = static_cast<int64_t>(label_names_->size());
  view.projection = projection_;
  view.known.reserve(names.size());
  for (const std::string& name : names) view.known.push_back(label_index_.contains(name));
  return view;
}

namespace {

// The readout of one address: output (width values, gated) and confidence.
void ReadAddress(const FwpkmValues& values, const FwpkmAddress& a, bool gated, double* out,
                 float* confidence) {
  FwpkmReadout(values, a, out);
  const double g = FwpkmGate(a, gated);
  for (int64_t j = 0; j < values.width(); ++j) out[j] *= g;
  double written = 0;
  for (int i = 0; i < a.k; ++i) written += values.Find(a.slot[i]) >= 0 ? a.weight[i] : 0.0;
  *confidence = static_cast<float>(std::clamp(written, 0.0, 1.0));
}

// Queries addressed per batch by the read paths (addresses of about 1.5 KB each).
constexpr int64_t kReadBatch = 512;

}  // namespace

PrequentialStats FwpkmStore::Evaluate(const float* queries, int64_t items,
                                      const std::vector<std::string>* labels,
                                      const float* targets) const {
  PrequentialStats stats;
  absl::ReaderMutexLock lock(&mu_);
  if (version_ == 0 || items <= 0) return stats;
  const int64_t w = width();
  std::vector<double> out(w);
  FwpkmScratch scratch;
  std::vector<FwpkmAddress> addresses(std::min(items, kReadBatch));
  float confidence;
  for (int64_t t0 = 0; t0 < items; t0 += kReadBatch) {
    const int64_t nb = std::min(kReadBatch, items - t0);
    FwpkmAddressBatch(keys_, queries + t0 * key_dim_, nb, params_.k, params_.eps, &scratch,
                      addresses.data(), *backend_);
    for (int64_t t = t0; t < t0 + nb; ++t) {
      FwpkmPrefetchAhead(values_, addresses.data(), nb, t - t0);
      ReadAddress(values_, addresses[t - t0], params_.gated, out.data(), &confidence);
      ++stats.evaluated;
      if (labels != nullptr) {
        const int64_t best = std::max_element(out.begin(), out.end()) - out.begin();
        const bool hit = w > 0 && (*label_names_)[best] == (*labels)[t];
        stats.correct += hit ? 1 : 0;
        stats.loss_sum += hit ? 0.0 : 1.0;
      } else {
        double se = 0;
        for (int64_t j = 0; j < w; ++j) {
          const double e = out[j] - targets[t * w + j];
          se += e * e;
        }
        stats.loss_sum += se / static_cast<double>(std::max<int64_t>(w, 1));
      }
    }
  }
  return stats;
}

void FwpkmStore::ApplyLocked(int64_t begin, int64_t count) {
  FwpkmChunkView view;
  view.items = count;
  view.key_dim = key_dim_;
  view.queries = queue_.queries.data() + begin * key_dim_;
  if (labels_) {
    view.labels = queue_.labels.data() + begin;
  } else {
    view.targets = queue_.targets.data() + begin * width();
  }
  // A partial chunk writes values only: its few items are no estimate of the chunk's address
  // marginal, and a step on them would move the sub-keys away from the items just written.
  FwpkmChunkParams params = params_;
  if (count < chunk_) params.addressing_lr = 0;
  FwpkmApplyChunk(params, view, &keys_, &values_, &usage_, *backend_);
  ++chunks_;
  ++version_;
}

void FwpkmStore::FeedLocked(const FwpkmQueue& items, bool flush) {
  AppendItems(items, 0, items.items, key_dim_, width(), &queue_);
  int64_t begin = 0;
  while (queue_.items - begin >= chunk_) {
    ApplyLocked(begin, chunk_);
    begin += chunk_;
  }
  if (flush && queue_.items > begin) {
    ApplyLocked(begin, queue_.items - begin);
    begin = queue_.items;
  }
  if (begin == 0) return;
  FwpkmQueue rest;
  AppendItems(queue_, begin, queue_.items - begin, key_dim_, width(), &rest);
  queue_ = std::move(rest);
}

absl::StatusOr<CommitResult> FwpkmStore::Commit(Txn& txn) {
  ASSIGN_OR_RETURN(FwpkmTxn* const t, ClaimTxn<FwpkmTxn>(txn, this));
  CommitResult result;
  absl::WriterMutexLock lock(&mu_);
  if (t->staged_ > 0) {
    RETURN_IF_ERROR(CheckCommitDimension(dim_, t->dim_));
    // Transaction columns → store columns; the labels the store lacks.
    std::vector<int32_t> column(t->labels_.size());
    std::vector<std::string> fresh;
    for (size_t j = 0; j < t->labels_.size(); ++j) {
      auto it = label_index_.find(t->labels_[j]);
      column[j] = it != label_index_.end()
                      ? it->second
                      : static_cast<int32_t>(label_names_->size() + fresh.size());
      if (it == label_index_.end()) fresh.push_back(t->labels_[j]);
    }
    const uint64_t total = label_names_->size() + fresh.size();
    if (total > max_labels_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec.fwpkm.max_labels: the store would hold ", total,
                       " labels, more than its limit of ", max_labels_));
    }
    // Validated: from here on nothing fails.
    if (dim_ == 0) {
      dim_ = t->dim_;
      spec_.set_dim(static_cast<uint32_t>(dim_));
      projection_ = t->projection_;
      if (next_) values_.Widen(dim_);
    }
    if (!fresh.empty()) {
      auto names = std::make_shared<std::vector<std::string>>(*label_names_);
      for (const std::string& name : fresh) {
        label_index_.emplace(name, static_cast<int32_t>(names->size()));
        names->push_back(name);
      }
      label_names_ = std::move(names);
      values_.Widen(static_cast<int64_t>(label_names_->size()));
    }
    for (FwpkmTxn::Segment& seg : t->segments_) {
      FwpkmQueue& items = seg.items;
      for (int32_t& c : items.labels) c = column[c];
      if (next_) {
        // (carry → item 0), (item r − 1 → item r); the last item waits for its successor. A
        // restarted sequence has no carry: its first item only starts it.
        if (seg.restart_sequence) carry_.clear();
        FwpkmQueue pairs;
        pairs.items = items.items - (carry_.empty() ? 1 : 0);
        pairs.queries = carry_;
        pairs.queries.insert(pairs.queries.end(), items.queries.begin(),
                             items.queries.end() - key_dim_);
        pairs.targets.assign(items.targets.begin() + (carry_.empty() ? dim_ : 0),
                             items.targets.end());
        carry_.assign(items.queries.end() - key_dim_, items.queries.end());
        items = std::move(pairs);
      }
      for (int pass = 0; pass < seg.passes; ++pass) FeedLocked(items, seg.passes > 1);
    }
    // The call's partial chunk is applied at its end, so a read after the call sees all of it.
    if (queue_.items > 0) FeedLocked(FwpkmQueue(), /*flush=*/true);
    examples_ += t->staged_;
    prequential_.evaluated += t->prequential_.evaluated;
    prequential_.correct += t->prequential_.correct;
    prequential_.loss_sum += t->prequential_.loss_sum;
  }
  result.examples = t->staged_;
  result.prequential = t->prequential_;
  result.version = version_;
  t->MarkCommitted();
  t->segments_.clear();
  return result;
}

absl::StatusOr<Predictions> FwpkmStore::Predict(const float* keys, int64_t rows, int64_t dim,
                                                int top_k) const {
  absl::ReaderMutexLock lock(&mu_);
  if (version_ == 0) {
    if (queue_.items > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("the store has applied none of its ", queue_.items,
                       " queued items yet: adapt more examples or call Compile"));
    }
    return absl::FailedPreconditionError(
        next_ && examples_ > 0
            ? "the store has learned no pair yet: a next store pairs each item with the one "
              "after it, so adapt a sequence of at least two items"
            : "the store holds no examples yet: adapt some examples first");
  }
  RETURN_IF_ERROR(CheckReadShape(dim_, rows, dim));
  Predictions out;
  out.version = version_;
  out.rows = rows;
  out.confidence.resize(rows);
  const int64_t w = width();
  std::vector<float> query(key_dim_);
  std::vector<double> v(w);
  std::vector<int32_t> order(w);
  FwpkmScratch scratch;
  if (labels_) {
    out.top_k = static_cast<int>(std::clamp<int64_t>(top_k, 1, w));
    out.label_names = label_names_;
    out.label_ids.reserve(rows * out.top_k);
    out.scores.reserve(rows * out.top_k);
  } else {
    out.out_dim = w;
    out.vectors.reserve(rows * w);
  }
  std::vector<FwpkmAddress> addresses(std::min(rows, kReadBatch));
  for (int64_t r = 0; r < rows; ++r) {
    if (r % kReadBatch == 0) {
      const int64_t nb = std::min(kReadBatch, rows - r);
      query.resize(nb * key_dim_);
      for (int64_t i = 0; i < nb; ++i) {
        projection_->Apply(keys + (r + i) * dim, query.data() + i * key_dim_);
      }
      FwpkmAddressBatch(keys_, query.data(), nb, params_.k, params_.eps, &scratch, addresses.data(),
                        *backend_);
    }
    FwpkmPrefetchAhead(values_, addresses.data(),
                       std::min(kReadBatch, rows - r / kReadBatch * kReadBatch), r % kReadBatch);
    ReadAddress(values_, addresses[r % kReadBatch], params_.gated, v.data(), &out.confidence[r]);
    if (!labels_) {
      for (double x : v) out.vectors.push_back(static_cast<float>(x));
      continue;
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(
        order.begin(), order.begin() + out.top_k, order.end(),
        [&v](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
    for (int j = 0; j < out.top_k; ++j) {
      out.label_ids.push_back(order[j]);
      out.scores.push_back(static_cast<float>(v[order[j]]));
    }
  }
  return out;
}

absl::StatusOr<adapt::v1::CompileResponse> FwpkmStore::Compile(
    const adapt::v1::CompileRequest& request) {
  if (request.has_faast()) {
    return absl::InvalidArgumentError("faast: compile parameters do not apply to an fwpkm store");
  }
  absl::WriterMutexLock lock(&mu_);
  if (version_ == 0 && queue_.items == 0) {
    return absl::FailedPreconditionError("the store holds no examples: adapt some examples first");
  }
  if (queue_.items > 0) FeedLocked(FwpkmQueue(), /*flush=*/true);
  adapt::v1::CompileResponse response;
  response.set_version(version_);
  return response;
}

uint64_t FwpkmStore::BytesLocked() const {
  return sizeof(*this) + spec_.SpaceUsedLong() - sizeof(spec_) + values_.bytes() + keys_.bytes() +
         (projection_ ? projection_->bytes() : 0) + queue_.queries.capacity() * sizeof(float) +
         queue_.targets.capacity() * sizeof(float) + queue_.labels.capacity() * sizeof(int32_t) +
         (usage_[0].capacity() + usage_[1].capacity()) * sizeof(double) +
         carry_.capacity() * sizeof(float) + LabelNamesBytes(*label_names_) +
         LabelIndexBytes(label_index_);
}

double FwpkmStore::EntropyLocked() const {
  double sum = 0;
  for (const auto& u : usage_) {
    const double total = std::accumulate(u.begin(), u.end(), 0.0);
    if (total <= 0) continue;
    for (double x : u) {
      if (x > 0) sum -= (x / total) * std::log(x / total);
    }
  }
  return sum / 2;
}

void FwpkmStore::Describe(adapt::v1::StoreInfo* info) const {
  absl::ReaderMutexLock lock(&mu_);
  *info->mutable_spec() = spec_;
  info->set_version(version_);
  info->set_examples(examples_);
  info->set_weighted_examples(static_cast<double>(examples_));
  info->clear_labels();
  for (const std::string& name : *label_names_) info->add_labels(name);
  info->set_memory_bytes(BytesLocked());
  info->set_prequential_evaluated(prequential_.evaluated);
  info->set_prequential_correct(prequential_.correct);
  info->set_prequential_loss_sum(prequential_.loss_sum);
  adapt::v1::FwpkmStats* stats = info->mutable_fwpkm();
  stats->set_slots(static_cast<uint64_t>(keys_.n()) * keys_.n());
  stats->set_slots_used(values_.rows());
  stats->set_addressing_entropy(EntropyLocked());
  stats->set_pending(queue_.items);
  stats->set_chunks(chunks_);
  stats->set_value_bytes(values_.bytes());
  stats->set_carried(carry_.empty() ? 0 : 1);
}

absl::StatusOr<std::unique_ptr<Store>> CreateFwpkmStore(const StoreSpec& spec,
                                                        kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFwpkmSpec(spec));
  return std::make_unique<FwpkmStore>(normalized, backend);
}

}  // namespace adaptd
