#include "server/stores/falcon_snapshot.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/stores/falcon_params.h"
#include "server/stores/snapshot_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FalconState;
using adapt::v1::OutputSpec;

const SnapshotChecks kCheck("falcon");

absl::Status ReadDoubles(const ArrayView<double>& in, int64_t expected, absl::string_view field,
                         std::vector<double>* out) {
  if (absl::Status s = kCheck.FiniteOfSize(in, expected, field); !s.ok()) return s;
  *out = in.ToVector();
  return absl::OkStatus();
}

}  // namespace

void FalconStateToState(const FalconVersion& v, StoreStateOut* state) {
  FalconState& p = *state->header.mutable_falcon();
  const FalconMemory& mem = v.memory;
  p.set_dim(static_cast<uint32_t>(mem.dim));
  p.set_columns(static_cast<uint32_t>(mem.columns));
  for (const std::string& name : *v.labels) p.add_labels(name);
  state->AddCopy<double>("s", mem.s);
  p.mutable_last_key()->Add(v.last_key.begin(), v.last_key.end());
  p.set_history(static_cast<uint32_t>(mem.history));
  state->AddCopy<double>("history_keys", mem.history_keys);
  state->AddCopy<double>("history_targets", mem.history_targets);
  p.set_examples(v.examples);
  p.set_steps(static_cast<uint64_t>(mem.steps));
  p.set_version(v.version);
  p.set_prequential_evaluated(v.prequential.evaluated);
  p.set_prequential_correct(v.prequential.correct);
  p.set_prequential_loss_sum(v.prequential.loss_sum);
  p.set_residual_norm(v.residual_norm);
  p.set_residual_norm_avg(v.residual_norm_avg);
}

absl::Status FalconStateFromProto(const FalconState& p, const adapt::v1::StoreSpec& spec,
                                  FalconVersion* out, const StateArrays& arrays) {
  const OutputSpec::Kind kind = spec.output().kind();
  const int64_t dim = p.dim(), columns = p.columns();
  if (spec.dim() != 0 && dim != 0 && dim != spec.dim()) {
    return kCheck.Bad("dim", absl::StrCat(dim, " does not match spec.dim ", spec.dim()));
  }
  if (dim > kMaxStoreDim) return kCheck.Bad("dim", absl::StrCat("must be at most ", kMaxStoreDim));
  if (kind == OutputSpec::KIND_LABELS) {
    if (columns != p.labels_size()) {
      return kCheck.Bad("columns",
                        absl::StrCat(columns, " columns for ", p.labels_size(), " labels"));
    }
    if (columns > kFalconMaxLabels) {
      return kCheck.Bad("labels", absl::StrCat("more than ", kFalconMaxLabels, " labels"));
    }
    if (absl::Status s = kCheck.Labels(p.labels()); !s.ok()) return s;
  } else {
    if (p.labels_size() != 0) return kCheck.Bad("labels", "only label stores hold labels");
    const int64_t want = dim == 0 ? 0 : (kind == OutputSpec::KIND_NEXT ? dim : spec.output().dim());
    if (columns != want) {
      return kCheck.Bad("columns", absl::StrCat("is ", columns, ", expected ", want));
    }
  }
  if (dim == 0 && (columns != 0 || p.examples() != 0)) {
    return kCheck.Bad("dim", "is 0 but the state holds columns or examples");
  }
  FalconVersion v;
  v.spec = spec;
  if (dim != 0) v.spec.set_dim(static_cast<uint32_t>(dim));
  FalconMemory& mem = v.memory;
  mem.Reset(dim, columns);
  absl::Status s = ReadDoubles(arrays.Get("s", p.s()), dim * columns, "s", &mem.s);
  if (!s.ok()) return s;
  const int64_t window = FalconConfigOf(spec.falcon()).window;
  if (p.history() > window - 1 || (dim == 0 && p.history() != 0)) {
    return kCheck.Bad("history",
                      absl::StrCat(p.history(), " pairs; the window keeps at most ", window - 1));
  }
  mem.history = p.history();
  s = ReadDoubles(arrays.Get("history_keys", p.history_keys()), mem.history * dim, "history_keys",
                  &mem.history_keys);
  if (!s.ok()) return s;
  s = ReadDoubles(arrays.Get("history_targets", p.history_targets()), mem.history * columns,
                  "history_targets", &mem.history_targets);
  if (!s.ok()) return s;
  if (p.last_key_size() != 0) {
    if (kind != OutputSpec::KIND_NEXT) return kCheck.Bad("last_key", "only next stores keep one");
    s = ReadDoubles(arrays.Get("last_key", p.last_key()), dim, "last_key", &v.last_key);
    if (!s.ok()) return s;
  }
  // Every pair is an example (a next store's first item is an example without a pair).
  if (p.steps() > p.examples()) {
    return kCheck.Bad("steps", absl::StrCat(p.steps(), " pairs from ", p.examples(), " examples"));
  }
  if (p.prequential_correct() > p.prequential_evaluated()) {
    return kCheck.Bad("prequential_correct", "exceeds prequential_evaluated");
  }
  for (double x : {p.prequential_loss_sum(), p.residual_norm(), p.residual_norm_avg()}) {
    if (!std::isfinite(x) || x < 0) return kCheck.Bad("statistics", "must be finite and >= 0");
  }
  v.labels = std::make_shared<const std::vector<std::string>>(p.labels().begin(), p.labels().end());
  v.examples = p.examples();
  mem.steps = static_cast<int64_t>(p.steps());
  v.version = p.version();
  v.prequential.evaluated = p.prequential_evaluated();
  v.prequential.correct = p.prequential_correct();
  v.prequential.loss_sum = p.prequential_loss_sum();
  v.residual_norm = p.residual_norm();
  v.residual_norm_avg = p.residual_norm_avg();
  *out = std::move(v);
  return absl::OkStatus();
}

}  // namespace adaptd
