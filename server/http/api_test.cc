// Every RPC of adapt.v1.Adaptation has its place in the HTTP front end: a public unary call is
// served, Adapt and Forget are streamed, another streaming call waits for its slice, a members'
// call is not exposed. An RPC added to
// the proto without a row in server/http/api.cc fails here.
#include "server/http/api.h"

#include "adapt/v1/adapt.pb.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

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
    if (method->name() == "Adapt" || method->name() == "Forget") {
      EXPECT_EQ(kind, MethodKind::kStreamed) << method->name();
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
  EXPECT_FALSE(Api::ReadsOwnBody("GET", "/v1/Adapt"));
  EXPECT_FALSE(Api::ReadsOwnBody("POST", "/v1/Predict"));
}

}  // namespace
}  // namespace adaptd::http
