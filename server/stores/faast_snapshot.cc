#include "server/stores/faast_snapshot.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/base/status_macros.h"
#include "server/stores/faast_params.h"
#include "server/stores/snapshot_checks.h"

namespace adaptd {
namespace {

using adapt::v1::FaastState;
using adapt::v1::StoreSpec;

const SnapshotChecks kCheck("faast");

absl::Status ReadLabels(const FaastState& state, const StoreSpec& spec, FaastPersistent* out) {
  const bool labels = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS;
  const bool embedded = labels && !spec.output().label_encoder().empty();
  if (!embedded && !state.label_vectors().empty()) {
    return kCheck.Bad("label_vectors", "present for a store without a label encoder");
  }
  if (embedded) {
    const uint32_t p = spec.output().label_dim();
    if (state.columns() != p) {
      return kCheck.Bad("columns",
                        absl::StrCat(state.columns(), " does not match spec.output.label_dim ", p));
    }
    RETURN_IF_ERROR(
        kCheck.Size(state.label_vectors(), int64_t{state.labels_size()} * p, "label_vectors"));
    RETURN_IF_ERROR(kCheck.Finite(state.label_vectors(), "label_vectors"));
    out->label_vectors.assign(state.label_vectors().begin(), state.label_vectors().end());
  } else if (!labels) {
    if (state.columns() != spec.output().dim()) {
      return kCheck.Bad(
          "columns",
          absl::StrCat(state.columns(), " does not match the output width ", spec.output().dim()));
    }
    if (state.labels_size() != 0) return kCheck.Bad("labels", "must be empty for a vector store");
    return absl::OkStatus();
  }
  if (!embedded && state.columns() != static_cast<uint32_t>(state.labels_size())) {
    return kCheck.Bad("columns", absl::StrCat(state.columns(), " does not match the ",
                                              state.labels_size(), " labels"));
  }
  if (state.labels_size() > static_cast<int>(spec.faast().max_labels())) {
    return kCheck.Bad("labels",
                      absl::StrCat("holds ", state.labels_size(), " labels, more than ",
                                   "spec.faast.max_labels = ", spec.faast().max_labels()));
  }
  RETURN_IF_ERROR(kCheck.Labels(state.labels()));
  out->labels.assign(state.labels().begin(), state.labels().end());
  return absl::OkStatus();
}

absl::Status ReadMatrices(const FaastState& state, const StateArrays& arrays, FaastStatistics* st) {
  const int64_t d = st->dim, m = st->columns;
  const ArrayView<double> whole = arrays.Get("g", state.g());
  const ArrayView<double> upper = arrays.Get("g_upper", state.g_upper());
  const ArrayView<double> c = arrays.Get("c", state.c());
  if (!whole.empty() && !upper.empty()) return kCheck.Bad("g_upper", "is present beside g");
  const bool packed = !upper.empty();  // written since G is stored as its upper triangle
  const ArrayView<double>& g = packed ? upper : whole;
  const char* const g_name = packed ? "g_upper" : "g";
  RETURN_IF_ERROR(kCheck.Finite(g, g_name));
  RETURN_IF_ERROR(kCheck.Finite(c, "c"));
  if (g.empty() != c.empty() && m > 0) {
    return kCheck.Bad("c", "g and c must both be present or both be empty");
  }
  if (g.empty()) {
    if (state.examples() != 0 || state.weighted_examples() != 0 || (st->labels && m > 0)) {
      return kCheck.Bad("g", "is empty but the store holds examples or labels");
    }
    return absl::OkStatus();
  }
  if (d == 0) return kCheck.Bad(g_name, "present while dim is 0");
  RETURN_IF_ERROR(kCheck.Size(g, packed ? d * (d + 1) / 2 : d * d, g_name));
  RETURN_IF_ERROR(kCheck.Size(c, d * m, "c"));
  st->Allocate(d);
  if (packed) {
    uint64_t k = 0;
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = i; j < d; ++j) st->g[i * d + j] = g[k++];
    }
  } else {  // G whole: it must be symmetric; its upper triangle is kept
    double scale = 0;
    for (uint64_t i = 0; i < g.size(); ++i) scale = std::max(scale, std::abs(g[i]));
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = i; j < d; ++j) {
        const double a = g[i * d + j], b = g[j * d + i];
        if (std::abs(a - b) > 1e-12 * scale) {
          return kCheck.Bad("g", absl::StrCat("is not symmetric at (", i, ", ", j, ")"));
        }
        st->g[i * d + j] = a;
      }
    }
  }
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < m; ++j) st->ct[j * d + i] = c[i * m + j];
  }
  return absl::OkStatus();
}

absl::Status ReadRaw(const FaastState& state, const StoreSpec& spec, const StateArrays& arrays,
                     FaastStatistics* st) {
  const ArrayView<double> keys = arrays.Get("raw_keys", state.raw_keys());
  const ArrayView<double> targets = arrays.Get("raw_targets", state.raw_targets());
  st->raw_kept = state.raw_kept();
  if (!state.raw_kept()) {
    if (!keys.empty() || !targets.empty() || !state.raw_weights().empty()) {
      return kCheck.Bad("raw_keys", "raw pairs present while raw_kept is false");
    }
    return absl::OkStatus();
  }
  if (!spec.faast().few_shot())
    return kCheck.Bad("raw_kept", "set while spec.faast.few_shot is false");
  const int64_t rows = state.raw_weights_size(), d = st->dim, m = st->columns;
  if (static_cast<uint64_t>(rows) != state.examples()) {
    return kCheck.Bad("raw_weights",
                      absl::StrCat("has ", rows, " pairs for ", state.examples(), " examples"));
  }
  if (rows > 0 && rows >= d) {
    return kCheck.Bad("raw_kept",
                      absl::StrCat("raw pairs kept with ", rows, " examples >= dim ", d));
  }
  RETURN_IF_ERROR(kCheck.Size(keys, rows * d, "raw_keys"));
  RETURN_IF_ERROR(kCheck.Size(targets, rows * m, "raw_targets"));
  RETURN_IF_ERROR(kCheck.Finite(keys, "raw_keys"));
  RETURN_IF_ERROR(kCheck.Finite(targets, "raw_targets"));
  RETURN_IF_ERROR(kCheck.Finite(state.raw_weights(), "raw_weights"));
  FaastRawPairs& raw = st->raw;
  raw.rows = rows;
  raw.keys = keys.ToVector();
  raw.weights.assign(state.raw_weights().begin(), state.raw_weights().end());
  for (int64_t r = 0; r < rows; ++r) {
    if (!(raw.weights[r] > 0))
      return kCheck.Bad("raw_weights", absl::StrCat("entry ", r, " is not > 0"));
  }
  if (!st->labels) {
    raw.targets = targets.ToVector();
    return absl::OkStatus();
  }
  for (int64_t r = 0; r < rows; ++r) {
    int32_t hot = -1, ones = 0;
    for (int64_t j = 0; j < m; ++j) {
      const double v = targets[r * m + j];
      if (v == 1.0) {
        hot = static_cast<int32_t>(j);
        ++ones;
      } else if (v != 0.0) {
        ones = 2;
      }
    }
    if (ones != 1) return kCheck.Bad("raw_targets", absl::StrCat("row ", r, " is not one-hot"));
    raw.label_ids.push_back(hot);
  }
  return absl::OkStatus();
}

// A base's read-out (FaastState.prior), checked against the shape already read.
absl::Status ReadPrior(const FaastState& state, const StoreSpec& spec, const StateArrays& arrays,
                       FaastStatistics* st) {
  const ArrayView<double> s = arrays.Get("prior.s", state.prior().s());
  if (!state.has_prior()) {
    if (!spec.base().empty()) return kCheck.Bad("prior", "missing for a store with spec.base");
    return absl::OkStatus();
  }
  if (state.prior().base_version() == 0) return kCheck.Bad("prior.base_version", "must be >= 1");
  if (st->dim == 0) return kCheck.Bad("prior", "present while dim is 0");
  const int64_t d = st->dim, m = st->columns;
  RETURN_IF_ERROR(kCheck.FiniteOfSize(s, d * m, "prior.s"));
  st->Allocate(d);
  st->prior_version = state.prior().base_version();
  st->prior_t.assign(m * d, 0.0);
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < m; ++j) st->prior_t[j * d + i] = s[i * m + j];
  }
  return absl::OkStatus();
}

// The published read-out, checked against the labels and statistics already read.
absl::Status ReadPublished(const FaastState& state, const StoreSpec& spec,
                           const StateArrays& arrays, FaastPersistent* out) {
  if (!state.has_published()) return absl::OkStatus();
  const FaastState::Published& p = state.published();
  if (state.version() == 0) return kCheck.Bad("published", "present while version is 0");
  const int64_t d = state.dim();
  const bool labels = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS;
  const bool embedded = labels && !spec.output().label_encoder().empty();
  const int64_t width = embedded ? spec.output().label_dim() : spec.output().dim();
  if (labels && p.labels() > static_cast<uint32_t>(state.labels_size())) {
    return kCheck.Bad("published.labels", absl::StrCat(p.labels(), " is more than the ",
                                                       state.labels_size(), " labels"));
  }
  if (!labels && p.labels() != 0) {
    return kCheck.Bad("published.labels", "must be 0 for a vector store");
  }
  const bool one_hot = labels && !embedded;
  const int64_t expected = one_hot ? int64_t{p.labels()} : width;
  if (p.columns() != expected) {
    return kCheck.Bad("published.columns",
                      absl::StrCat(p.columns(), " does not match ",
                                   one_hot ? "published.labels " : "the output width ", expected));
  }
  const ArrayView<double> s = arrays.Get("published.s", p.s());
  RETURN_IF_ERROR(kCheck.FiniteOfSize(s, d * p.columns(), "published.s"));
  const adapt::v1::FaastStats& c = p.compile();
  for (const auto& [value, field] :
       {std::pair<double, const char*>{c.compiled_examples(),
                                       "published.compile.compiled_examples"},
        {c.cutoff(), "published.compile.cutoff"},
        {c.compile_seconds(), "published.compile.compile_seconds"}}) {
    if (!(value >= 0) || !std::isfinite(value)) return kCheck.Bad(field, "is not finite and >= 0");
  }
  if (!(c.condition_number() >= 0)) {
    return kCheck.Bad("published.compile.condition_number", "is not >= 0");
  }
  if (c.effective_rank() > d) {
    return kCheck.Bad("published.compile.effective_rank",
                      absl::StrCat(c.effective_rank(), " is more than dim ", d));
  }
  FaastPublishedState& published = out->published.emplace();
  published.columns = p.columns();
  published.labels = p.labels();
  published.s = s.ToVector();
  published.compile = c;
  published.compile.clear_pending_examples();
  return absl::OkStatus();
}

}  // namespace

void PublishedToState(const FaastWeights* weights, const adapt::v1::FaastStats& compile,
                      StoreStateOut* out) {
  if (weights == nullptr) return;
  FaastState::Published* p = out->header.mutable_faast()->mutable_published();
  p->set_columns(static_cast<uint32_t>(weights->columns));
  if (weights->labels && weights->label_names != nullptr) {
    p->set_labels(static_cast<uint32_t>(weights->label_names->size()));
  }
  out->AddCopy<double>("published.s", weights->s);
  *p->mutable_compile() = compile;
  p->mutable_compile()->clear_pending_examples();
}

void FaastStateToState(const FaastStatistics& st, const std::vector<std::string>& labels,
                       uint64_t version, const PrequentialStats& prequential,
                       StoreStateOut* state) {
  FaastState& out = *state->header.mutable_faast();
  const int64_t d = st.dim, m = st.columns;
  out.set_dim(static_cast<uint32_t>(d));
  out.set_columns(static_cast<uint32_t>(m));
  for (const std::string& l : labels) out.add_labels(l);
  out.set_weighted_examples(st.weighted_examples);
  out.set_examples(st.examples);
  if (!st.g.empty()) {
    // G's upper triangle (the store keeps no other half); C from Cᵀ.
    state->Add<double>("g_upper", d * (d + 1) / 2, [&st, d](ArrayWriter<double>& w) {
      for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = i; j < d; ++j) w.Put(st.g[i * d + j]);
      }
    });
    state->Add<double>("c", d * m, [&st, d, m](ArrayWriter<double>& w) {
      for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = 0; j < m; ++j) w.Put(st.ct[j * d + i]);
      }
    });
  }
  out.set_raw_kept(st.raw_kept);
  if (st.raw_kept) {
    const FaastRawPairs& raw = st.raw;
    state->AddCopy<double>("raw_keys", raw.keys);
    out.mutable_raw_weights()->Add(raw.weights.begin(), raw.weights.end());
    if (st.labels) {
      state->Add<double>("raw_targets", raw.rows * m, [&raw, m](ArrayWriter<double>& w) {
        for (int64_t r = 0; r < raw.rows; ++r) {
          for (int64_t j = 0; j < m; ++j) w.Put(j == raw.label_ids[r] ? 1.0 : 0.0);
        }
      });
    } else {
      state->AddCopy<double>("raw_targets", raw.targets);
    }
  }
  if (st.has_prior()) {
    FaastState::Prior* prior = out.mutable_prior();
    prior->set_base_version(st.prior_version);
    state->Add<double>("prior.s", d * m, [&st, d, m](ArrayWriter<double>& w) {
      for (int64_t i = 0; i < d; ++i) {
        for (int64_t j = 0; j < m; ++j) w.Put(st.prior_t[j * d + i]);
      }
    });
  }
  out.set_version(version);
  out.set_prequential_evaluated(prequential.evaluated);
  out.set_prequential_correct(prequential.correct);
  out.set_prequential_loss_sum(prequential.loss_sum);
}

absl::Status FaastStateFromProto(const FaastState& state, const StoreSpec& spec,
                                 FaastPersistent* out, const StateArrays& arrays) {
  FaastStatistics& st = out->stats;
  st.labels = spec.output().kind() == adapt::v1::OutputSpec::KIND_LABELS &&
              spec.output().label_encoder().empty();
  if (state.dim() > kMaxStoreDim) {
    return kCheck.Bad("dim", absl::StrCat("must be at most ", kMaxStoreDim, ", got ", state.dim()));
  }
  if (spec.dim() != 0 && state.dim() != spec.dim()) {
    return kCheck.Bad("dim", absl::StrCat(state.dim(), " does not match spec.dim ", spec.dim()));
  }
  if (state.dim() == 0 && (state.examples() != 0 || state.version() != 0)) {
    return kCheck.Bad("dim", "is 0 but the store holds examples or a version");
  }
  RETURN_IF_ERROR(ReadLabels(state, spec, out));
  st.dim = state.dim();
  st.columns = state.columns();
  if (!std::isfinite(state.weighted_examples())) {
    return kCheck.Bad("weighted_examples", "is not finite");
  }
  st.weighted_examples = state.weighted_examples();
  st.examples = state.examples();
  RETURN_IF_ERROR(ReadMatrices(state, arrays, &st));
  RETURN_IF_ERROR(ReadRaw(state, spec, arrays, &st));
  if (state.prequential_correct() > state.prequential_evaluated() ||
      !(state.prequential_loss_sum() >= 0) || !std::isfinite(state.prequential_loss_sum())) {
    return kCheck.Bad("prequential_correct", "prequential totals do not hold together");
  }
  RETURN_IF_ERROR(ReadPrior(state, spec, arrays, &st));
  RETURN_IF_ERROR(ReadPublished(state, spec, arrays, out));
  out->pending = state.pending_examples();
  out->version = state.version();
  out->prequential.evaluated = state.prequential_evaluated();
  out->prequential.correct = state.prequential_correct();
  out->prequential.loss_sum = state.prequential_loss_sum();
  return absl::OkStatus();
}

}  // namespace adaptd
