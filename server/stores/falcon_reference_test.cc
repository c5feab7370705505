// FalconStore against the independent float64 model of falcon_reference.h, through the Store
// interface only (Begin/Add/Commit, Predict, Describe, Snapshot): every variant on random
// streams with tiny and huge keys, zero and repeated keys, ridge and scale-coupled ridge, a
// clamped decay, the three key normalisations, windows for 3 and 3A, per-column β, and
// vector, label and next outputs, over several commits that cross the ingest's chunks.
//
// Tolerances: the store ingests with the chunk-parallel form, which equals the recurrence to
// about 1e-15 per step in float64 (ALGORITHMS.md section 2); over a few hundred steps S must
// agree to 1e-9 relative (Frobenius), the prequential loss to 1e-8 relative. A wrong rule
// (a missing decay, β on the wrong column, an off-by-one window) is off by 1e-3 or more.
// Predict answers in float: 1e-6 of the row's largest output.
#include "server/stores/falcon_reference.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "server/stores/faast_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;
using faast_test::Apply;
using faast_test::RelError;
using falcon_reference::Model;
using falcon_reference::Norm;
using falcon_reference::Rule;
using falcon_reference::Settings;

constexpr double kStateTol = 1e-9;
constexpr double kLossTol = 1e-8;
constexpr double kPredictTol = 1e-6;

struct Variant {
  FalconParams::Variant proto;
  Rule rule;
};
const Variant kVariants[] = {
    {FalconParams::VARIANT_1, Rule::k1},   {FalconParams::VARIANT_2, Rule::k2},
    {FalconParams::VARIANT_3, Rule::k3},   {FalconParams::VARIANT_1A, Rule::k1A},
    {FalconParams::VARIANT_2A, Rule::k2A}, {FalconParams::VARIANT_3A, Rule::k3A}};

bool Windowed(Rule r) { return r == Rule::k3 || r == Rule::k3A; }
bool PerColumn(Rule r) { return r == Rule::k2 || r == Rule::k2A; }

// One scenario: the spec's knobs and how its keys are drawn.
struct Case {
  const char* name;
  OutputSpec::Kind output = OutputSpec::KIND_VECTOR;
  int64_t d = 6, m = 3;
  std::vector<int64_t> commits = {70, 90};  // pairs (or items) per commit; 64 is a chunk
  double key_scale = 1.0;
  int distinct_keys = 0;   // > 0: keys drawn from this many, repeated
  bool zero_keys = false;  // every 7th key is zero
  double lambda = 0;       // unset when 0 (the default)
  bool scale_coupled = false;
  double eps_gamma = 0;  // unset when 0
  FalconParams::KeyNorm norm = FalconParams::KEY_NORM_UNSPECIFIED;
  std::vector<uint32_t> windows = {0};  // 0: the default; only for 3 and 3A
  bool per_column_beta = false;         // only for 2 and 2A
  double beta = 0;                      // unset when 0
  double half_life = 0;                 // β schedule; unset when 0
  double beta_min = 0;                  // unset when 0
  bool recommended = false;  // `variant` unset: the labels defaults (norm must be unspecified)
};

const Case kCases[] = {
    {.name = "plain"},
    {.name = "ridge_l2", .lambda = 0.3, .norm = FalconParams::KEY_NORM_L2, .windows = {1, 2, 7}},
    {.name = "coupled_rms",
     .key_scale = 1e6,
     .lambda = 0.05,
     .scale_coupled = true,
     .norm = FalconParams::KEY_NORM_RMS,
     .windows = {3, 64}},
    {.name = "huge_keys", .key_scale = 1e6, .lambda = 0.01},
    {.name = "tiny_keys", .key_scale = 1e-6, .beta = 0.5},
    {.name = "repeated_zero_keys",
     .distinct_keys = 5,
     .zero_keys = true,
     .lambda = 0.1,
     .norm = FalconParams::KEY_NORM_L2,
     .windows = {4, 9}},
    {.name = "clamped_decay",
     .lambda = 20,
     .scale_coupled = true,
     .eps_gamma = 0.05,
     .windows = {2}},
    {.name = "per_column_beta", .lambda = 0.2, .per_column_beta = true},
    {.name = "labels",
     .output = OutputSpec::KIND_LABELS,
     .d = 8,
     .m = 0,
     .commits = {50, 80, 30},
     .lambda = 0.1,
     .norm = FalconParams::KEY_NORM_L2,
     .windows = {0, 5}},
    {.name = "schedule",
     .commits = {70, 90, 5, 64},
     .lambda = 0.05,
     .windows = {0, 6},
     .half_life = 12,
     .beta_min = 0.08},
    {.name = "per_column_schedule",
     .key_scale = 1e3,
     .per_column_beta = true,
     .half_life = 5,
     .beta_min = 0.3},
    {.name = "next",
     .output = OutputSpec::KIND_NEXT,
     .d = 4,
     .m = 4,
     .commits = {1, 66, 40},
     .lambda = 0.05,
     .norm = FalconParams::KEY_NORM_RMS,
     .windows = {0, 3}},
};

// The spec and the reference's settings for one case, variant and window.
std::pair<adapt::v1::StoreSpec, Settings> Configure(const Case& c, const Variant& v,
                                                    uint32_t window) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FALCON);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(c.output);
  if (c.output == OutputSpec::KIND_VECTOR) spec.mutable_output()->set_dim(c.m);
  FalconParams* p = spec.mutable_falcon();
  p->set_variant(v.proto);
  p->set_key_norm(c.norm);
  Settings s;  // the defaults of ALGORITHMS.md / falcon_params.h, restated
  s.rule = v.rule;
  if (c.per_column_beta && PerColumn(v.rule)) {
    s.beta.clear();
    for (int64_t j = 0; j < c.m; ++j)
      s.beta.push_back(0.4 + 1.1 * j / std::max<int64_t>(1, c.m - 1));
    for (double b : s.beta) p->add_beta(b);
  } else if (c.beta > 0) {
    s.beta = {c.beta};
    p->add_beta(c.beta);
  }
  if (c.lambda > 0) p->set_lambda(c.lambda);
  s.lambda = c.lambda;
  if (c.scale_coupled) p->set_scale_coupled_lambda(true);
  s.scale_coupled = c.scale_coupled;
  if (c.eps_gamma > 0) {
    p->set_eps_gamma(c.eps_gamma);
    s.eps_gamma = c.eps_gamma;
  }
  if (Windowed(v.rule)) {
    if (window > 0) p->set_window(window);
    s.window = window > 0 ? window : 4;
  }
  if (c.half_life > 0) p->set_beta_half_life(c.half_life);
  if (c.beta_min > 0) p->set_beta_min(c.beta_min);
  s.half_life = c.half_life;
  s.beta_min = c.beta_min;
  if (c.recommended) {  // adapt.proto FalconParams.variant, restated
    p->set_variant(FalconParams::VARIANT_UNSPECIFIED);
    s.rule = Rule::k3;
    s.window = 16;
    s.norm = Norm::kL2;
    s.half_life = 100;
    s.beta_min = 0.01;
    return {spec, s};
  }
  s.norm = c.norm == FalconParams::KEY_NORM_L2    ? Norm::kL2
           : c.norm == FalconParams::KEY_NORM_RMS ? Norm::kRms
                                                  : Norm::kNone;
  return {spec, s};
}

class FalconReferenceRun : public ::testing::Test {
 protected:
  // Keys as floats (the store's input), so that both sides start from the same doubles.
  std::vector<float> Keys(const Case& c, int64_t n) {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<float> pool(std::max(c.distinct_keys, 1) * c.d);
    std::vector<float> keys(n * c.d);
    auto draw = [&](float* row) {
      for (int64_t i = 0; i < c.d; ++i) row[i] = static_cast<float>(c.key_scale * normal(rng_));
    };
    for (int k = 0; k < c.distinct_keys; ++k) draw(pool.data() + k * c.d);
    std::uniform_int_distribution<int> pick(0, std::max(c.distinct_keys, 1) - 1);
    for (int64_t t = 0; t < n; ++t) {
      float* row = keys.data() + t * c.d;
      if (c.zero_keys && t % 7 == 3) continue;  // stays zero
      if (c.distinct_keys > 0) {
        std::copy_n(pool.data() + pick(rng_) * c.d, c.d, row);
      } else {
        draw(row);
      }
    }
    return keys;
  }

  void Run(const Case& c, const Variant& v, uint32_t window);

  std::unique_ptr<kernels::Backend> backend_ = kernels::MakeCpuBackend(1);
  std::mt19937_64 rng_{20260601};
};

class FalconReferenceTest : public FalconReferenceRun,
                            public ::testing::WithParamInterface<std::tuple<size_t, size_t>> {};

void FalconReferenceRun::Run(const Case& c, const Variant& v, uint32_t window) {
  auto [spec, settings] = Configure(c, v, window);
  absl::StatusOr<std::unique_ptr<Store>> made = CreateStore(spec, backend_.get());
  ASSERT_TRUE(made.ok()) << made.status();
  Store& store = **made;
  const bool labels = c.output == OutputSpec::KIND_LABELS;
  const bool next = c.output == OutputSpec::KIND_NEXT;
  Model model(settings, c.d, labels ? 0 : c.m);
  std::vector<std::string> names;
  std::vector<double> previous;  // next: the last item
  double loss = 0, last_residual = 0;
  int64_t correct = 0, near_ties = 0, evaluated = 0;

  for (int64_t rows : c.commits) {
    const std::vector<float> keys = Keys(c, rows);
    ExampleBatch batch;
    batch.rows = rows;
    batch.dim = c.d;
    batch.keys = keys;
    batch.sequence = next;
    std::vector<double> targets(rows * c.m);
    if (c.output == OutputSpec::KIND_VECTOR) {
      for (double& y : targets) y = std::normal_distribution<double>(0.0, 2.0)(rng_);
      batch.targets.assign(targets.begin(), targets.end());        // float targets...
      targets.assign(batch.targets.begin(), batch.targets.end());  // ...as the store reads them
    }
    for (int64_t t = 0; t < rows; ++t) {
      std::vector<double> y;
      int64_t visible = 0, column = 0;  // labels: the columns before this pair, its column
      if (labels) {
        // Six labels; the last two appear once the first four have. Keys lean to their label.
        const int label = std::uniform_int_distribution<int>(0, names.size() < 4 ? 3 : 5)(rng_);
        const std::string name = "L" + std::to_string(label);
        batch.labels.push_back(name);
        batch.keys[t * c.d + label % c.d] += 2.0f;
        visible = static_cast<int64_t>(names.size());
        column = std::find(names.begin(), names.end(), name) - names.begin();
        if (column == visible) {
          names.push_back(name);
          model.AddColumn();
        }
        y.assign(model.columns(), 0.0);
        y[column] = 1.0;
      }
      std::vector<double> key(batch.keys.begin() + t * c.d, batch.keys.begin() + (t + 1) * c.d);
      if (next) {
        std::swap(previous, key);  // x = φ(k_{t−1}), y = k_t; the first item only starts
        if (key.empty()) continue;
        y = previous;
      } else if (!labels) {
        y.assign(targets.begin() + t * c.m, targets.begin() + (t + 1) * c.m);
      }
      const std::vector<double> p = model.Step(key, y);
      double sq = 0;
      for (size_t j = 0; j < y.size(); ++j) sq += (y[j] - p[j]) * (y[j] - p[j]);
      ++evaluated;
      last_residual = std::sqrt(sq);
      if (!labels) {
        loss += sq / static_cast<double>(y.size());
        continue;
      }
      // Top-1 among the labels known before this pair, ties to the first; a near tie may go
      // either way between two float64 orders of summation.
      int64_t best = -1, second = -1;
      for (int64_t j = 0; j < visible; ++j) {
        if (best < 0 || p[j] > p[best]) {
          second = best;
          best = j;
        } else if (second < 0 || p[j] > p[second]) {
          second = j;
        }
      }
      correct += best >= 0 && best == column ? 1 : 0;
      if (second >= 0 && p[best] - p[second] <= 1e-9 * (1 + std::abs(p[best]))) ++near_ties;
    }
    absl::StatusOr<CommitResult> done = Apply(store, TxnKind::kAdapt, {batch});
    ASSERT_TRUE(done.ok()) << done.status();
  }

  // S (and, for 3 and 3A, the window kept for the next commit) from the snapshot.
  absl::StatusOr<adapt::v1::StoreSnapshot> snap = store.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status();
  const adapt::v1::FalconState& state = snap->falcon();
  ASSERT_EQ(state.columns(), model.columns());
  const std::vector<double> s(state.s().begin(), state.s().end());
  EXPECT_LT(RelError(s, model.S()), kStateTol);
  if (labels)
    EXPECT_EQ(std::vector<std::string>(state.labels().begin(), state.labels().end()), names);
  const auto history = model.History();
  ASSERT_EQ(state.history(), history.size());
  std::vector<double> hk, hy;
  for (const auto& [x, y] : history) {
    hk.insert(hk.end(), x.begin(), x.end());
    hy.insert(hy.end(), y.begin(), y.end());
  }
  EXPECT_LT(RelError({state.history_keys().begin(), state.history_keys().end()}, hk), kStateTol);
  EXPECT_LT(RelError({state.history_targets().begin(), state.history_targets().end()}, hy),
            kStateTol);

  // The prequential record: every pair evaluated before its write.
  adapt::v1::StoreInfo info;
  store.Describe(&info);
  EXPECT_EQ(info.prequential_evaluated(), static_cast<uint64_t>(evaluated));
  EXPECT_EQ(info.falcon().steps(), static_cast<uint64_t>(evaluated));
  EXPECT_NEAR(info.falcon().residual_norm(), last_residual, kLossTol * (1 + last_residual));
  if (!labels) EXPECT_NEAR(info.prequential_loss_sum(), loss, kLossTol * (1 + loss));
  if (labels) {
    EXPECT_LE(std::abs(static_cast<int64_t>(info.prequential_correct()) - correct), near_ties);
    EXPECT_GT(correct, evaluated / 3);  // the labels are learnable: the check has teeth
  }

  // Predict reads S_Tᵀ φ(q), for fresh queries of the case's scale.
  const int64_t queries = 5;
  const std::vector<float> q = Keys(c, queries);
  const int64_t m = model.columns();
  absl::StatusOr<Predictions> pred =
      store.Predict(q.data(), queries, c.d, static_cast<int>(std::max<int64_t>(m, 1)));
  ASSERT_TRUE(pred.ok()) << pred.status();
  for (int64_t r = 0; r < queries; ++r) {
    const std::vector<double> want =
        model.Read(std::vector<double>(q.begin() + r * c.d, q.begin() + (r + 1) * c.d));
    double scale = 1e-300;
    for (double w : want) scale = std::max(scale, std::abs(w));
    for (int64_t j = 0; j < m; ++j) {
      const double got = labels ? pred->scores[r * m + j] : pred->vectors[r * m + j];
      const int64_t column = labels ? pred->label_ids[r * m + j] : j;
      EXPECT_NEAR(got, want[column], kPredictTol * scale) << "query " << r << " column " << column;
    }
  }
}

// One case and one variant, every window the case lists.
TEST_P(FalconReferenceTest, MatchesTheEquations) {
  const Case& c = kCases[std::get<0>(GetParam())];
  const Variant& v = kVariants[std::get<1>(GetParam())];
  for (uint32_t w : Windowed(v.rule) ? c.windows : std::vector<uint32_t>{0}) {
    SCOPED_TRACE(::testing::Message() << "window " << w << " (0: the default)");
    Run(c, v, w);
    if (HasFatalFailure()) return;
  }
}

// A labels store created without `variant` follows the recommended settings, schedule
// included, over a stream long enough for β to fall to a quarter.
TEST_F(FalconReferenceRun, RecommendedLabelDefaults) {
  const Case c = {.name = "recommended",
                  .output = OutputSpec::KIND_LABELS,
                  .d = 8,
                  .m = 0,
                  .commits = {50, 150, 120},
                  .recommended = true};
  Run(c, kVariants[2], 0);
}

INSTANTIATE_TEST_SUITE_P(Cases, FalconReferenceTest,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kCases)),
                                            ::testing::Range<size_t>(0, std::size(kVariants))),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
                           return std::string(kCases[std::get<0>(info.param)].name) + "_" +
                                  FalconParams::Variant_Name(
                                      kVariants[std::get<1>(info.param)].proto);
                         });

}  // namespace
}  // namespace adaptd
