// Every RPC of adapt.v1.Adaptation has its place in the HTTP front end: a public unary call is
// served, Adapt, Forget and ImportStore read their body as it arrives, ExportStore answers a
// download, another streaming call waits for its slice, a members' call is not exposed. An RPC
// added to the proto without a row in server/http/api.cc fails here.
#include "server/http/api.h"

#include "adapt/v1/adapt.pb.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "server/http/delimited_body.h"

namespace adaptd::http {
namespace {

TEST(HttpApi, EveryRpcHasItsPlace) {
  const google::protobuf::ServiceDescriptor* service =
      adapt::v1::PingRequest::descriptor()->file()->FindServiceByName("Adaptation");
  ASSERT_NE(service, nullptr);
  ASSERT_GT(service->method_count(), 15);
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* method = service->method(i);
    const MethodKind kind = Api::KindOf(method->name());
    if (method->name() == "Adapt" || method->name() == "Forget" ||
        method->name() == "ImportStore") {
      EXPECT_EQ(kind, MethodKind::kStreamed) << method->name();
    } else if (method->name() == "ExportStore") {
      EXPECT_EQ(kind, MethodKind::kServed) << method->name();
    } else if (method->client_streaming() || method->server_streaming()) {
      EXPECT_EQ(kind, MethodKind::kLaterSlice) << method->name();
    } else {
      EXPECT_TRUE(kind == MethodKind::kServed || kind == MethodKind::kMembersOnly)
          << method->name() << ": a unary RPC the HTTP front end does not know";
    }
  }
  EXPECT_EQ(Api::KindOf("ClusterQuota"), MethodKind::kMembersOnly);
  EXPECT_EQ(Api::KindOf("Predict"), MethodKind::kServed);
  EXPECT_EQ(Api::KindOf("predict"), MethodKind::kUnknown);
  EXPECT_TRUE(Api::ReadsOwnBody("POST", "/v1/Adapt"));
  EXPECT_TRUE(Api::ReadsOwnBody("POST", "/v1/Forget"));
  EXPECT_TRUE(Api::ReadsOwnBody("POST", "/v1/ImportStore"));
  EXPECT_FALSE(Api::ReadsOwnBody("POST", "/v1/ExportStore"));
  EXPECT_TRUE(Api::HasCallLimit("/v1/Adapt"));
  EXPECT_FALSE(Api::HasCallLimit("/v1/ImportStore"));
  EXPECT_FALSE(Api::ReadsOwnBody("GET", "/v1/Adapt"));
  EXPECT_FALSE(Api::ReadsOwnBody("POST", "/v1/Predict"));
}

// An upload whose snapshot passes the service's import limit answers 413 naming the limit, read
// no further (the service's refusal comes before any import: no engine is needed to see it).
TEST(HttpApi, AnImportPastTheImportLimitIs413) {
  ServiceOptions options;
  options.max_import_bytes = 4096;
  Service service(options);
  const Api api(&service);
  adapt::v1::StoreChunk first, second;
  first.set_tenant("acme");
  first.set_store("big");
  first.set_data(std::string(3000, 'x'));
  second.set_data(std::string(1097, 'y'));
  Request request;
  request.method = "POST";
  request.path = "/v1/ImportStore";
  AppendDelimited(first, &request.body);
  AppendDelimited(second, &request.body);
  const Reply reply = api.Serve(request);
  EXPECT_EQ(reply.status, 413) << reply.body;
  EXPECT_NE(reply.body.find("RESOURCE_EXHAUSTED"), std::string::npos) << reply.body;
  EXPECT_NE(reply.body.find("the import limit of 4096 bytes"), std::string::npos) << reply.body;
}

// Readiness: /readyz and the Open Inference Protocol's /v2/health/ready answer 503 while the
// server is not ready (a member of a cluster on etcd before it holds its shards) and once it
// drains, with the reason; liveness answers 200 throughout.
TEST(HttpApi, ReadinessFollowsSetReadyAndDrain) {
  Service service{ServiceOptions()};
  Api api(&service);
  auto get = [&api](const std::string& path) {
    Request request;
    request.method = "GET";
    request.path = path;
    return api.Serve(request);
  };
  EXPECT_EQ(get("/readyz").status, 200);
  EXPECT_EQ(get("/v2/health/ready").status, 200);
  api.SetReady(false);
  EXPECT_EQ(get("/readyz").status, 503);
  const Reply oip = get("/v2/health/ready");
  EXPECT_EQ(oip.status, 503);
  EXPECT_NE(oip.body.find("ready once it holds its shards"), std::string::npos) << oip.body;
  EXPECT_EQ(get("/healthz").status, 200);
  EXPECT_EQ(get("/v2/health/live").status, 200);
  api.SetReady(true);
  EXPECT_EQ(get("/readyz").status, 200);
  api.Drain();
  EXPECT_EQ(get("/readyz").status, 503);
  EXPECT_NE(get("/v2/health/ready").body.find("the server is draining"), std::string::npos);
}

}  // namespace
}  // namespace adaptd::http
