// The service layer driven with no transport at all: a front end that serves each call on its
// own thread and waits for the service's callback, as a thread-per-connection HTTP server would.
// What it checks belongs to the service alone: admission (draining, tokens), the routing
// decision of a single server, scheduling (a call past its deadline or cancelled never runs),
// and a whole create → adapt → predict → delete session.
#include "server/service/service.h"

#include <atomic>
#include <filesystem>
#include <random>
#include <string>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/auth/sha256.h"
#include "server/config/config.h"
#include "server/service/predict_batch.h"

namespace adaptd {
namespace {

constexpr char kToken[] = "acme-token";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = kernels::MakeCpuBackend(1);
    adapt::v1::ServerConfig config = DefaultConfig();
    data_dir_ = ::testing::TempDir() + "/service-" + std::to_string(std::random_device()());
    config.set_data_dir(data_dir_);
    auto engine = Engine::Create(config, backend_.get(), nullptr);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
    SchedulerOptions scheduling;
    scheduling.run_batch = [e = engine_.get()](std::vector<std::unique_ptr<BatchItem>>& batch) {
      RunPredictBatch(*e, batch);
    };
    auto scheduler = Scheduler::Create(std::move(scheduling));
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    scheduler_ = *std::move(scheduler);
  }

  void TearDown() override {
    service_.reset();
    scheduler_->Stop();
    engine_->Shutdown();
    engine_.reset();
    std::filesystem::remove_all(data_dir_);
  }

  // The service, with tokens when `auth` (one for tenant acme only).
  Service& MakeService(bool auth, size_t max_import_bytes = size_t{1} << 20) {
    google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig> tokens;
    if (auth) {
      adapt::v1::TokenConfig* t = tokens.Add();
      t->set_sha256(Sha256Hex(kToken));
      t->add_tenants("acme");
    }
    auto authorizer = TokenAuthorizer::Create(tokens);
    EXPECT_TRUE(authorizer.ok()) << authorizer.status();
    auth_ = std::make_unique<TokenAuthorizer>(*std::move(authorizer));
    ServiceOptions options;
    options.engine = engine_.get();
    options.scheduler = scheduler_.get();
    options.auth = auth_.get();
    options.gate = &gate_;
    options.max_import_bytes = max_import_bytes;
    service_ = std::make_unique<Service>(options);
    return *service_;
  }

  // Runs one service call and waits for its callback, as a thread-per-connection front end.
  template <typename Fn>
  static absl::Status Wait(Fn call) {
    absl::Notification done;
    absl::Status result;
    call([&](const absl::Status& status) {
      result = status;
      done.Notify();
    });
    done.WaitForNotification();
    return result;
  }

  static adapt::v1::Input Vector(std::initializer_list<float> values) {
    adapt::v1::Input input;
    for (float v : values) input.mutable_vector()->add_values(v);
    return input;
  }

  static adapt::v1::CreateStoreRequest FalconLabels(const std::string& tenant,
                                                    const std::string& store) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(tenant);
    create.set_store(store);
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
    create.mutable_spec()->set_dim(3);
    create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    return create;
  }

  std::unique_ptr<kernels::Backend> backend_;
  std::string data_dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<TokenAuthorizer> auth_;
  CallGate gate_;
  std::unique_ptr<Service> service_;
};

TEST_F(ServiceTest, ASessionRunsThroughTheServiceWithoutATransport) {
  Service& service = MakeService(/*auth=*/false);
  const CallInfo call;
  AdmittedCall admitted;
  ASSERT_TRUE(service.Admit(call, "acme", &admitted).ok());
  EXPECT_EQ(gate_.active(), 1);

  // A single server serves every store here.
  absl::StatusOr<const cluster::Member*> to =
      service.Route(call, "acme", "intents", Access::kWrite);
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ(*to, nullptr);
  EXPECT_FALSE(service.ListPeers(call).has_value());

  const adapt::v1::CreateStoreRequest create = FalconLabels("acme", "intents");
  adapt::v1::StoreInfo created;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.CreateStore(call, create, &created, d); }).ok());
  EXPECT_EQ(created.store(), "intents");

  // Two messages staged in order, committed once.
  auto write = service.StartAdapt(call);
  adapt::v1::AdaptRequest first, second;
  first.set_tenant("acme");
  first.set_store("intents");
  adapt::v1::Example* e = first.add_examples();
  *e->mutable_input() = Vector({1, 0, 0});
  e->set_label("billing");
  second = first;
  second.mutable_examples(0)->set_label("shipping");
  *second.mutable_examples(0)->mutable_input() = Vector({0, 1, 0});
  ASSERT_TRUE(Wait([&](Service::Done d) { write->Stage(first, d); }).ok());
  ASSERT_TRUE(Wait([&](Service::Done d) { write->Stage(second, d); }).ok());
  adapt::v1::AdaptResponse adapted;
  ASSERT_TRUE(Wait([&](Service::Done d) { write->Commit(&adapted, d); }).ok());
  EXPECT_EQ(adapted.accepted(), 2u);

  adapt::v1::PredictRequest predict;
  predict.set_tenant("acme");
  predict.set_store("intents");
  *predict.add_inputs() = Vector({0, 1, 0});
  adapt::v1::PredictResponse predicted;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.Predict(call, predict, &predicted, d); }).ok());
  ASSERT_EQ(predicted.predictions_size(), 1);
  ASSERT_GE(predicted.predictions(0).labels_size(), 1);
  EXPECT_EQ(predicted.predictions(0).labels(0).label(), "shipping");

  adapt::v1::ListStoresRequest list;
  list.set_tenant("acme");
  adapt::v1::ListStoresResponse listed;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.ListStores(call, list, &listed, d); }).ok());
  ASSERT_EQ(listed.stores_size(), 1);

  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("acme");
  del.set_store("intents");
  adapt::v1::DeleteStoreResponse deleted;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.DeleteStore(call, del, &deleted, d); }).ok());
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("intents");
  adapt::v1::StoreInfo info;
  EXPECT_EQ(Wait([&](Service::Done d) { service.GetStore(call, get, &info, d); }).code(),
            absl::StatusCode::kNotFound);

  admitted = AdmittedCall();
  EXPECT_EQ(gate_.active(), 0);
}

TEST_F(ServiceTest, AdmissionChecksTheTokenAndTheGate) {
  Service& service = MakeService(/*auth=*/true);
  CallInfo call;
  AdmittedCall admitted;
  EXPECT_EQ(service.Admit(call, "acme", &admitted).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(gate_.active(), 0);  // a refused call gives its place back

  const std::string header = std::string("Bearer ") + kToken;
  call.authorization = header;
  EXPECT_TRUE(service.Admit(call, "acme", &admitted).ok());
  absl::Status other = service.Authorize(call, "globex");
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(other.message().find("globex"), std::string::npos) << other;

  // A base in another tenant is read with the caller's token: refused, naming the field.
  adapt::v1::CreateStoreRequest create = FalconLabels("acme", "derived");
  create.mutable_spec()->set_base("globex/shared");
  absl::Status base = service.CheckBase(call, create);
  EXPECT_EQ(base.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(base.message().rfind("spec.base: ", 0), 0u) << base;

  // The cluster's calls need a cluster (and an admin token).
  EXPECT_EQ(service.AdmitAdmin(call).code(), absl::StatusCode::kPermissionDenied);

  gate_.Close();
  AdmittedCall late;
  absl::Status closed = service.Admit(call, "acme", &late);
  EXPECT_EQ(closed.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(closed.message(), "the server is shutting down");
  admitted = AdmittedCall();
  EXPECT_EQ(gate_.active(), 0);
}

TEST_F(ServiceTest, ACallPastItsDeadlineOrCancelledNeverRuns) {
  Service& service = MakeService(/*auth=*/false);
  CallInfo late;
  late.deadline = absl::Now() - absl::Seconds(1);
  const adapt::v1::CreateStoreRequest create = FalconLabels("acme", "late");
  adapt::v1::StoreInfo created;
  EXPECT_EQ(Wait([&](Service::Done d) { service.CreateStore(late, create, &created, d); }).code(),
            absl::StatusCode::kDeadlineExceeded);

  CallInfo gone;
  gone.cancelled = [] { return true; };
  EXPECT_EQ(Wait([&](Service::Done d) { service.CreateStore(gone, create, &created, d); }).code(),
            absl::StatusCode::kCancelled);

  // Neither created the store.
  adapt::v1::GetStoreRequest get;
  get.set_tenant("acme");
  get.set_store("late");
  adapt::v1::StoreInfo info;
  EXPECT_EQ(Wait([&](Service::Done d) { service.GetStore(CallInfo(), get, &info, d); }).code(),
            absl::StatusCode::kNotFound);

  // A write whose caller gave up before the commit commits nothing.
  ASSERT_TRUE(
      Wait([&](Service::Done d) { service.CreateStore(CallInfo(), create, &created, d); }).ok());
  std::atomic<bool> cancelled{false};
  CallInfo call;
  call.cancelled = [&] { return cancelled.load(); };
  auto write = service.StartAdapt(call);
  adapt::v1::AdaptRequest request;
  request.set_tenant("acme");
  request.set_store("late");
  adapt::v1::Example* e = request.add_examples();
  *e->mutable_input() = Vector({1, 0, 0});
  e->set_label("billing");
  ASSERT_TRUE(Wait([&](Service::Done d) { write->Stage(request, d); }).ok());
  cancelled = true;
  adapt::v1::AdaptResponse adapted;
  EXPECT_EQ(Wait([&](Service::Done d) { write->Commit(&adapted, d); }).code(),
            absl::StatusCode::kCancelled);
  ASSERT_TRUE(Wait([&](Service::Done d) { service.GetStore(CallInfo(), get, &info, d); }).ok());
  EXPECT_EQ(info.examples(), 0u);
}

TEST_F(ServiceTest, AnExportImportsAsANewStoreAndBadChunksAreRefused) {
  Service& service = MakeService(/*auth=*/false, /*max_import_bytes=*/4096);
  const CallInfo call;
  const adapt::v1::CreateStoreRequest create = FalconLabels("acme", "a");
  adapt::v1::StoreInfo created;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.CreateStore(call, create, &created, d); }).ok());
  adapt::v1::ExportStoreRequest exported;
  exported.set_tenant("acme");
  exported.set_store("a");
  std::string file;
  ASSERT_TRUE(Wait([&](Service::Done d) { service.Export(call, exported, &file, d); }).ok());
  ASSERT_FALSE(file.empty());
  ASSERT_LE(file.size(), 4096u);

  // In two chunks, the second naming no store.
  auto import = service.StartImport(call);
  EXPECT_FALSE(import->named());
  adapt::v1::StoreChunk first, second;
  first.set_tenant("acme");
  first.set_store("b");
  first.set_data(file.substr(0, file.size() / 2));
  second.set_data(file.substr(file.size() / 2));
  ASSERT_TRUE(import->Add(first).ok());
  EXPECT_TRUE(import->named());
  ASSERT_TRUE(import->Add(second).ok());
  adapt::v1::StoreInfo imported;
  ASSERT_TRUE(Wait([&](Service::Done d) { import->Commit(&imported, d); }).ok());
  EXPECT_EQ(imported.store(), "b");
  EXPECT_EQ(imported.spec().kind(), adapt::v1::STORE_KIND_FALCON);

  // A later chunk naming another store, and a file past the limit, are refused by name.
  auto other = service.StartImport(call);
  ASSERT_TRUE(other->Add(first).ok());
  adapt::v1::StoreChunk elsewhere = second;
  elsewhere.set_store("c");
  absl::Status mismatch = other->Add(elsewhere);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.message(), "store: later chunks must name the same store as the first");
  adapt::v1::StoreChunk big = first;
  big.set_data(std::string(4097, 'x'));
  absl::Status too_big = service.StartImport(call)->Add(big);
  EXPECT_EQ(too_big.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(too_big.message(), "data: the snapshot exceeds the import limit of 4096 bytes");
}

TEST_F(ServiceTest, ClusterCallsOnASingleServerAreRefused) {
  Service& service = MakeService(/*auth=*/false);
  absl::Status status = service.AdmitAdmin(CallInfo());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("not a member of a cluster"), std::string::npos) << status;
}

}  // namespace
}  // namespace adaptd
