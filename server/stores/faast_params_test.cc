// CreateStore: spec validation (messages name the field) and the defaults filled in.
#include "server/stores/faast_params.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/stores/faast_test_util.h"
#include "server/stores/store_factory.h"

namespace adaptd {
namespace {

using testing_util::StartsWithField;

using adapt::v1::StoreSpec;
using faast_test::LabelSpec;

TEST(FaastParamsTest, DefaultsAreFilledIn) {
  auto backend = kernels::MakeCpuBackend();
  StoreSpec spec = LabelSpec();
  spec.clear_output();  // unspecified output means labels
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend.get());
  ASSERT_TRUE(store.ok()) << store.status();
  const StoreSpec got = (*store)->spec();
  EXPECT_EQ(got.output().kind(), adapt::v1::OutputSpec::KIND_LABELS);
  EXPECT_FALSE(got.faast().has_rcond());
  EXPECT_EQ(got.faast().alpha(), 1.0);
  EXPECT_EQ(got.faast().ridge(), 0.0);
  EXPECT_EQ(got.faast().decay(), 1.0);
  EXPECT_EQ(got.faast().auto_compile_every(), 1024u);
  EXPECT_EQ(got.faast().auto_compile_delay_ms(), 200u);
  EXPECT_TRUE(got.faast().few_shot());
  EXPECT_EQ(got.faast().max_labels(), 10000u);
  EXPECT_EQ((*store)->dim(), 0);
}

TEST(FaastParamsTest, ExplicitValuesAreKept) {
  auto backend = kernels::MakeCpuBackend();
  StoreSpec spec = faast_test::VectorSpec(7, 64);
  spec.mutable_faast()->set_rcond(1e-4);
  spec.mutable_faast()->set_few_shot(false);
  spec.mutable_faast()->set_auto_compile_every(0);
  absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend.get());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->spec().faast().rcond(), 1e-4);
  EXPECT_FALSE((*store)->spec().faast().few_shot());
  EXPECT_EQ((*store)->spec().faast().auto_compile_every(), 0u);
  EXPECT_EQ((*store)->dim(), 64);
}

struct BadSpec {
  std::function<void(StoreSpec*)> apply;
  absl::StatusCode code;
  std::string message;  // the whole message, or the field it opens with
};

TEST(FaastParamsTest, InvalidSpecsNameTheField) {
  auto backend = kernels::MakeCpuBackend();
  const std::vector<BadSpec> cases = {
      {[](StoreSpec* s) { s->mutable_faast()->set_rcond(2); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.rcond: must be in (0, 1), got 2"},
      {[](StoreSpec* s) { s->mutable_faast()->set_rcond(0); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.rcond: must be in (0, 1), got 0"},
      {[](StoreSpec* s) { s->mutable_faast()->set_alpha(0); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.alpha"},
      {[](StoreSpec* s) { s->mutable_faast()->set_alpha(INFINITY); },
       absl::StatusCode::kInvalidArgument, "spec.faast.alpha"},
      {[](StoreSpec* s) { s->mutable_faast()->set_ridge(-1); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.ridge"},
      {[](StoreSpec* s) { s->mutable_faast()->set_ridge(NAN); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.ridge"},
      {[](StoreSpec* s) { s->mutable_faast()->set_decay(0); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.decay: must be in (0, 1], got 0"},
      {[](StoreSpec* s) { s->mutable_faast()->set_decay(1.5); }, absl::StatusCode::kInvalidArgument,
       "spec.faast.decay"},
      {[](StoreSpec* s) { s->mutable_faast()->set_max_labels(0); },
       absl::StatusCode::kInvalidArgument, "spec.faast.max_labels"},
      {[](StoreSpec* s) { s->set_dim(65537); }, absl::StatusCode::kInvalidArgument, "spec.dim"},
      {[](StoreSpec* s) { s->mutable_output()->set_dim(3); }, absl::StatusCode::kInvalidArgument,
       "spec.output.dim"},
      {[](StoreSpec* s) { s->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR); },
       absl::StatusCode::kInvalidArgument, "spec.output.dim"},
      {[](StoreSpec* s) {
         s->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
         s->mutable_output()->set_dim(65537);
       },
       absl::StatusCode::kInvalidArgument, "spec.output.dim"},
      {[](StoreSpec* s) { s->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_NEXT); },
       absl::StatusCode::kInvalidArgument,
       "spec.output.kind: output 'next' is not supported by faast (use labels or vector:M)"},
      {[](StoreSpec* s) { s->mutable_falcon(); }, absl::StatusCode::kInvalidArgument,
       "spec.falcon"},
      {[](StoreSpec* s) { s->set_kind(adapt::v1::STORE_KIND_UNSPECIFIED); },
       absl::StatusCode::kInvalidArgument, "spec.kind"},
      {[](StoreSpec* s) { s->set_kind(adapt::v1::STORE_KIND_FALCON); },
       absl::StatusCode::kInvalidArgument,
       "spec.faast: parameters do not match store kind 'falcon'"},
      {[](StoreSpec* s) { s->set_kind(adapt::v1::STORE_KIND_FWPKM); },
       absl::StatusCode::kInvalidArgument,
       "spec.faast: parameters do not match store kind 'fwpkm'"},
  };
  for (const BadSpec& c : cases) {
    StoreSpec spec = LabelSpec();
    c.apply(&spec);
    absl::StatusOr<std::unique_ptr<Store>> store = CreateStore(spec, backend.get());
    EXPECT_EQ(store.status().code(), c.code) << c.message << ": " << store.status();
    // The whole message, or (given a field name alone) its field prefix.
    if (store.status().message() != c.message) {
      EXPECT_TRUE(StartsWithField(store.status().message(), c.message));
    }
  }
  EXPECT_EQ(CreateStore(LabelSpec(), nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FaastParamsTest, OverridesSetOnlySolverFields) {
  adapt::v1::FaastParams params;
  params.set_rcond(1e-3);
  params.set_alpha(1.0);
  adapt::v1::FaastParams overrides;
  overrides.set_alpha(0.5);  // alpha alone clears rcond, so that it takes effect
  ASSERT_TRUE(ValidateFaastOverrides(overrides).ok());
  ApplyFaastOverrides(overrides, &params);
  EXPECT_FALSE(params.has_rcond());
  EXPECT_EQ(params.alpha(), 0.5);
  overrides.Clear();
  overrides.set_few_shot(false);
  EXPECT_EQ(ValidateFaastOverrides(overrides).code(), absl::StatusCode::kInvalidArgument);
  overrides.Clear();
  overrides.set_ridge(-2);
  EXPECT_EQ(ValidateFaastOverrides(overrides).message(),
            "faast.ridge: must be finite and >= 0, got -2");
}

}  // namespace
}  // namespace adaptd
