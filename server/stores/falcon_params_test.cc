// Falcon spec validation: defaults filled in, each range checked with INVALID_ARGUMENT naming
// the field.
#include "server/stores/falcon_params.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "server/stores/falcon_test_util.h"

namespace adaptd {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;
using falcon_test::Spec;

TEST(FalconParamsTest, FillsDefaults) {
  absl::StatusOr<StoreSpec> one =
      NormalizeFalconSpec(Spec(FalconParams::VARIANT_1, OutputSpec::KIND_UNSPECIFIED));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->output().kind(), OutputSpec::KIND_LABELS);
  const FalconParams& p = one->falcon();
  ASSERT_EQ(p.beta_size(), 1);
  EXPECT_EQ(p.beta(0), kFalconDefaultBeta);
  EXPECT_EQ(p.lambda(), kFalconDefaultLambda);
  EXPECT_EQ(p.eps(), kFalconDefaultEps);
  EXPECT_EQ(p.eps_gamma(), kFalconDefaultEpsGamma);
  EXPECT_EQ(p.window(), 1u);
  EXPECT_FALSE(p.scale_coupled_lambda());
  EXPECT_EQ(p.key_norm(), FalconParams::KEY_NORM_NONE);

  absl::StatusOr<StoreSpec> three =
      NormalizeFalconSpec(Spec(FalconParams::VARIANT_3A, OutputSpec::KIND_NEXT));
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->falcon().window(), kFalconDefaultWindow);
  EXPECT_EQ(FalconConfigOf(three->falcon()).window, kFalconDefaultWindow);
  EXPECT_EQ(FalconConfigOf(three->falcon()).variant, FalconVariant::k3A);
}

// `variant` unset: labels take variant 3, window 16, L2 keys and the β schedule; fields the spec
// sets win; vector and next outputs take variant 1 with a constant β. Normalising twice changes
// nothing (a persisted spec keeps its settings across restarts and upgrades).
TEST(FalconParamsTest, MissingVariantTakesTheRecommendedSettings) {
  absl::StatusOr<StoreSpec> labels =
      NormalizeFalconSpec(Spec(FalconParams::VARIANT_UNSPECIFIED, OutputSpec::KIND_UNSPECIFIED));
  ASSERT_TRUE(labels.ok()) << labels.status();
  const FalconParams& p = labels->falcon();
  EXPECT_EQ(p.variant(), FalconParams::VARIANT_3);
  EXPECT_EQ(p.window(), kFalconLabelsWindow);
  EXPECT_EQ(p.key_norm(), FalconParams::KEY_NORM_L2);
  ASSERT_EQ(p.beta_size(), 1);
  EXPECT_EQ(p.beta(0), 1.0);
  EXPECT_EQ(p.beta_half_life(), kFalconLabelsBetaHalfLife);
  EXPECT_EQ(p.beta_min(), kFalconLabelsBetaMin);
  EXPECT_EQ(p.lambda(), 0.0);
  const FalconConfig c = FalconConfigOf(p);
  EXPECT_EQ(c.variant, FalconVariant::k3);
  EXPECT_EQ(c.window, 16);
  EXPECT_DOUBLE_EQ(c.ScheduledBeta(1.0, 101), 0.5);
  absl::StatusOr<StoreSpec> again = NormalizeFalconSpec(*labels);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), labels->SerializeAsString());

  StoreSpec tuned = Spec(FalconParams::VARIANT_UNSPECIFIED, OutputSpec::KIND_LABELS);
  tuned.mutable_falcon()->set_window(8);
  tuned.mutable_falcon()->set_key_norm(FalconParams::KEY_NORM_NONE);
  tuned.mutable_falcon()->add_beta(0.005);  // below the default floor: the floor follows
  absl::StatusOr<StoreSpec> t = NormalizeFalconSpec(tuned);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->falcon().window(), 8u);
  EXPECT_EQ(t->falcon().key_norm(), FalconParams::KEY_NORM_NONE);
  EXPECT_EQ(t->falcon().beta_min(), 0.005);
  tuned.mutable_falcon()->set_beta_half_life(0);  // constant β: no floor
  t = NormalizeFalconSpec(tuned);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->falcon().beta_min(), 0.0);

  for (auto kind : {OutputSpec::KIND_VECTOR, OutputSpec::KIND_NEXT}) {
    absl::StatusOr<StoreSpec> v = NormalizeFalconSpec(
        Spec(FalconParams::VARIANT_UNSPECIFIED, kind, kind == OutputSpec::KIND_VECTOR ? 2 : 0));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(v->falcon().variant(), FalconParams::VARIANT_1);
    EXPECT_EQ(v->falcon().beta_half_life(), 0.0);
    EXPECT_EQ(v->falcon().key_norm(), FalconParams::KEY_NORM_NONE);
  }
  // A variant given keeps every other default as before: a constant β, no key normalisation.
  absl::StatusOr<StoreSpec> three =
      NormalizeFalconSpec(Spec(FalconParams::VARIANT_3, OutputSpec::KIND_LABELS));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->falcon().window(), kFalconDefaultWindow);
  EXPECT_EQ(three->falcon().beta_half_life(), 0.0);
}

TEST(FalconParamsTest, PerColumnBetaForVariantTwo) {
  StoreSpec spec = Spec(FalconParams::VARIANT_2, OutputSpec::KIND_VECTOR, 3);
  for (double b : {0.5, 1.0, 1.5}) spec.mutable_falcon()->add_beta(b);
  absl::StatusOr<StoreSpec> ok = NormalizeFalconSpec(spec);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(FalconConfigOf(ok->falcon()).BetaOf(2), 1.5);
  StoreSpec next = Spec(FalconParams::VARIANT_2A, OutputSpec::KIND_NEXT, 0, 3);
  *next.mutable_falcon()->mutable_beta() = spec.falcon().beta();
  EXPECT_TRUE(NormalizeFalconSpec(next).ok());
}

struct BadCase {
  std::string name;
  StoreSpec spec;
  std::string field;
};

TEST(FalconParamsTest, RejectsEachOutOfRangeField) {
  std::vector<BadCase> cases;
  auto add = [&](std::string name, StoreSpec spec, std::string field) {
    cases.push_back({std::move(name), std::move(spec), std::move(field)});
  };
  const StoreSpec base = Spec(FalconParams::VARIANT_1, OutputSpec::KIND_VECTOR, 2);
  StoreSpec s = base;
  s.mutable_falcon()->set_variant(static_cast<FalconParams::Variant>(17));
  add("unknown variant", s, "spec.falcon.variant");
  for (double b : {0.0, 2.0, -1.0}) {
    s = base;
    s.mutable_falcon()->add_beta(b);
    add("beta range", s, "spec.falcon.beta[0]");
  }
  s = base;
  s.mutable_falcon()->add_beta(1);
  s.mutable_falcon()->add_beta(1);
  add("per-column beta on variant 1", s, "spec.falcon.beta");
  s = Spec(FalconParams::VARIANT_2, OutputSpec::KIND_VECTOR, 3);
  s.mutable_falcon()->add_beta(1);
  s.mutable_falcon()->add_beta(1);
  add("beta count", s, "spec.falcon.beta");
  s = Spec(FalconParams::VARIANT_2, OutputSpec::KIND_LABELS);
  s.mutable_falcon()->add_beta(1);
  s.mutable_falcon()->add_beta(1);
  add("per-column beta on labels", s, "spec.falcon.beta");
  s = Spec(FalconParams::VARIANT_2, OutputSpec::KIND_NEXT);
  s.mutable_falcon()->add_beta(1);
  s.mutable_falcon()->add_beta(1);
  add("per-column beta on next without dim", s, "spec.falcon.beta");
  s = base;
  s.mutable_falcon()->set_lambda(-0.1);
  add("lambda", s, "spec.falcon.lambda");
  for (double e : {0.0, -1e-6}) {
    s = base;
    s.mutable_falcon()->set_eps(e);
    add("eps", s, "spec.falcon.eps");
  }
  for (double e : {0.0, 1.0}) {
    s = base;
    s.mutable_falcon()->set_eps_gamma(e);
    add("eps_gamma", s, "spec.falcon.eps_gamma");
  }
  s = Spec(FalconParams::VARIANT_3, OutputSpec::KIND_VECTOR, 2);
  s.mutable_falcon()->set_window(0);
  add("window 0", s, "spec.falcon.window");
  s.mutable_falcon()->set_window(kFalconMaxWindow + 1);
  add("window too large", s, "spec.falcon.window");
  s = base;
  s.mutable_falcon()->set_window(4);
  add("window on variant 1", s, "spec.falcon.window");
  for (double h : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    s = base;
    s.mutable_falcon()->set_beta_half_life(h);
    add("beta_half_life", s, "spec.falcon.beta_half_life");
  }
  s = base;
  s.mutable_falcon()->set_beta_min(0.1);
  add("beta_min without a schedule", s, "spec.falcon.beta_min");
  s = base;
  s.mutable_falcon()->set_beta_half_life(10);
  s.mutable_falcon()->set_beta_min(-0.1);
  add("beta_min negative", s, "spec.falcon.beta_min");
  s = base;
  s.mutable_falcon()->add_beta(0.5);
  s.mutable_falcon()->set_beta_half_life(10);
  s.mutable_falcon()->set_beta_min(0.6);
  add("beta_min above beta", s, "spec.falcon.beta_min");
  s = Spec(FalconParams::VARIANT_UNSPECIFIED, OutputSpec::KIND_VECTOR, 2);
  s.mutable_falcon()->set_window(4);
  add("window on the vector default (variant 1)", s, "spec.falcon.window");
  s = base;
  s.mutable_falcon()->set_key_norm(static_cast<FalconParams::KeyNorm>(9));
  add("key_norm", s, "spec.falcon.key_norm");
  s = base;
  s.mutable_output()->set_dim(0);
  add("vector width", s, "spec.output.dim");
  s = Spec(FalconParams::VARIANT_1, OutputSpec::KIND_NEXT, 4);
  add("next width", s, "spec.output.dim");
  s = base;
  s.mutable_faast();
  add("faast params", s, "spec.faast");

  auto backend = kernels::MakeCpuBackend();
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(c.spec, backend.get());
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store.status().message().substr(0, c.field.size() + 1), c.field + ":")
        << store.status();
  }
}

TEST(FalconParamsTest, NormalizeKeys) {
  std::vector<double> k = {3, 4, 0, 0, 0, 0};
  NormalizeKeys(FalconKeyNorm::kL2, 2, 3, k.data());
  EXPECT_DOUBLE_EQ(k[0], 0.6);
  EXPECT_DOUBLE_EQ(k[1], 0.8);
  EXPECT_EQ(k[3], 0.0);  // a zero key stays zero
  std::vector<double> r = {2, 2, 2, 2};
  NormalizeKeys(FalconKeyNorm::kRms, 1, 4, r.data());
  EXPECT_DOUBLE_EQ(r[0], 1.0);
}

}  // namespace
}  // namespace adaptd
