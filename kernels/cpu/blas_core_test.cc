// The start-up choice of OpenBLAS kernels (blas_core.h): the core classes, the plan for each
// mode and environment, and the self-check of the kernels this process runs.
#include "kernels/cpu/blas_core.h"

#include "gtest/gtest.h"

namespace adaptd::kernels {
namespace {

CpuFeatures Avx512(bool amd = false) {
  CpuFeatures f;
  f.amd = amd;
  f.avx = f.avx2 = f.fma = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512cd = true;
  return f;
}

CpuFeatures Avx2(bool amd) {
  CpuFeatures f;
  f.amd = amd;
  f.avx = f.avx2 = f.fma = true;
  return f;
}

TEST(BlasCoreTest, ClassesAndTheBestCoreForTheFeatures) {
  EXPECT_EQ(CoreClass("SkylakeX"), 4);
  EXPECT_EQ(CoreClass("skylakex"), 4);
  EXPECT_EQ(CoreClass("SapphireRapids"), 4);
  EXPECT_EQ(CoreClass("Haswell"), 3);
  EXPECT_EQ(CoreClass("ZEN"), 3);
  EXPECT_EQ(CoreClass("Sandybridge"), 2);
  EXPECT_EQ(CoreClass("Prescott"), 1);
  EXPECT_EQ(CoreClass("ARMV8"), 0);
  EXPECT_EQ(BestCore(Avx512()), "SkylakeX");
  EXPECT_EQ(BestCore(Avx2(false)), "Haswell");
  EXPECT_EQ(BestCore(Avx2(true)), "Zen");
  CpuFeatures partial = Avx512();
  partial.avx512dq = false;  // AVX-512F alone (Knights Landing) is not enough for SkylakeX
  EXPECT_EQ(BestCore(partial), "Haswell");
  CpuFeatures avx;
  avx.avx = true;
  EXPECT_EQ(BestCore(avx), "Sandybridge");
  EXPECT_EQ(BestCore(CpuFeatures()), "");
  EXPECT_TRUE(CanRun(Avx2(false), "Zen"));
  EXPECT_TRUE(CanRun(CpuFeatures(), "Prescott"));
  EXPECT_FALSE(CanRun(Avx2(false), "SkylakeX"));
  EXPECT_FALSE(CanRun(Avx512(), "NoSuchCore"));
}

TEST(BlasCoreTest, AutoRestartsOnlyForABetterClass) {
  // A CPU newer than the library: its generic pick gives way to the AVX-512 kernels.
  absl::StatusOr<CorePlan> plan = PlanCore("auto", "Prescott", nullptr, nullptr, Avx512());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->restart_with, "SkylakeX");
  EXPECT_EQ(plan->source, CoreSource::kCpuFeatures);
  EXPECT_NE(plan->reason.find("Prescott"), std::string::npos) << plan->reason;
  // A pick of the best class (or better than the flags tell) is kept.
  for (const char* library : {"SkylakeX", "CooperLake", "SapphireRapids"}) {
    plan = PlanCore("auto", library, nullptr, nullptr, Avx512());
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->restart_with, "") << library;
    EXPECT_EQ(plan->source, CoreSource::kLibrary);
  }
  plan = PlanCore("auto", "Zen", nullptr, nullptr, Avx2(true));
  EXPECT_EQ(plan->restart_with, "");
  plan = PlanCore("auto", "Sandybridge", nullptr, nullptr, Avx2(true));
  EXPECT_EQ(plan->restart_with, "Zen");
  plan = PlanCore("auto", "Prescott", nullptr, nullptr, CpuFeatures());
  EXPECT_EQ(plan->restart_with, "");
}

TEST(BlasCoreTest, LibraryFlagEnvironmentAndTheRestart) {
  absl::StatusOr<CorePlan> plan = PlanCore("library", "Prescott", nullptr, nullptr, Avx512());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->restart_with, "");
  EXPECT_EQ(plan->source, CoreSource::kLibrary);

  plan = PlanCore("Haswell", "Prescott", nullptr, nullptr, Avx512());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->restart_with, "Haswell");
  EXPECT_EQ(plan->source, CoreSource::kFlag);
  plan = PlanCore("haswell", "Haswell", nullptr, nullptr, Avx512());
  EXPECT_EQ(plan->restart_with, "");  // already running it
  EXPECT_EQ(plan->source, CoreSource::kFlag);

  // Whoever set OPENBLAS_CORETYPE decided; the library read it when it loaded.
  plan = PlanCore("auto", "Haswell", "Haswell", nullptr, Avx512());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->restart_with, "");
  EXPECT_EQ(plan->source, CoreSource::kEnvironment);

  // The restart keeps what the first start chose (OPENBLAS_CORETYPE is now set, by adaptd).
  plan = PlanCore("auto", "SkylakeX", "SkylakeX", "cpu", Avx512());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->restart_with, "");
  EXPECT_EQ(plan->source, CoreSource::kCpuFeatures);
  plan = PlanCore("Haswell", "Haswell", "Haswell", "flag", Avx512());
  EXPECT_EQ(plan->source, CoreSource::kFlag);
}

TEST(BlasCoreTest, ABadCoreNameIsRefusedNamingTheFlag) {
  absl::StatusOr<CorePlan> plan = PlanCore("Skylake", "Prescott", nullptr, nullptr, Avx512());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("--blas-core: unknown OpenBLAS core \"Skylake\""),
            std::string::npos)
      << plan.status();
  plan = PlanCore("SkylakeX", "Haswell", nullptr, nullptr, Avx2(false));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("needs AVX-512"), std::string::npos) << plan.status();
  // OPENBLAS_CORETYPE in the environment decides the kernels, but a bad flag is still an error.
  plan = PlanCore("Skylake", "Haswell", "Haswell", nullptr, Avx512());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  plan = PlanCore("SkylakeX", "Haswell", "Haswell", nullptr, Avx2(false));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  plan = PlanCore("Sandybridge", "Haswell", "Haswell", nullptr, Avx2(false));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->source, CoreSource::kEnvironment);
  EXPECT_EQ(plan->restart_with, "");
}

TEST(BlasCoreTest, TheKernelsOfThisProcessPassTheSelfCheck) {
  EXPECT_TRUE(BlasSelfCheck().ok()) << BlasSelfCheck();
  EXPECT_FALSE(LibraryCore().empty());
  EXPECT_EQ(BlasVersion().rfind("OpenBLAS", 0), 0u) << BlasVersion();
  const BlasChoice unset = CurrentBlasChoice();
  EXPECT_EQ(unset.core, LibraryCore());
  EXPECT_EQ(unset.source, CoreSource::kLibrary);
  SetBlasChoice({"OpenBLAS 9", "SkylakeX", CoreSource::kCpuFeatures});
  EXPECT_EQ(CurrentBlasChoice().core, "SkylakeX");
  EXPECT_STREQ(CoreSourceName(CurrentBlasChoice().source), "cpu");
}

}  // namespace
}  // namespace adaptd::kernels
