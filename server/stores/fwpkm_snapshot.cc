// FwpkmStore::Snapshot and FwpkmStore::Restore: the store's whole state as FwpkmState
// (fwpkm_state.proto), and its validation on the way back in.
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/core/status_macros.h"
#include "server/stores/fwpkm_params.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/snapshot_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FwpkmState;
using adapt::v1::StoreSpec;

constexpr uint64_t kMaxSnapshotBytes = (uint64_t{1} << 31) - (uint64_t{1} << 24);

const SnapshotChecks kCheck("fwpkm");

}  // namespace

absl::StatusOr<adapt::v1::StoreSnapshot> FwpkmStore::Snapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  const int64_t w = width(), n = keys_.n(), half = keys_.half();
  const uint64_t floats = values_.rows() * (w + 1) + 2 * n * half + queue_.queries.size() +
                          queue_.targets.size() + queue_.labels.size() + 4 * n;
  if (floats * sizeof(float) > kMaxSnapshotBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the store's state needs about ", floats * sizeof(float), " bytes, more than the ",
        kMaxSnapshotBytes, " a snapshot can hold (", values_.rows(), " rows of width ", w, ")"));
  }
  adapt::v1::StoreSnapshot snapshot;
  *snapshot.mutable_spec() = spec_;
  FwpkmState* s = snapshot.mutable_fwpkm();
  s->set_key_dim(static_cast<uint32_t>(key_dim_));
  s->set_columns(static_cast<uint32_t>(w));
  s->set_dim(static_cast<uint32_t>(dim_));
  s->set_sub_keys(static_cast<uint32_t>(n));
  for (int m = 0; m < 2; ++m) {
    auto* out = m == 0 ? s->mutable_sub_keys_1() : s->mutable_sub_keys_2();
    out->Reserve(static_cast<int>(n * half));
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < half; ++c) out->Add(keys_.at(m, i, c));
    }
  }
  std::vector<float> row(w);
  s->mutable_values()->Reserve(static_cast<int>(values_.rows() * w));
  for (int64_t r = 0; r < values_.rows(); ++r) {
    s->add_slots(values_.slot_of(r));
    values_.Get(r, row.data());
    s->mutable_values()->Add(row.begin(), row.end());
  }
  for (const std::string& name : *label_names_) s->add_labels(name);
  s->mutable_pending_queries()->Add(queue_.queries.begin(), queue_.queries.end());
  s->mutable_pending_labels()->Add(queue_.labels.begin(), queue_.labels.end());
  s->mutable_pending_targets()->Add(queue_.targets.begin(), queue_.targets.end());
  s->mutable_carry_query()->Add(carry_.begin(), carry_.end());
  s->set_version(version_);
  s->set_chunks(chunks_);
  s->set_examples(examples_);
  s->set_prequential_evaluated(prequential_.evaluated);
  s->set_prequential_correct(prequential_.correct);
  s->set_prequential_loss_sum(prequential_.loss_sum);
  s->mutable_usage_1()->Add(usage_[0].begin(), usage_[0].end());
  s->mutable_usage_2()->Add(usage_[1].begin(), usage_[1].end());
  return snapshot;
}

absl::StatusOr<std::unique_ptr<FwpkmStore>> FwpkmStore::Restore(const StoreSpec& spec,
                                                                const FwpkmState& s,
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
  RETURN_IF_ERROR(kCheck.Size(s.sub_keys_1(), n * half, "sub_keys_1"));
  RETURN_IF_ERROR(kCheck.Size(s.sub_keys_2(), n * half, "sub_keys_2"));
  RETURN_IF_ERROR(kCheck.Finite(s.sub_keys_1(), "sub_keys_1"));
  RETURN_IF_ERROR(kCheck.Finite(s.sub_keys_2(), "sub_keys_2"));
  RETURN_IF_ERROR(kCheck.Size(s.values(), s.slots_size() * columns, "values"));
  RETURN_IF_ERROR(kCheck.Finite(s.values(), "values"));
  absl::flat_hash_set<uint32_t> slots;
  for (uint32_t slot : s.slots()) {
    if (slot >= n * n || !slots.insert(slot).second) {
      return kCheck.Bad("slots", absl::StrCat("slot ", slot, " repeated or not below ", n * n));
    }
  }
  const uint64_t kd = s.key_dim();
  if (s.pending_queries_size() % kd != 0) return kCheck.Bad("pending_queries", "not whole queries");
  const uint64_t items = s.pending_queries_size() / kd;
  if (items >= p.chunk()) return kCheck.Bad("pending_queries", "a full chunk was never applied");
  RETURN_IF_ERROR(kCheck.Finite(s.pending_queries(), "pending_queries"));
  RETURN_IF_ERROR(kCheck.Size(s.pending_labels(), labels ? items : 0, "pending_labels"));
  for (int32_t c : s.pending_labels()) {
    if (c < 0 || c >= s.labels_size()) return kCheck.Bad("pending_labels", "a column out of range");
  }
  RETURN_IF_ERROR(
      kCheck.Size(s.pending_targets(), labels ? 0 : items * columns, "pending_targets"));
  RETURN_IF_ERROR(kCheck.Finite(s.pending_targets(), "pending_targets"));
  if (s.carry_query_size() != 0 && (!next || s.carry_query_size() != static_cast<int>(kd))) {
    return kCheck.Bad("carry_query", "only a next store carries one query");
  }
  RETURN_IF_ERROR(kCheck.Finite(s.carry_query(), "carry_query"));
  RETURN_IF_ERROR(kCheck.Size(s.usage_1(), n, "usage_1"));
  RETURN_IF_ERROR(kCheck.Size(s.usage_2(), n, "usage_2"));
  if (s.dim() == 0 && (s.slots_size() > 0 || items > 0 || s.version() > 0)) {
    return kCheck.Bad("dim", "0 while the store holds state");
  }

  StoreSpec with_dim = spec;
  with_dim.set_dim(s.dim());
  auto store = std::make_unique<FwpkmStore>(with_dim, backend);
  absl::WriterMutexLock lock(&store->mu_);
  for (int m = 0; m < 2; ++m) {
    const auto& src = m == 0 ? s.sub_keys_1() : s.sub_keys_2();
    for (uint64_t i = 0; i < n; ++i) {
      for (uint64_t c = 0; c < half; ++c) store->keys_.at(m, i, c) = src[i * half + c];
    }
  }
  store->values_.Widen(static_cast<int64_t>(columns));
  for (int r = 0; r < s.slots_size(); ++r) {
    store->values_.Set(store->values_.Touch(s.slots(r)), s.values().data() + r * columns);
  }
  for (int i = 0; i < s.labels_size(); ++i) store->label_index_.emplace(s.labels(i), i);
  store->label_names_ =
      std::make_shared<const std::vector<std::string>>(s.labels().begin(), s.labels().end());
  FwpkmQueue& q = store->queue_;
  q.items = static_cast<int64_t>(items);
  q.queries.assign(s.pending_queries().begin(), s.pending_queries().end());
  q.labels.assign(s.pending_labels().begin(), s.pending_labels().end());
  q.targets.assign(s.pending_targets().begin(), s.pending_targets().end());
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
                                                         kernels::Backend* backend) {
  if (backend == nullptr) return absl::InvalidArgumentError("no compute backend given");
  ASSIGN_OR_RETURN(StoreSpec normalized, NormalizeFwpkmSpec(snapshot.spec()));
  if (snapshot.state_case() != adapt::v1::StoreSnapshot::kFwpkm) {
    return absl::InvalidArgumentError("snapshot.fwpkm: missing for an fwpkm store");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FwpkmStore> store,
                   FwpkmStore::Restore(normalized, snapshot.fwpkm(), backend));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace adaptd
