// Tenant isolation: every RPC of adapt.v1.Adaptation, called with another tenant's token, is
// PERMISSION_DENIED; without a token or with an unknown one, UNAUTHENTICATED; the owner's and
// the admin's tokens succeed. Denied calls leave the target store unchanged.
#include <atomic>
#include <functional>
#include <map>

#include "gtest/gtest.h"
#include "server/auth/sha256.h"
#include "tests/security/security_server.h"

namespace adaptd::testing {
namespace {

constexpr char kAlpha[] = "alpha-token-1f3b";
constexpr char kBeta[] = "beta-token-77aa";
constexpr char kAdmin[] = "admin-token-c0de";

adapt::v1::StoreSpec Faast() {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.mutable_faast()->set_auto_compile_every(0);
  spec.mutable_faast()->set_auto_compile_delay_ms(0);
  return spec;
}

adapt::v1::Example Example(float a, float b, const std::string& label) {
  adapt::v1::Example e;
  e.mutable_input()->mutable_vector()->add_values(a);
  e.mutable_input()->mutable_vector()->add_values(b);
  e.set_label(label);
  return e;
}

adapt::v1::ServerConfig AuthConfig() {
  adapt::v1::ServerConfig config = TestConfig();
  auto* alpha = config.add_tokens();
  alpha->set_sha256(Sha256Hex(kAlpha));
  alpha->add_tenants("alpha");
  auto* beta = config.add_tokens();
  beta->set_sha256(Sha256Hex(kBeta));
  beta->add_tenants("beta");
  auto* admin = config.add_tokens();
  admin->set_sha256(Sha256Hex(kAdmin));
  admin->set_admin(true);
  return config;
}

// One RPC, called with a token on a tenant.
using Rpc = std::function<grpc::Status(const std::string& token, const std::string& tenant)>;

class AuthzTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new SecurityServer(AuthConfig());
    for (const char* tenant : {"alpha", "beta"}) {
      ASSERT_TRUE(CreateAs(kAdmin, tenant, "s").ok());
      ASSERT_TRUE(AdaptAs(kAdmin, {tenant, tenant}).ok());
      adapt::v1::CompileRequest compile;
      compile.set_tenant(tenant);
      compile.set_store("s");
      adapt::v1::CompileResponse response;
      ASSERT_TRUE(server_->stub().Compile(TokenContext(kAdmin).get(), compile, &response).ok());
    }
    adapt::v1::ExportStoreRequest request;
    request.set_tenant("alpha");
    request.set_store("s");
    auto context = TokenContext(kAdmin);
    auto reader = server_->stub().ExportStore(context.get(), request);
    adapt::v1::StoreChunk chunk;
    while (reader->Read(&chunk)) snapshot_->append(chunk.data());
    ASSERT_TRUE(reader->Finish().ok());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static adapt::v1::Adaptation::Stub& stub() { return server_->stub(); }

  static grpc::Status CreateAs(const std::string& token, const std::string& tenant,
                               const std::string& store) {
    adapt::v1::CreateStoreRequest request;
    request.set_tenant(tenant);
    request.set_store(store);
    *request.mutable_spec() = Faast();
    adapt::v1::StoreInfo info;
    return stub().CreateStore(TokenContext(token).get(), request, &info);
  }

  // One Adapt stream whose i-th message names tenants[i] (store "s"), one example each.
  static grpc::Status AdaptAs(const std::string& token, const std::vector<std::string>& tenants) {
    auto context = TokenContext(token);
    adapt::v1::AdaptResponse response;
    auto writer = stub().Adapt(context.get(), &response);
    for (size_t i = 0; i < tenants.size(); ++i) {
      adapt::v1::AdaptRequest m;
      m.set_tenant(tenants[i]);
      m.set_store("s");
      *m.add_examples() = Example(1.0f * (i + 1), 0.5f, i % 2 == 0 ? "a" : "b");
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  // A prediction id of tenant/`store`, a faast store with a feedback window made, taught and
  // read by the admin (docs/FEEDBACK.md).
  static std::string ServedPredictionId(const std::string& tenant, const std::string& store) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant(tenant);
    create.set_store(store);
    *create.mutable_spec() = Faast();
    create.mutable_spec()->mutable_feedback()->set_count(10);
    adapt::v1::StoreInfo info;
    EXPECT_TRUE(stub().CreateStore(TokenContext(kAdmin).get(), create, &info).ok());
    auto context = TokenContext(kAdmin);
    adapt::v1::AdaptResponse adapted;
    auto writer = stub().Adapt(context.get(), &adapted);
    adapt::v1::AdaptRequest m;
    m.set_tenant(tenant);
    m.set_store(store);
    *m.add_examples() = Example(1.0f, 0.5f, "a");
    *m.add_examples() = Example(0.5f, 1.0f, "b");
    writer->Write(m);
    writer->WritesDone();
    EXPECT_TRUE(writer->Finish().ok());
    adapt::v1::CompileRequest compile;
    compile.set_tenant(tenant);
    compile.set_store(store);
    adapt::v1::CompileResponse compiled;
    EXPECT_TRUE(stub().Compile(TokenContext(kAdmin).get(), compile, &compiled).ok());
    adapt::v1::PredictRequest predict;
    predict.set_tenant(tenant);
    predict.set_store(store);
    *predict.add_inputs() = Example(1.0f, 0.0f, "a").input();
    adapt::v1::PredictResponse predicted;
    EXPECT_TRUE(stub().Predict(TokenContext(kAdmin).get(), predict, &predicted).ok());
    return predicted.predictions_size() > 0 ? predicted.predictions(0).prediction_id() : "";
  }

  static std::map<std::string, Rpc> AllRpcs() {
    static std::atomic<int> counter{0};
    std::map<std::string, Rpc> rpcs;
    rpcs["CreateStore"] = [](const std::string& token, const std::string& tenant) {
      return CreateAs(token, tenant, "new" + std::to_string(counter++));
    };
    rpcs["GetStore"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::GetStoreRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      adapt::v1::StoreInfo info;
      return stub().GetStore(TokenContext(token).get(), request, &info);
    };
    rpcs["ListStores"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::ListStoresRequest request;
      request.set_tenant(tenant);
      adapt::v1::ListStoresResponse response;
      return stub().ListStores(TokenContext(token).get(), request, &response);
    };
    rpcs["PinStore"] = [](const std::string& token, const std::string& tenant) {
      // Unpinning: the store's pin is unchanged either way, so the fingerprint holds.
      adapt::v1::PinStoreRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      request.set_pinned(false);
      adapt::v1::StoreInfo info;
      return stub().PinStore(TokenContext(token).get(), request, &info);
    };
    rpcs["DeleteStore"] = [](const std::string& token, const std::string& tenant) {
      // A store of its own, made by the admin, so that a successful delete hurts nothing.
      const std::string name = "victim" + std::to_string(counter++);
      EXPECT_TRUE(CreateAs(kAdmin, tenant, name).ok());
      adapt::v1::DeleteStoreRequest request;
      request.set_tenant(tenant);
      request.set_store(name);
      adapt::v1::DeleteStoreResponse response;
      return stub().DeleteStore(TokenContext(token).get(), request, &response);
    };
    rpcs["Adapt"] = [](const std::string& token, const std::string& tenant) {
      return AdaptAs(token, {tenant});
    };
    rpcs["Compile"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::CompileRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      adapt::v1::CompileResponse response;
      return stub().Compile(TokenContext(token).get(), request, &response);
    };
    rpcs["Forget"] = [](const std::string& token, const std::string& tenant) {
      // Where the forget is to succeed, first adds (as the admin) the example it forgets, so
      // the store keeps its contents; a refused forget must change nothing by itself.
      const bool allowed = token == kAdmin || (token == kAlpha && tenant == "alpha") ||
                           (token == kBeta && tenant == "beta");
      if (allowed) {
        EXPECT_TRUE(AdaptAs(kAdmin, {tenant}).ok());
      }
      auto context = TokenContext(token);
      adapt::v1::ForgetResponse response;
      auto writer = stub().Forget(context.get(), &response);
      adapt::v1::ForgetRequest m;
      m.set_tenant(tenant);
      m.set_store("s");
      *m.add_examples() = Example(1.0f, 0.5f, "a");
      writer->Write(m);
      writer->WritesDone();
      return writer->Finish();
    };
    rpcs["Feedback"] = [](const std::string& token, const std::string& tenant) {
      // Where the call is to succeed, on a store of its own with a served prediction; a
      // refused call names "s", which must stay as it was.
      const bool allowed = token == kAdmin || (token == kAlpha && tenant == "alpha") ||
                           (token == kBeta && tenant == "beta");
      adapt::v1::FeedbackRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      adapt::v1::FeedbackItem* item = request.add_items();
      item->set_prediction_id("p1.8000000000000001.0000000000000001.1");
      item->set_label("a");
      if (allowed) {
        request.set_store("feedback" + std::to_string(counter++));
        item->set_prediction_id(ServedPredictionId(tenant, request.store()));
      }
      adapt::v1::FeedbackResponse response;
      return stub().Feedback(TokenContext(token).get(), request, &response);
    };
    rpcs["Predict"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::PredictRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      auto* v = request.add_inputs()->mutable_vector();
      v->add_values(1);
      v->add_values(0);
      adapt::v1::PredictResponse response;
      return stub().Predict(TokenContext(token).get(), request, &response);
    };
    rpcs["PredictStream"] = [](const std::string& token, const std::string& tenant) {
      auto context = TokenContext(token);
      auto stream = stub().PredictStream(context.get());
      adapt::v1::PredictRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      auto* v = request.add_inputs()->mutable_vector();
      v->add_values(1);
      v->add_values(0);
      adapt::v1::PredictResponse response;
      if (stream->Write(request)) stream->Read(&response);
      stream->WritesDone();
      while (stream->Read(&response)) {
      }
      return stream->Finish();
    };
    rpcs["ExportStore"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::ExportStoreRequest request;
      request.set_tenant(tenant);
      request.set_store("s");
      auto context = TokenContext(token);
      auto reader = stub().ExportStore(context.get(), request);
      adapt::v1::StoreChunk chunk;
      while (reader->Read(&chunk)) {
      }
      return reader->Finish();
    };
    rpcs["ImportStore"] = [](const std::string& token, const std::string& tenant) {
      auto context = TokenContext(token);
      adapt::v1::StoreInfo info;
      auto writer = stub().ImportStore(context.get(), &info);
      adapt::v1::StoreChunk chunk;
      chunk.set_tenant(tenant);
      chunk.set_store("imported" + std::to_string(counter++));
      chunk.set_data(*snapshot_);
      writer->Write(chunk);
      writer->WritesDone();
      return writer->Finish();
    };
    // Admin-only, and for clusters: a tenant's token is refused whatever the tenant.
    rpcs["ClusterStatus"] = [](const std::string& token, const std::string&) {
      adapt::v1::ClusterStatusResponse response;
      return stub().ClusterStatus(TokenContext(token).get(), adapt::v1::ClusterStatusRequest(),
                                  &response);
    };
    rpcs["DrainMember"] = [](const std::string& token, const std::string&) {
      adapt::v1::DrainMemberRequest request;
      request.set_member("m");
      adapt::v1::DrainMemberResponse response;
      return stub().DrainMember(TokenContext(token).get(), request, &response);
    };
    rpcs["ClusterQuota"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::ClusterQuotaRequest request;
      request.set_op(adapt::v1::ClusterQuotaRequest::STORE_NAMES);
      request.set_tenant(tenant);
      adapt::v1::ClusterQuotaResponse response;
      return stub().ClusterQuota(TokenContext(token).get(), request, &response);
    };
    rpcs["ClusterBase"] = [](const std::string& token, const std::string& tenant) {
      adapt::v1::ClusterBaseRequest request;
      request.set_op(adapt::v1::ClusterBaseRequest::DEPENDANTS);
      request.set_tenant(tenant);
      request.set_store("s");
      adapt::v1::ClusterBaseResponse response;
      return stub().ClusterBase(TokenContext(token).get(), request, &response);
    };
    rpcs["Ping"] = [](const std::string& token, const std::string&) {
      adapt::v1::PingResponse response;
      return stub().Ping(TokenContext(token).get(), adapt::v1::PingRequest(), &response);
    };
    // Any authenticated caller; names no tenant.
    rpcs["ClusterRoutes"] = [](const std::string& token, const std::string&) {
      adapt::v1::ClusterRoutesResponse response;
      return stub().ClusterRoutes(TokenContext(token).get(), adapt::v1::ClusterRoutesRequest(),
                                  &response);
    };
    rpcs["ListEncoders"] = [](const std::string& token, const std::string&) {
      adapt::v1::ListEncodersResponse response;
      return stub().ListEncoders(TokenContext(token).get(), adapt::v1::ListEncodersRequest(),
                                 &response);
    };
    return rpcs;
  }

  // What a reader can see of tenant/s.
  static std::string Fingerprint(const std::string& tenant) {
    adapt::v1::GetStoreRequest request;
    request.set_tenant(tenant);
    request.set_store("s");
    adapt::v1::StoreInfo info;
    EXPECT_TRUE(stub().GetStore(TokenContext(kAdmin).get(), request, &info).ok());
    info.clear_memory_bytes();
    info.mutable_faast()->clear_compile_seconds();
    return info.SerializeAsString();
  }

  static SecurityServer* server_;
  static std::string* snapshot_;
};

SecurityServer* AuthzTest::server_ = nullptr;
std::string* AuthzTest::snapshot_ = new std::string();

TEST_F(AuthzTest, EveryServiceMethodIsCovered) {
  const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("adapt.v1.Adaptation");
  ASSERT_NE(service, nullptr);
  const auto rpcs = AllRpcs();
  EXPECT_EQ(static_cast<size_t>(service->method_count()), rpcs.size());
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_TRUE(rpcs.contains(service->method(i)->name())) << service->method(i)->name();
  }
}

TEST_F(AuthzTest, AnotherTenantsTokenIsPermissionDenied) {
  const std::string before = Fingerprint("beta");
  for (const auto& [name, rpc] : AllRpcs()) {
    if (name == "ListEncoders" || name == "Ping" || name == "ClusterRoutes") {
      continue;  // name no tenant
    }
    const grpc::Status status = rpc(kAlpha, "beta");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << name << ": " << status.error_message();
    EXPECT_EQ(status.error_message().find(kAlpha), std::string::npos) << name;
    EXPECT_EQ(rpc(kBeta, "alpha").error_code(), grpc::StatusCode::PERMISSION_DENIED) << name;
  }
  EXPECT_EQ(Fingerprint("beta"), before);
}

TEST_F(AuthzTest, MissingOrUnknownTokenIsUnauthenticated) {
  const std::string before = Fingerprint("beta");
  for (const auto& [name, rpc] : AllRpcs()) {
    for (const std::string token : {"", "not-a-known-token", "alpha-token-1f3"}) {
      const grpc::Status status = rpc(token, "beta");
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << name << " with '" << token << "': " << status.error_message();
    }
  }
  // Not even the plaintext channel's bare metadata without "Bearer" passes.
  adapt::v1::ListEncodersResponse response;
  grpc::ClientContext context;
  context.AddMetadata("authorization", kAdmin);
  EXPECT_EQ(stub().ListEncoders(&context, {}, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Fingerprint("beta"), before);
}

TEST_F(AuthzTest, OwnerAndAdminSucceed) {
  for (const auto& [name, rpc] : AllRpcs()) {
    if (name == "ClusterStatus" || name == "DrainMember" || name == "ClusterQuota" ||
        name == "ClusterBase") {
      // Admin only; past authorization this single server says it is not in a cluster.
      const grpc::Status own = rpc(kAlpha, "alpha");
      EXPECT_EQ(own.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name;
      EXPECT_EQ(own.error_message(), "cluster calls need an admin token (docs/SECURITY.md)");
      const grpc::Status admin = rpc(kAdmin, "alpha");
      EXPECT_EQ(admin.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << name;
      EXPECT_NE(admin.error_message().find("not a member of a cluster"), std::string::npos);
      continue;
    }
    if (name == "ClusterRoutes") {
      // Any token gets past authentication; this single server has no route table.
      for (const std::string& token : {kAlpha, kAdmin}) {
        const grpc::Status status = rpc(token, "alpha");
        EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << status.error_message();
        EXPECT_NE(status.error_message().find("not a member of a cluster on etcd"),
                  std::string::npos);
      }
      continue;
    }
    const grpc::Status own = rpc(kAlpha, "alpha");
    EXPECT_TRUE(own.ok()) << name << ": " << own.error_message();
    for (const char* tenant : {"alpha", "beta"}) {
      const grpc::Status admin = rpc(kAdmin, tenant);
      EXPECT_TRUE(admin.ok()) << name << " on " << tenant << ": " << admin.error_message();
    }
  }
}

TEST_F(AuthzTest, LaterStreamMessagesAreCheckedToo) {
  const std::string alpha = Fingerprint("alpha"), beta = Fingerprint("beta");
  // Adapt: the first message is alpha's own, the second names beta.
  const grpc::Status adapt = AdaptAs(kAlpha, {"alpha", "beta"});
  EXPECT_EQ(adapt.error_code(), grpc::StatusCode::PERMISSION_DENIED) << adapt.error_message();

  // PredictStream: a second request for beta on the same stream.
  auto context = TokenContext(kAlpha);
  auto stream = stub().PredictStream(context.get());
  for (const char* tenant : {"alpha", "beta"}) {
    adapt::v1::PredictRequest request;
    request.set_tenant(tenant);
    request.set_store("s");
    request.add_inputs()->mutable_vector()->add_values(1);
    request.mutable_inputs(0)->mutable_vector()->add_values(0);
    adapt::v1::PredictResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) break;
    EXPECT_STREQ(tenant, "alpha");  // only alpha's request is answered
  }
  stream->WritesDone();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // ImportStore: the first chunk names nothing, a later one names beta.
  auto import_context = TokenContext(kAlpha);
  adapt::v1::StoreInfo info;
  auto writer = stub().ImportStore(import_context.get(), &info);
  adapt::v1::StoreChunk first;
  first.set_data(snapshot_->substr(0, 16));
  writer->Write(first);
  adapt::v1::StoreChunk second;
  second.set_tenant("beta");
  second.set_store("stolen");
  second.set_data(snapshot_->substr(16));
  writer->Write(second);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);

  EXPECT_EQ(Fingerprint("alpha"), alpha);
  EXPECT_EQ(Fingerprint("beta"), beta);
  adapt::v1::GetStoreRequest get;
  get.set_tenant("beta");
  get.set_store("stolen");
  EXPECT_EQ(stub().GetStore(TokenContext(kAdmin).get(), get, &info).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// StoreSpec.base reads another store: a base in another tenant needs a token that reaches that
// tenant too (PERMISSION_DENIED naming spec.base, and no store is created).
TEST_F(AuthzTest, ABaseInAnotherTenantNeedsATokenThatReachesIt) {
  auto create = [](const std::string& token, const std::string& store, const std::string& base) {
    adapt::v1::CreateStoreRequest request;
    request.set_tenant("alpha");
    request.set_store(store);
    *request.mutable_spec() = Faast();
    request.mutable_spec()->mutable_faast()->set_ridge(1.0);
    request.mutable_spec()->set_base(base);
    adapt::v1::StoreInfo info;
    return stub().CreateStore(TokenContext(token).get(), request, &info);
  };
  const grpc::Status denied = create(kAlpha, "from-beta", "beta/s");
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message().rfind("spec.base: ", 0), 0u) << denied.error_message();
  adapt::v1::GetStoreRequest get;
  get.set_tenant("alpha");
  get.set_store("from-beta");
  adapt::v1::StoreInfo info;
  EXPECT_EQ(stub().GetStore(TokenContext(kAdmin).get(), get, &info).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // The tenant's own base, and another's with a token that reaches both.
  const grpc::Status own = create(kAlpha, "from-own", "s");
  EXPECT_TRUE(own.ok()) << own.error_message();
  const grpc::Status admin = create(kAdmin, "from-beta-admin", "beta/s");
  EXPECT_TRUE(admin.ok()) << admin.error_message();
}

TEST(AuthOff, NoTokensConfiguredAllowsEveryCaller) {
  SecurityServer server(TestConfig());
  ASSERT_NE(server.server(), nullptr);
  EXPECT_FALSE(server.server()->auth_enabled());
  adapt::v1::CreateStoreRequest request;
  request.set_tenant("anyone");
  request.set_store("s");
  *request.mutable_spec() = Faast();
  adapt::v1::StoreInfo info;
  EXPECT_TRUE(server.stub().CreateStore(TokenContext("").get(), request, &info).ok());
  EXPECT_TRUE(
      server.stub().CreateStore(TokenContext("whatever").get(), request, &info).error_code() ==
      grpc::StatusCode::ALREADY_EXISTS);
}

TEST(AuthConfig, BadTokenHashFailsStartUp) {
  adapt::v1::ServerConfig config = TestConfig();
  config.add_tokens()->set_sha256("plaintext-secret");
  config.mutable_tokens(0)->add_tenants("t");
  auto server = AdaptdServer::Start(config);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("tokens[0].sha256"), absl::string_view::npos);
  EXPECT_EQ(server.status().message().find("plaintext-secret"), absl::string_view::npos);
}

}  // namespace
}  // namespace adaptd::testing
