#include "client/adaptctl/settings.h"

#include <string>
#include <vector>

#include "client/adaptctl/test_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace adaptctl {
namespace {

using adapt::v1::FalconParams;
using adapt::v1::FwpkmParams;
using adapt::v1::StoreSpec;
using ::testing::ElementsAre;

StoreSpec Spec(adapt::v1::StoreKind kind) {
  StoreSpec spec;
  spec.set_kind(kind);
  return spec;
}

TEST(ApplyStoreSettingsTest, FaastNumbersBoolsAndDim) {
  StoreSpec spec = Spec(adapt::v1::STORE_KIND_FAAST);
  ASSERT_TRUE(ApplyStoreSettings({"rcond=1e-6", "auto_compile_every=100", "few_shot=false",
                                  "dim=16", "auto-compile-delay-ms = 0"},
                                 spec)
                  .ok());
  EXPECT_EQ(spec.dim(), 16u);
  ASSERT_TRUE(spec.has_faast());
  EXPECT_TRUE(spec.faast().has_rcond());
  EXPECT_DOUBLE_EQ(spec.faast().rcond(), 1e-6);
  EXPECT_EQ(spec.faast().auto_compile_every(), 100u);
  EXPECT_TRUE(spec.faast().has_few_shot());
  EXPECT_FALSE(spec.faast().few_shot());
  EXPECT_TRUE(spec.faast().has_auto_compile_delay_ms());
  EXPECT_FALSE(spec.faast().has_alpha());
}

TEST(ApplyStoreSettingsTest, ParamsMessageIsSetWithoutSettings) {
  StoreSpec spec = Spec(adapt::v1::STORE_KIND_FWPKM);
  ASSERT_TRUE(ApplyStoreSettings({}, spec).ok());
  EXPECT_EQ(spec.params_case(), StoreSpec::kFwpkm);
}

TEST(ApplyStoreSettingsTest, FalconEnumsAndRepeated) {
  StoreSpec spec = Spec(adapt::v1::STORE_KIND_FALCON);
  ASSERT_TRUE(
      ApplyStoreSettings({"variant=1a", "key_norm=L2", "beta=0.5, 0.7", "window=8"}, spec).ok());
  EXPECT_EQ(spec.falcon().variant(), FalconParams::VARIANT_1A);
  EXPECT_EQ(spec.falcon().key_norm(), FalconParams::KEY_NORM_L2);
  EXPECT_THAT(spec.falcon().beta(), ElementsAre(0.5, 0.7));
  EXPECT_EQ(spec.falcon().window(), 8u);
  // The full name works too, and a repeated field is replaced, not appended to.
  ASSERT_TRUE(ApplyStoreSettings({"variant=VARIANT_2A", "beta=1.5"}, spec).ok());
  EXPECT_EQ(spec.falcon().variant(), FalconParams::VARIANT_2A);
  EXPECT_THAT(spec.falcon().beta(), ElementsAre(1.5));
  ASSERT_TRUE(ApplyStoreSettings({"beta="}, spec).ok());
  EXPECT_TRUE(spec.falcon().beta().empty());
}

TEST(ApplyStoreSettingsTest, FwpkmEnums) {
  StoreSpec spec = Spec(adapt::v1::STORE_KIND_FWPKM);
  ASSERT_TRUE(ApplyStoreSettings({"value_type=bfloat16", "gate=Confidence", "sub_keys=64",
                                  "projection_seed=18446744073709551615"},
                                 spec)
                  .ok());
  EXPECT_EQ(spec.fwpkm().value_type(), FwpkmParams::VALUE_TYPE_BFLOAT16);
  EXPECT_EQ(spec.fwpkm().gate(), FwpkmParams::GATE_CONFIDENCE);
  EXPECT_EQ(spec.fwpkm().sub_keys(), 64u);
  EXPECT_EQ(spec.fwpkm().projection_seed(), 18446744073709551615ull);
}

TEST(ApplyStoreSettingsTest, UnknownKeyListsValidKeys) {
  StoreSpec spec = Spec(adapt::v1::STORE_KIND_FAAST);
  absl::Status status = ApplyStoreSettings({"rcondd=1"}, spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              Begins("--set: unknown key \"rcondd\" for a faast store; valid keys: dim, rcond, "
                     "alpha, ridge, decay, auto_compile_every, auto_compile_delay_ms, "
                     "few_shot, max_labels"));
  // A key of another kind is unknown too.
  EXPECT_THAT(ApplyStoreSettings({"variant=1"}, spec).message(),
              Begins("--set: unknown key \"variant\""));
}

TEST(ApplyStoreSettingsTest, BadValues) {
  StoreSpec faast = Spec(adapt::v1::STORE_KIND_FAAST);
  EXPECT_THAT(ApplyStoreSettings({"rcond=abc"}, faast).message(),
              Begins("--set rcond=abc: expected a finite number"));
  EXPECT_THAT(ApplyStoreSettings({"rcond=nan"}, faast).message(),
              Begins("--set rcond=nan: expected a finite number"));
  EXPECT_THAT(ApplyStoreSettings({"max_labels=-1"}, faast).message(),
              Begins("--set max_labels=-1: expected an unsigned 32-bit integer"));
  EXPECT_THAT(ApplyStoreSettings({"max_labels=4294967296"}, faast).message(),
              Begins("--set max_labels=4294967296: expected an unsigned 32-bit integer"));
  EXPECT_THAT(ApplyStoreSettings({"few_shot=maybe"}, faast).message(),
              Begins("--set few_shot=maybe: expected true or false"));
  EXPECT_THAT(ApplyStoreSettings({"dim=x"}, faast).message(), Begins("--set dim=x"));
  EXPECT_THAT(ApplyStoreSettings({"rcond"}, faast).message(),
              Begins("--set rcond: expected KEY=VALUE"));
  EXPECT_THAT(ApplyStoreSettings({"=1"}, faast).message(), Begins("--set =1: expected KEY=VALUE"));
  StoreSpec falcon = Spec(adapt::v1::STORE_KIND_FALCON);
  EXPECT_THAT(ApplyStoreSettings({"variant=4b"}, falcon).message(),
              Begins("--set variant=4b: expected one of 1, 2, 3, 1A, 2A, 3A"));
  EXPECT_THAT(ApplyStoreSettings({"beta=0.5,x"}, falcon).message(),
              Begins("--set beta=x: expected a finite number"));
}

TEST(ApplyStoreSettingsTest, KindMustBeSet) {
  StoreSpec spec;
  EXPECT_FALSE(ApplyStoreSettings({}, spec).ok());
}

TEST(ApplyCompileSettingsTest, SetsFaastOverrides) {
  adapt::v1::CompileRequest request;
  ASSERT_TRUE(ApplyCompileSettings({}, request).ok());
  EXPECT_FALSE(request.has_faast());
  ASSERT_TRUE(ApplyCompileSettings({"ridge=0.1", "alpha=0.5"}, request).ok());
  EXPECT_DOUBLE_EQ(request.faast().ridge(), 0.1);
  EXPECT_DOUBLE_EQ(request.faast().alpha(), 0.5);
  absl::Status status = ApplyCompileSettings({"dim=3"}, request);
  EXPECT_THAT(status.message(),
              Begins("--set: unknown key \"dim\" for compile; valid keys: rcond"));
}

TEST(SetFieldTest, AnyMessage) {
  FalconParams params;
  ASSERT_TRUE(SetField(params, "lambda", "0.25").ok());
  EXPECT_DOUBLE_EQ(params.lambda(), 0.25);
  EXPECT_THAT(
      SetField(params, "nope", "1").message(),
      Begins("--set: unknown key \"nope\" for adapt.v1.FalconParams; valid keys: variant, beta"));
}

TEST(ParseStoreKindTest, Names) {
  EXPECT_EQ(*ParseStoreKind("faast"), adapt::v1::STORE_KIND_FAAST);
  EXPECT_EQ(*ParseStoreKind("Falcon"), adapt::v1::STORE_KIND_FALCON);
  EXPECT_EQ(*ParseStoreKind("fwpkm"), adapt::v1::STORE_KIND_FWPKM);
  EXPECT_FALSE(ParseStoreKind("ridge").ok());
}

TEST(ParseOutputSpecTest, Forms) {
  EXPECT_EQ(ParseOutputSpec("labels")->kind(), adapt::v1::OutputSpec::KIND_LABELS);
  EXPECT_EQ(ParseOutputSpec("next")->kind(), adapt::v1::OutputSpec::KIND_NEXT);
  absl::StatusOr<adapt::v1::OutputSpec> vector = ParseOutputSpec("vector:3");
  ASSERT_TRUE(vector.ok());
  EXPECT_EQ(vector->kind(), adapt::v1::OutputSpec::KIND_VECTOR);
  EXPECT_EQ(vector->dim(), 3u);
  EXPECT_FALSE(ParseOutputSpec("vector:0").ok());
  EXPECT_FALSE(ParseOutputSpec("vector:").ok());
  EXPECT_FALSE(ParseOutputSpec("vector").ok());
  EXPECT_FALSE(ParseOutputSpec("label").ok());
}

}  // namespace
TEST(StoreKindNamesTest, EveryKindOfTheProtoInEnumOrder) {
  EXPECT_THAT(StoreKindNames(), ElementsAre("faast", "falcon", "fwpkm"));
  for (const std::string& name : StoreKindNames()) {
    absl::StatusOr<adapt::v1::StoreKind> kind = ParseStoreKind(name);
    ASSERT_TRUE(kind.ok()) << name;
    ASSERT_NE(KindParamsField(*kind), nullptr) << name;
    EXPECT_EQ(KindParamsField(*kind)->name(), name);
  }
  EXPECT_EQ(KindParamsField(adapt::v1::STORE_KIND_UNSPECIFIED), nullptr);
  EXPECT_EQ(KindParamsField(static_cast<adapt::v1::StoreKind>(100)), nullptr);
  EXPECT_EQ(ParseStoreKind("unspecified").status().message(),
            "--kind unspecified: expected faast, falcon, fwpkm");
}

TEST(StoreSettingsHelpTest, ListsEveryKindsKeys) {
  const std::string help = StoreSettingsHelp();
  EXPECT_THAT(help, Begins("Settable with --set KEY=VALUE, by kind (and dim=D for every kind):"));
  EXPECT_NE(help.find("\n  faast: rcond, alpha, ridge,"), std::string::npos) << help;
  EXPECT_NE(help.find("\n  falcon: variant, beta,"), std::string::npos) << help;
  EXPECT_NE(help.find("\n  fwpkm: "), std::string::npos) << help;
}

}  // namespace adaptctl
