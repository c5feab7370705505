// Base stores through the Engine (docs/BASE_STORES.md) on a real data directory: creation from a
// faast or falcon base (by full name or the tenant's own), every refusal naming spec.base and
// leaving nothing behind, deletion of a base in use refused until its dependants are gone
// (across a restart, for hot and cold stores), and refresh_base compiles that a restart
// replays without reading the base again; and bases that live on another member of a cluster
// (two engines standing for two members, as ClusterBases joins them over gRPC). The refresh_base
// case runs again on the durable log in etcd and SeaweedFS.
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/config/config.h"
#include "server/core/engine.h"
#ifdef ADAPTD_ETCD_TESTS
#include "server/durability/testing/shared_services.h"
#endif

namespace adaptd {
namespace {

using adapt::v1::OutputSpec;
using adapt::v1::StoreSpec;

constexpr int kDim = 6;

class EngineBaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    dir_ = ::testing::TempDir() + "/engine-base-" + std::to_string(std::random_device()());
    std::filesystem::remove_all(dir_);
    Start();
  }
  void TearDown() override {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(uint64_t memory_budget = 0) {
    engine_.reset();
    adapt::v1::ServerConfig config = DefaultConfig();
    config.set_data_dir(dir_);
    config.set_memory_budget_bytes(memory_budget);
    Configure(&config);
    auto engine = Engine::Create(config, backend_.get(), nullptr, nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  void RefreshBaseScenario();
  // More configuration, for a variant of the fixture.
  virtual void Configure(adapt::v1::ServerConfig* /*config*/) {}

  static StoreSpec Faast(double ridge, const std::string& base = "") {
    StoreSpec spec;
    spec.set_kind(adapt::v1::STORE_KIND_FAAST);
    spec.mutable_output()->set_kind(OutputSpec::KIND_LABELS);
    spec.mutable_faast()->set_ridge(ridge);
    spec.mutable_faast()->set_auto_compile_delay_ms(0);  // compiles are the test's
    spec.set_base(base);
    return spec;
  }

  absl::StatusOr<adapt::v1::StoreInfo> Create(const std::string& tenant, const std::string& store,
                                              const StoreSpec& spec) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(tenant);
    create.set_store(store);
    *create.mutable_spec() = spec;
    return E()->CreateStore(create);
  }

  // `n` labelled examples (labels `names` in turn) into tenant/store, one Adapt call.
  void Adapt(const std::string& tenant, const std::string& store, int n,
             const std::vector<std::string>& names) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    std::normal_distribution<double> normal;
    for (int i = 0; i < n; ++i) {
      adapt::v1::Example* e = examples.Add();
      e->set_label(names[i % names.size()]);
      for (int j = 0; j < kDim; ++j) {
        e->mutable_input()->mutable_vector()->add_values(static_cast<float>(normal(rng_)));
      }
    }
    auto session = E()->StartWrite(TxnKind::kAdapt);
    ASSERT_TRUE(session->Add(tenant, store, examples).ok());
    ASSERT_TRUE(session->Finish().ok());
  }

  absl::StatusOr<adapt::v1::CompileResponse> Compile(const std::string& tenant,
                                                     const std::string& store,
                                                     bool refresh_base = false) {
    adapt::v1::CompileRequest compile;
    compile.set_refresh_base(refresh_base);
    return Compile(tenant, store, compile);
  }
  // `compile` (its parameters) for tenant/store, waited for.
  absl::StatusOr<adapt::v1::CompileResponse> Compile(const std::string& tenant,
                                                     const std::string& store,
                                                     adapt::v1::CompileRequest compile) {
    compile.set_tenant(tenant);
    compile.set_store(store);
    absl::Notification compiled;
    absl::StatusOr<adapt::v1::CompileResponse> result = absl::UnknownError("not run");
    E()->Compile(compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) {
      result = std::move(r);
      compiled.Notify();
    });
    compiled.WaitForNotification();
    return result;
  }

  // The scores of a fixed query, in label order.
  std::vector<float> Scores(const std::string& tenant, const std::string& store) {
    adapt::v1::PredictRequest predict;
    predict.set_tenant(tenant);
    predict.set_store(store);
    predict.set_top_k(100);
    adapt::v1::Input* query = predict.add_inputs();
    for (int j = 0; j < kDim; ++j) {
      query->mutable_vector()->add_values(0.3f * static_cast<float>(j) - 0.5f);
    }
    auto answer = E()->Predict(predict);
    EXPECT_TRUE(answer.ok()) << answer.status();
    if (!answer.ok()) return {};
    std::vector<std::pair<std::string, float>> pairs;
    for (const auto& p : answer->predictions(0).labels()) pairs.emplace_back(p.label(), p.score());
    std::sort(pairs.begin(), pairs.end());
    std::vector<float> out;
    for (const auto& [label, score] : pairs) out.push_back(score);
    return out;
  }

  absl::Status Delete(const std::string& tenant, const std::string& store) {
    adapt::v1::DeleteStoreRequest del;
    del.set_tenant(tenant);
    del.set_store(store);
    return E()->DeleteStore(del);
  }

  // The engine the helpers act on: engine_ unless a test points them elsewhere.
  Engine* E() const { return on_ != nullptr ? on_ : engine_.get(); }

  std::unique_ptr<kernels::Backend> backend_;
  std::string dir_;
  std::unique_ptr<Engine> engine_;
  Engine* on_ = nullptr;
  std::mt19937_64 rng_{7};
};

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::fabs(want[i]))) << "score " << i;
  }
}

TEST_F(EngineBaseTest, CreateFromABaseAndRefusalsNameTheField) {
  ASSERT_TRUE(Create("shared", "curated", Faast(0.5)).ok());
  Adapt("shared", "curated", 30, {"billing", "returns"});
  ASSERT_TRUE(Compile("shared", "curated").ok());

  // A new tenant's store answers at once, from the base.
  absl::StatusOr<adapt::v1::StoreInfo> made =
      Create("acme", "support", Faast(1.0, "shared/curated"));
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->spec().base(), "shared/curated");
  EXPECT_EQ(made->spec().dim(), static_cast<uint32_t>(kDim));
  EXPECT_EQ(made->version(), 1u);
  EXPECT_EQ(made->faast().base_version(), 1u);
  EXPECT_EQ(Scores("acme", "support"), Scores("shared", "curated"));
  // Of the tenant's own, by store name alone; falcon too.
  StoreSpec falcon;
  falcon.set_kind(adapt::v1::STORE_KIND_FALCON);
  falcon.set_base("support");
  absl::StatusOr<adapt::v1::StoreInfo> online = Create("acme", "online", falcon);
  ASSERT_TRUE(online.ok()) << online.status();
  EXPECT_EQ(online->spec().base(), "acme/support");
  EXPECT_EQ(online->spec().falcon().key_norm(), adapt::v1::FalconParams::KEY_NORM_NONE);
  // The same S: falcon scores it in float64, faast in float32 (docs/ALGORITHMS.md §1.4), so
  // the scores agree to float32's rounding.
  ExpectClose(Scores("acme", "online"), Scores("acme", "support"));

  struct Bad {
    const char* name;
    StoreSpec spec;
    absl::StatusCode code;
  };
  StoreSpec fwpkm;
  fwpkm.set_kind(adapt::v1::STORE_KIND_FWPKM);
  fwpkm.set_base("shared/curated");
  StoreSpec vector = Faast(1.0, "shared/curated");
  vector.mutable_output()->set_kind(OutputSpec::KIND_VECTOR);
  vector.mutable_output()->set_dim(2);
  StoreSpec other_dim = Faast(1.0, "shared/curated");
  other_dim.set_dim(kDim + 1);
  StoreSpec l2 = falcon;
  l2.set_base("shared/curated");
  l2.mutable_falcon()->set_key_norm(adapt::v1::FalconParams::KEY_NORM_L2);
  const Bad bad[] = {
      {"missing", Faast(1.0, "shared/nope"), absl::StatusCode::kNotFound},
      {"malformed", Faast(1.0, "a/b/c"), absl::StatusCode::kInvalidArgument},
      {"itself", Faast(1.0, "acme/new"), absl::StatusCode::kInvalidArgument},
      {"spectral", Faast(0.0, "shared/curated"), absl::StatusCode::kInvalidArgument},
      {"fwpkm", fwpkm, absl::StatusCode::kInvalidArgument},
      {"output", vector, absl::StatusCode::kInvalidArgument},
      {"dim", other_dim, absl::StatusCode::kInvalidArgument},
      {"key_norm", l2, absl::StatusCode::kInvalidArgument},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.name);
    absl::StatusOr<adapt::v1::StoreInfo> refused = Create("acme", "new", b.spec);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), b.code) << refused.status();
    const std::string message(refused.status().message());
    EXPECT_TRUE(message.rfind("spec.", 0) == 0) << message;
    adapt::v1::GetStoreRequest get;
    get.set_tenant("acme");
    get.set_store("new");
    EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);
  }
  // A base that has published nothing yet.
  ASSERT_TRUE(Create("shared", "empty", Faast(0.5)).ok());
  absl::StatusOr<adapt::v1::StoreInfo> early = Create("acme", "new", Faast(1.0, "shared/empty"));
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition) << early.status();
}

TEST_F(EngineBaseTest, ABaseInUseIsNotDeletedAcrossRestarts) {
  ASSERT_TRUE(Create("shared", "curated", Faast(0.5)).ok());
  Adapt("shared", "curated", 20, {"a", "b"});
  ASSERT_TRUE(Compile("shared", "curated").ok());
  {
    auto made = Create("acme", "one", Faast(1.0, "shared/curated"));
    ASSERT_TRUE(made.ok()) << made.status();
  }
  ASSERT_TRUE(Create("zeta", "two", Faast(1.0, "shared/curated")).ok());
  absl::Status refused = Delete("shared", "curated");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("acme/one, zeta/two"), std::string::npos) << refused;

  // After a restart (and with a checkpoint, the stores cold), the index is rebuilt.
  ASSERT_TRUE(engine_->Flush().ok());
  Start(/*memory_budget=*/1);
  EXPECT_EQ(Delete("shared", "curated").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Delete("acme", "one").ok());
  EXPECT_EQ(Delete("shared", "curated").code(), absl::StatusCode::kFailedPrecondition);
  Start();
  ASSERT_TRUE(Delete("zeta", "two").ok());
  EXPECT_TRUE(Delete("shared", "curated").ok());
}

// A store made from a base, exported and imported under another name: the import answers as
// the original and its base is in use by it (the delete of the base names it), after a
// restart too.
TEST_F(EngineBaseTest, AnImportedStoreFromABaseKeepsItsBaseInUse) {
  ASSERT_TRUE(Create("shared", "curated", Faast(0.5)).ok());
  Adapt("shared", "curated", 20, {"a", "b"});
  ASSERT_TRUE(Compile("shared", "curated").ok());
  ASSERT_TRUE(Create("acme", "one", Faast(1.0, "shared/curated")).ok());
  adapt::v1::ExportStoreRequest request;
  request.set_tenant("acme");
  request.set_store("one");
  absl::StatusOr<std::string> file = engine_->Export(request);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<adapt::v1::StoreInfo> imported = engine_->Import("beta", "copy", *file);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->spec().base(), "shared/curated");
  EXPECT_EQ(Scores("beta", "copy"), Scores("acme", "one"));
  ASSERT_TRUE(Delete("acme", "one").ok());
  absl::Status refused = Delete("shared", "curated");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("beta/copy"), std::string::npos) << refused;
  Start();
  EXPECT_EQ(Delete("shared", "curated").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Delete("beta", "copy").ok());
  EXPECT_TRUE(Delete("shared", "curated").ok());
}

void EngineBaseTest::RefreshBaseScenario() {
  ASSERT_TRUE(Create("shared", "curated", Faast(0.5)).ok());
  Adapt("shared", "curated", 20, {"a", "b"});
  ASSERT_TRUE(Compile("shared", "curated").ok());
  {
    auto made = Create("acme", "one", Faast(1.0, "shared/curated"));
    ASSERT_TRUE(made.ok()) << made.status();
  }
  Adapt("acme", "one", 4, {"b", "c"});
  ASSERT_TRUE(Compile("acme", "one").ok());
  const std::vector<float> first = Scores("acme", "one");
  ASSERT_EQ(first.size(), 3u);  // a, b from the base; c its own

  // The base moves on (a new label too); the store follows only when asked.
  Adapt("shared", "curated", 20, {"a", "d"});
  ASSERT_TRUE(Compile("shared", "curated").ok());
  ASSERT_TRUE(Compile("acme", "one").ok());
  EXPECT_EQ(Scores("acme", "one"), first);
  absl::StatusOr<adapt::v1::CompileResponse> refreshed = Compile("acme", "one", true);
  ASSERT_TRUE(refreshed.ok()) << refreshed.status();
  EXPECT_EQ(refreshed->faast().base_version(), 2u);
  const std::vector<float> second = Scores("acme", "one");
  ASSERT_EQ(second.size(), 4u);  // d arrived with the base
  EXPECT_NE(second, std::vector<float>(first.begin(), first.end()));

  // Replay after a crash (no checkpoint) gives the same weights: the record holds the copy.
  Adapt("shared", "curated", 10, {"b"});
  ASSERT_TRUE(Compile("shared", "curated").ok());  // the base's later version is not used
  Start();
  EXPECT_EQ(Scores("acme", "one"), second);
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("one");
  EXPECT_EQ(engine_->GetStore(get)->faast().base_version(), 2u);

  // Refusals: no base; a falcon store copies its base once.
  ASSERT_TRUE(Create("acme", "plain", Faast(1.0)).ok());
  EXPECT_EQ(Compile("acme", "plain", true).status().code(), absl::StatusCode::kFailedPrecondition);
  StoreSpec falcon;
  falcon.set_kind(adapt::v1::STORE_KIND_FALCON);
  falcon.set_base("shared/curated");
  ASSERT_TRUE(Create("acme", "online", falcon).ok());
  EXPECT_EQ(Compile("acme", "online", true).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(EngineBaseTest, RefreshBaseIsLoggedWithItsCopy) { RefreshBaseScenario(); }

#ifdef ADAPTD_ETCD_TESTS
// The same on the durable log in etcd with states in object storage (docs/DURABLE_LOG.md): a
// refresh_base compile's copy of the base goes to an object named by its SHA-256, shared by
// every store compiled against the same base version, and a restart replays it from there.
class EngineBaseOnEtcdTest : public EngineBaseTest {
 protected:
  void Configure(adapt::v1::ServerConfig* config) override {
    if (prefix_.empty()) prefix_ = testing_util::UniqueName();
    absl::StatusOr<std::unique_ptr<S3ObjectStore>> bucket = testing_util::SharedBucket(prefix_);
    ASSERT_TRUE(bucket.ok()) << bucket.status();
    etcd::testing::EtcdCluster* etcd = testing_util::SharedEtcd();
    ASSERT_NE(etcd, nullptr);
    adapt::v1::DurableLogConfig* log = config->mutable_durable_log();
    for (const std::string& endpoint : etcd->endpoints()) log->add_etcd_endpoints(endpoint);
    log->set_etcd_prefix(absl::StrCat("/engine-base/", prefix_, "/"));
    log->set_lease_ttl_seconds(2);
    log->set_snapshot_store(absl::StrCat("s3://", testing_util::kSharedBucket, "/", prefix_));
    log->set_s3_endpoint(testing_util::SharedS3()->endpoint());
  }
  std::string prefix_;
};

TEST_F(EngineBaseOnEtcdTest, RefreshBaseIsLoggedWithASharedCopy) {
  RefreshBaseScenario();
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> bucket = testing_util::SharedBucket(prefix_);
  ASSERT_TRUE(bucket.ok());
  absl::StatusOr<std::vector<ObjectStore::Object>> copies = (*bucket)->List("readouts/");
  ASSERT_TRUE(copies.ok()) << copies.status();
  EXPECT_EQ(copies->size(), 1u);  // the one refresh, at the base's version 2
  // Two more stores take the base's version 3: one more object, which both share.
  ASSERT_TRUE(Create("acme", "two", Faast(1.0, "shared/curated")).ok());
  ASSERT_TRUE(Create("acme", "three", Faast(1.0, "shared/curated")).ok());
  Adapt("acme", "two", 4, {"b"});
  Adapt("acme", "three", 4, {"c"});
  ASSERT_TRUE(Compile("acme", "two", true).ok());
  ASSERT_TRUE(Compile("acme", "three", true).ok());
  const std::vector<float> two = Scores("acme", "two"), three = Scores("acme", "three");
  copies = (*bucket)->List("readouts/");
  ASSERT_TRUE(copies.ok());
  EXPECT_EQ(copies->size(), 2u);
  Start();
  EXPECT_EQ(Scores("acme", "two"), two);
  EXPECT_EQ(Scores("acme", "three"), three);
}
#endif

// Two members: tenant "far" lives on one, every other tenant on the other. Each reads the
// other's bases and asks it for dependants directly, as ClusterBases does over gRPC.
class TwoMembers final : public RemoteBases {
 public:
  TwoMembers(Engine* other, bool owns_far) : other_(other), owns_far_(owns_far) {}
  absl::StatusOr<std::optional<ExportedBase>> Read(const std::string& tenant,
                                                   const std::string& store,
                                                   bool for_create) override {
    if ((tenant == "far") == owns_far_) return std::nullopt;
    absl::StatusOr<ExportedBase> base = other_->ReadBaseHere(tenant, store, for_create);
    if (!base.ok()) return base.status();
    base->remote = true;
    return *std::move(base);
  }
  absl::Status CheckNoDependantsElsewhere(const std::string& name) override {
    auto [names, count] = other_->DependantsHere(name, 10);
    if (count == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("store ", name, " is the base of ", count,
                                                      " store(s) on the other member (",
                                                      absl::StrJoin(names, ", "), ")"));
  }

 private:
  Engine* const other_;
  const bool owns_far_;
};

TEST_F(EngineBaseTest, ABaseOnAnotherMemberIsReadFromThereAndKeptWhileInUse) {
  adapt::v1::ServerConfig config = DefaultConfig();
  config.set_data_dir(dir_ + "-far");
  auto created = Engine::Create(config, backend_.get(), nullptr, nullptr);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Engine> far = *std::move(created);
  TwoMembers near_side(far.get(), /*owns_far=*/false), far_side(engine_.get(), /*owns_far=*/true);
  engine_->SetRemoteBases(&near_side);
  far->SetRemoteBases(&far_side);

  on_ = far.get();
  ASSERT_TRUE(Create("far", "curated", Faast(0.5)).ok());
  Adapt("far", "curated", 30, {"billing", "returns"});
  ASSERT_TRUE(Compile("far", "curated").ok());
  ASSERT_TRUE(Create("far", "empty", Faast(0.5)).ok());
  const std::vector<float> base_scores = Scores("far", "curated");

  // Created on this member from the other's base: the same answers at once.
  on_ = engine_.get();
  absl::StatusOr<adapt::v1::StoreInfo> made = Create("acme", "support", Faast(1.0, "far/curated"));
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->spec().base(), "far/curated");
  EXPECT_EQ(made->spec().dim(), static_cast<uint32_t>(kDim));
  EXPECT_EQ(made->faast().base_version(), 1u);
  EXPECT_EQ(Scores("acme", "support"), base_scores);
  // The checks hold for a base read from elsewhere, and refusals leave nothing behind.
  StoreSpec vector = Faast(1.0, "far/curated");
  vector.mutable_output()->set_kind(OutputSpec::KIND_VECTOR);
  vector.mutable_output()->set_dim(2);
  EXPECT_EQ(Create("acme", "x", Faast(1.0, "far/nope")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Create("acme", "x", vector).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<adapt::v1::StoreInfo> early = Create("acme", "x", Faast(1.0, "far/empty"));
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition) << early.status();
  EXPECT_NE(early.status().message().find("(far/empty)"), std::string::npos) << early.status();
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("x");
  EXPECT_EQ(engine_->GetStore(get).status().code(), absl::StatusCode::kNotFound);

  // The base moves on; refresh_base reads its new version from the other member.
  on_ = far.get();
  Adapt("far", "curated", 20, {"billing", "shipping"});
  ASSERT_TRUE(Compile("far", "curated").ok());
  on_ = engine_.get();
  absl::StatusOr<adapt::v1::CompileResponse> refreshed = Compile("acme", "support", true);
  ASSERT_TRUE(refreshed.ok()) << refreshed.status();
  EXPECT_EQ(refreshed->faast().base_version(), 2u);
  EXPECT_EQ(Scores("acme", "support").size(), 3u);  // shipping came with the base

  // The base is in use on this member: its own member refuses to delete it.
  on_ = far.get();
  absl::Status refused = Delete("far", "curated");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("acme/support"), std::string::npos) << refused;
  // Without dependants, a base read for a create elsewhere (whose create may still be
  // running) is kept for the lease.
  on_ = engine_.get();
  ASSERT_TRUE(Delete("acme", "support").ok());
  on_ = far.get();
  refused = Delete("far", "curated");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("being created on another member"), std::string::npos)
      << refused;
  // A base never read for a create goes at once.
  ASSERT_TRUE(Create("far", "plain", Faast(0.5)).ok());
  EXPECT_TRUE(Delete("far", "plain").ok());
  on_ = nullptr;
  engine_->SetRemoteBases(nullptr);
  far.reset();
  std::filesystem::remove_all(dir_ + "-far");
}

// A compile's parameter overrides are for the store's own kind: faast overrides sent to a
// falcon store are refused naming the field (they were ignored before), and change nothing.
TEST_F(EngineBaseTest, CompileOverridesForAnotherKindAreRefusedNamingTheField) {
  StoreSpec falcon;
  falcon.set_kind(adapt::v1::STORE_KIND_FALCON);
  falcon.set_dim(kDim);
  ASSERT_TRUE(Create("acme", "online", falcon).ok());
  Adapt("acme", "online", 4, {"a", "b"});
  const std::vector<float> before = Scores("acme", "online");
  adapt::v1::CompileRequest compile;
  compile.mutable_faast()->set_ridge(0.5);
  absl::StatusOr<adapt::v1::CompileResponse> result = Compile("acme", "online", compile);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_EQ(result.status().message(),
            "faast: parameter overrides for faast stores; acme/online is a falcon store");
  EXPECT_EQ(Scores("acme", "online"), before);
  // Without overrides the store's own answer stands: falcon has nothing to compile.
  EXPECT_EQ(Compile("acme", "online").status().code(), absl::StatusCode::kFailedPrecondition);
  // A faast store takes them.
  ASSERT_TRUE(Create("acme", "batch", Faast(1.0)).ok());
  Adapt("acme", "batch", 4, {"a", "b"});
  result = Compile("acme", "batch", compile);
  EXPECT_TRUE(result.ok()) << result.status();
}

// What a kind says of bases (StoreKind::no_base, adopt_base) reaches the refusals: an fwpkm
// store neither starts from a base nor serves as one, and the message lists the kinds that do.
TEST_F(EngineBaseTest, AKindWithoutBasesIsRefusedBothWays) {
  StoreSpec fwpkm;
  fwpkm.set_kind(adapt::v1::STORE_KIND_FWPKM);
  fwpkm.set_dim(kDim);
  ASSERT_TRUE(Create("shared", "slots", fwpkm).ok());
  absl::StatusOr<adapt::v1::StoreInfo> from = Create("acme", "child", Faast(1.0, "shared/slots"));
  EXPECT_EQ(from.status().code(), absl::StatusCode::kInvalidArgument) << from.status();
  EXPECT_EQ(from.status().message(),
            "spec.base: shared/slots is a store of kind fwpkm; a base is a faast or falcon store");
  fwpkm.set_base("shared/slots");
  absl::StatusOr<adapt::v1::StoreInfo> own = Create("acme", "slots", fwpkm);
  EXPECT_EQ(own.status().code(), absl::StatusCode::kInvalidArgument) << own.status();
  EXPECT_NE(own.status().message().find("spec.base: fwpkm stores cannot start from a base"),
            std::string::npos)
      << own.status();
}

}  // namespace
}  // namespace adaptd
