// Per-tenant quotas through the real server: stores, memory bytes, examples per second and the
// message size. Each refusal is RESOURCE_EXHAUSTED naming the limit and its value, and leaves
// the tenant's stores as they were.
#include "gtest/gtest.h"
#include "tests/security/security_server.h"

namespace adaptd::testing {
namespace {

adapt::v1::StoreSpec Faast(uint32_t dim) {
  adapt::v1::StoreSpec spec;
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.set_dim(dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  spec.mutable_faast()->set_auto_compile_every(0);
  spec.mutable_faast()->set_auto_compile_delay_ms(0);
  return spec;
}

grpc::Status Create(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                    const std::string& store, uint32_t dim = 8,
                    adapt::v1::StoreInfo* info = nullptr) {
  adapt::v1::CreateStoreRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  *request.mutable_spec() = Faast(dim);
  adapt::v1::StoreInfo ignored;
  return stub.CreateStore(TokenContext("").get(), request, info != nullptr ? info : &ignored);
}

// `count` examples of dimension `dim`, labels "l<first>", "l<first+1>", ...
grpc::Status Adapt(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                   const std::string& store, int count, uint32_t dim = 8, int first_label = 0) {
  adapt::v1::AdaptRequest m;
  m.set_tenant(tenant);
  m.set_store(store);
  for (int i = 0; i < count; ++i) {
    auto* e = m.add_examples();
    for (uint32_t k = 0; k < dim; ++k)
      e->mutable_input()->mutable_vector()->add_values(k == i % dim);
    e->set_label("l" + std::to_string(first_label + i));
  }
  auto context = TokenContext("");
  adapt::v1::AdaptResponse response;
  auto writer = stub.Adapt(context.get(), &response);
  writer->Write(m);
  writer->WritesDone();
  return writer->Finish();
}

adapt::v1::StoreInfo Get(adapt::v1::Adaptation::Stub& stub, const std::string& tenant,
                         const std::string& store) {
  adapt::v1::GetStoreRequest request;
  request.set_tenant(tenant);
  request.set_store(store);
  adapt::v1::StoreInfo info;
  EXPECT_TRUE(stub.GetStore(TokenContext("").get(), request, &info).ok());
  return info;
}

void ExpectExhausted(const grpc::Status& status, const std::string& limit,
                     const std::string& value) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_NE(status.error_message().find(limit), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find(value), std::string::npos) << status.error_message();
}

TEST(Quota, MaxStoresPerTenantWithOverride) {
  adapt::v1::ServerConfig config = TestConfig();
  config.mutable_default_quota()->set_max_stores(2);
  (*config.mutable_tenant_quotas())["big"].set_max_stores(3);
  SecurityServer server(config);
  ASSERT_NE(server.server(), nullptr);
  auto& stub = server.stub();
  EXPECT_TRUE(Create(stub, "small", "a").ok());
  EXPECT_TRUE(Create(stub, "small", "b").ok());
  ExpectExhausted(Create(stub, "small", "c"), "max_stores", "2");
  // At the limit, a name taken already is answered as that.
  const grpc::Status again = Create(stub, "small", "a");
  EXPECT_EQ(again.error_code(), grpc::StatusCode::ALREADY_EXISTS) << again.error_message();
  EXPECT_EQ(again.error_message(), "store small/a already exists");
  for (const char* name : {"a", "b", "c"}) EXPECT_TRUE(Create(stub, "big", name).ok()) << name;
  ExpectExhausted(Create(stub, "big", "d"), "max_stores", "3");
  // The refused store does not exist; a delete frees a place.
  adapt::v1::ListStoresRequest list;
  list.set_tenant("small");
  adapt::v1::ListStoresResponse stores;
  ASSERT_TRUE(stub.ListStores(TokenContext("").get(), list, &stores).ok());
  EXPECT_EQ(stores.stores_size(), 2);
  adapt::v1::DeleteStoreRequest del;
  del.set_tenant("small");
  del.set_store("a");
  adapt::v1::DeleteStoreResponse deleted;
  ASSERT_TRUE(stub.DeleteStore(TokenContext("").get(), del, &deleted).ok());
  EXPECT_TRUE(Create(stub, "small", "c").ok());
}

TEST(Quota, MaxMemoryBytes) {
  // The memory of a store after one write of 64 labels, measured without limits.
  uint64_t written_bytes = 0;
  {
    SecurityServer probe(TestConfig());
    ASSERT_NE(probe.server(), nullptr);
    ASSERT_TRUE(Create(probe.stub(), "t", "s", 64).ok());
    ASSERT_TRUE(Adapt(probe.stub(), "t", "s", 64, 64).ok());
    written_bytes = Get(probe.stub(), "t", "s").memory_bytes();
    ASSERT_GT(written_bytes, 0u);
  }
  adapt::v1::ServerConfig config = TestConfig();
  const uint64_t limit = written_bytes / 2;
  (*config.mutable_tenant_quotas())["t"].set_max_memory_bytes(limit);
  SecurityServer server(config);
  ASSERT_NE(server.server(), nullptr);
  auto& stub = server.stub();
  ASSERT_TRUE(Create(stub, "t", "s", 64).ok());
  // Within the limit, a write is accepted; it takes the tenant past the limit.
  ASSERT_TRUE(Adapt(stub, "t", "s", 64, 64).ok());
  const adapt::v1::StoreInfo before = Get(stub, "t", "s");
  ASSERT_GT(before.memory_bytes(), limit);
  // Over it, the next write and any new store are refused, and nothing changes.
  ExpectExhausted(Adapt(stub, "t", "s", 1, 64, 1000), "max_memory_bytes", std::to_string(limit));
  ExpectExhausted(Create(stub, "t", "s2", 64), "max_memory_bytes", std::to_string(limit));
  const adapt::v1::StoreInfo after = Get(stub, "t", "s");
  EXPECT_EQ(after.examples(), before.examples());
  EXPECT_EQ(after.labels_size(), before.labels_size());
  EXPECT_EQ(after.version(), before.version());
  // Other tenants are not limited.
  EXPECT_TRUE(Create(stub, "other", "s2", 64).ok());
  EXPECT_TRUE(Adapt(stub, "other", "s2", 64, 64).ok());
}

TEST(Quota, ExamplesPerSecond) {
  adapt::v1::ServerConfig config = TestConfig();
  // A rate so small that no refill happens during the test, with a burst of 10.
  config.mutable_default_quota()->set_examples_per_second(0.001);
  config.mutable_default_quota()->set_examples_burst(10);
  (*config.mutable_tenant_quotas())["fast"].set_examples_per_second(0);  // unlimited
  SecurityServer server(config);
  ASSERT_NE(server.server(), nullptr);
  auto& stub = server.stub();
  ASSERT_TRUE(Create(stub, "t", "s").ok());
  ASSERT_TRUE(Create(stub, "fast", "s").ok());
  EXPECT_TRUE(Adapt(stub, "t", "s", 6).ok());
  EXPECT_TRUE(Adapt(stub, "t", "s", 4).ok());
  const adapt::v1::StoreInfo before = Get(stub, "t", "s");
  EXPECT_EQ(before.examples(), 10u);
  ExpectExhausted(Adapt(stub, "t", "s", 1), "examples_per_second", "0.001");
  ExpectExhausted(Adapt(stub, "t", "s", 11), "examples_per_second", "burst");
  EXPECT_EQ(Get(stub, "t", "s").examples(), 10u);
  EXPECT_EQ(Get(stub, "t", "s").version(), before.version());
  EXPECT_TRUE(Adapt(stub, "fast", "s", 100).ok());
}

TEST(Quota, MaxMessageSize) {
  adapt::v1::ServerConfig config = TestConfig();
  config.set_max_message_bytes(16 << 10);
  SecurityServer server(config);
  ASSERT_NE(server.server(), nullptr);
  auto& stub = server.stub();
  ASSERT_TRUE(Create(stub, "t", "s", 512).ok());
  // 40 examples × 512 floats ≈ 80 KiB > 16 KiB.
  const grpc::Status status = Adapt(stub, "t", "s", 40, 512);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(Get(stub, "t", "s").examples(), 0u);
}

}  // namespace
}  // namespace adaptd::testing
