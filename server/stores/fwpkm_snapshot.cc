// FwpkmStore::WriteState and FwpkmStore::Restore: the store's whole state as FwpkmState
// (fwpkm_state.proto) with its sub-keys, slots, values and queued items as array sections
// (store_state.h), and its validation on the way back in.
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/snapshot_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FwpkmState;
using adapt::v1::StoreSpec;

const SnapshotChecks kCheck("fwpkm");

}  // namespace

absl::StatusOr<adapt::v1::StoreSnapshot> FwpkmStore::Snapshot() const {
  return SnapshotFromState(*this);
}

absl::Status FwpkmStore::WriteState(StateSink sink) const {
  absl::ReaderMutexLock lock(&mu_);
  const int64_t w = width(), n = keys_.n(), half = keys_.half();
  StoreStateOut state;
  *state.header.mutable_spec() = spec_;
  FwpkmState* s = state.header.mutable_fwpkm();
  s->set_key_dim(static_cast<uint32_t>(key_dim_));
  s->set_columns(static_cast<uint32_t>(w));
  s->set_dim(static_cast<uint32_t>(dim_));
  s->set_sub_keys(static_cast<uint32_t>(n));
  // The fill functions run inside `sink`, under this lock; they read through these references.
  // The lock analysis cannot see that a lambda runs while the lock is held, so they are not
  // analysed.
  const FwpkmSubKeys& keys = keys_;
  const FwpkmValues& values = values_;
  for (int m = 0; m < 2; ++m) {
    state.Add<float>(m == 0 ? "sub_keys_1" : "sub_keys_2", n * half,
                     [&keys, m, n, half](ArrayWriter<float>& out) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                       for (int i = 0; i < n; ++i) {
                         for (int c = 0; c < half; ++c) out.Put(keys.at(m, i, c));
                       }
                     });
  }
  state.Add<uint32_t>("slots", values.rows(),
                      [&values](ArrayWriter<uint32_t>& out) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                        for (int64_t r = 0; r < values.rows(); ++r) out.Put(values.slot_of(r));
                      });
  state.Add<float>("values", values.rows() * w,
                   [&values, w](ArrayWriter<float>& out) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                     std::vector<float> row(w);
                     for (int64_t r = 0; r < values.rows(); ++r) {
                       values.Get(r, row.data());
                       out.Put(row.data(), w);
                     }
                   });
  for (const std::string& name : *label_names_) s->add_labels(name);
  state.AddCopy<float>("pending_queries", queue_.queries);
  s->mutable_pending_labels()->Add(queue_.labels.begin(), queue_.labels.end());
  state.AddCopy<float>("pending_targets", queue_.targets);
  s->mutable_carry_query()->Add(carry_.begin(), carry_.end());
  s->set_version(version_);
  s->set_chunks(chunks_);
  s->set_examples(examples_);
  s->set_prequential_evaluated(prequential_.evaluated);
  s->set_prequential_correct(prequential_.correct);
  s->set_prequential_loss_sum(prequential_.loss_sum);
  s->mutable_usage_1()->Add(usage_[0].begin(), usage_[0].end());
  s->mutable_usage_2()->Add(usage_[1].begin(), usage_[1].end());
  return sink(state);
}

absl::StatusOr<std::unique_ptr<FwpkmStore>> FwpkmStore::Restore(const StoreSpec& spec,
                                                                const FwpkmState& s,
                                                                const StateArrays& arrays,
                                                                kernels::Backend* backend) {
  const adapt::v1::FwpkmParams& p = spec.fwpkm();
  const bool labels = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS;
  const bool next = spec.output().kind() == adapt::v1::OutputSpec::KIND_NEXT;
  if (s.sub_keys() != p.sub_keys())
    return kCheck.Bad("sub_keys", "differs from spec.fwpkm.sub_keys");
  if (s.key_dim() != p.key_dim()) return kCheck.Bad("key_dim", "differs from spec.fwpkm.key_dim");
  if (s.dim() > kMaxStoreDim || (spec.dim() != 0 && s.dim() != spec.dim())) {
    return kCheck.Bad("dim", absl::StrCat(s.dim(), " does not match the spec's ", spec.dim()));
  }
  const uint64_t n = s.sub_keys(), half = s.key_dim() / 2;
  const uint64_t columns = labels ? s.labels_size() : (next ? s.dim() : spec.output().dim());
  if (s.columns() != columns) {
    return kCheck.Bad("columns", absl::StrCat(s.columns(), ", expected ", columns));
  }
  if (s.labels_size() > 0 && !labels) return kCheck.Bad("labels", "only label stores hold labels");
  if (static_cast<uint64_t>(s.labels_size()) > p.max_labels()) {
    return kCheck.Bad("labels", "more than spec.fwpkm.max_labels");
  }
  RETURN_IF_ERROR(kCheck.Labels(s.labels()));
  const ArrayView<float> sub_keys[2] = {arrays.Get("sub_keys_1", s.sub_keys_1()),
                                        arrays.Get("sub_keys_2", s.sub_keys_2())};
  RETURN_IF_ERROR(kCheck.Size(sub_keys[0], n * half, "sub_keys_1"));
  RETURN_IF_ERROR(kCheck.Size(sub_keys[1], n * half, "sub_keys_2"));
  RETURN_IF_ERROR(kCheck.Finite(sub_keys[0], "sub_keys_1"));
  RETURN_IF_ERROR(kCheck.Finite(sub_keys[1], "sub_keys_2"));
  const ArrayView<uint32_t> slots = arrays.Get("slots", s.slots());
  const ArrayView<float> values = arrays.Get("values", s.values());
  RETURN_IF_ERROR(kCheck.FiniteOfSize(values, slots.size() * columns, "values"));
  std::vector<bool> seen(n * n);
  for (uint64_t r = 0; r < slots.size(); ++r) {
    const uint32_t slot = slots[r];
    if (slot >= n * n || seen[slot]) {
      return kCheck.Bad("slots", absl::StrCat("slot ", slot, " repeated or not below ", n * n));
    }
    seen[slot] = true;
  }
  const ArrayView<float> queries = arrays.Get("pending_queries", s.pending_queries());
  const ArrayView<float> targets = arrays.Get("pending_targets", s.pending_targets());
  const uint64_t kd = s.key_dim();
  if (queries.size() % kd != 0) return kCheck.Bad("pending_queries", "not whole queries");
  const uint64_t items = queries.size() / kd;
  if (items >= p.chunk()) return kCheck.Bad("pending_queries", "a full chunk was never applied");
  RETURN_IF_ERROR(kCheck.Finite(queries, "pending_queries"));
  RETURN_IF_ERROR(kCheck.Size(s.pending_labels(), labels ? items : 0, "pending_labels"));
  for (int32_t c : s.pending_labels()) {
    if (c < 0 || c >= s.labels_size()) return kCheck.Bad("pending_labels", "a column out of range");
  }
  RETURN_IF_ERROR(kCheck.FiniteOfSize(targets, labels ? 0 : items * columns, "pending_targets"));
  if (s.carry_query_size() != 0 && (!next || s.carry_query_size() != static_cast<int>(kd))) {
    return kCheck.Bad("carry_query", "only a next store carries one query");
  }
  RETURN_IF_ERROR(kCheck.Finite(s.carry_query(), "carry_query"));
  RETURN_IF_ERROR(kCheck.Size(s.usage_1(), n, "usage_1"));
  RETURN_IF_ERROR(kCheck.Size(s.usage_2(), n, "usage_2"));
  if (s.dim() == 0 && (slots.size() > 0 || items > 0 || s.version() > 0)) {
    return kCheck.Bad("dim", "0 while the store holds state");
  }

  StoreSpec with_dim = spec;
  with_dim.set_dim(s.dim());
  auto store = std::make_unique<FwpkmStore>(with_dim, backend);
  absl::WriterMutexLock lock(&store->mu_);
  for (int m = 0; m < 2; ++m) {
    for (uint64_t i = 0; i < n; ++i) {
      for (uint64_t c = 0; c < half; ++c) store->keys_.at(m, i, c) = sub_keys[m][i * half + c];
    }
  }
  store->values_.Widen(static_cast<int64_t>(columns));
  std::vector<float> row(columns);
  for (uint64_t r = 0; r < slots.size(); ++r) {
    values.CopyTo(r * columns, columns, row.data());
    store->values_.Set(store->values_.Touch(slots[r]), row.data());
  }
  for (int i = 0; i < s.labels_size(); ++i) store->label_index_.emplace(s.labels(i), i);
  store->label_names_ =
      std::make_shared<const std::vector<std::string>>(s.labels().begin(), s.labels().end());
  FwpkmQueue& q = store->queue_;
  q.items = static_cast<int64_t>(items);
  q.queries = queries.ToVector();
  q.labels.assign(s.pending_labels().begin(), s.pending_labels().end());
  q.targets = targets.ToVector();
  store->carry_.assign(s.carry_query().begin(), s.carry_query().end());
  store->usage_[0].assign(s.usage_1().begin(), s.usage_1().end());
  store->usage_[1].assign(s.usage_2().begin(), s.usage_2().end());
  store->version_ = s.version();
  store->chunks_ = s.chunks();
  store->examples_ = s.examples();
  store->prequential_ = {s.prequential_evaluated(), s.prequential_correct(),
                         s.prequential_loss_sum()};
  return store;
}

absl::StatusOr<std::unique_ptr<Store>> RestoreFwpkmStore(const adapt::v1::StoreSnapshot& snapshot,
                                                         const StateArrays& arrays,
                                                         kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFwpkmSpec(snapshot.spec()));
  if (snapshot.state_case() != adapt::v1::StoreSnapshot::kFwpkm) {
    return absl::InvalidArgumentError("snapshot.fwpkm: missing for an fwpkm store");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FwpkmStore> store,
                   FwpkmStore::Restore(normalized, snapshot.fwpkm(), arrays, backend));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace adaptd
