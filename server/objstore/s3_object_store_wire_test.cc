// S3ObjectStore's requests and its reading of answers, on a loopback server that records what
// it receives and answers as scripted.
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"
#include "server/objstore/s3_object_store.h"
#include "server/objstore/testing/recording_http_server.h"

namespace adaptd {
namespace {

using ::adaptd::testing_util::RecordingHttpServer;
using ::adaptd::testing_util::StartsWithField;
using Store = S3ObjectStore;

TEST(S3ObjectStoreWire, SendsTheSessionTokenFromTheEnvironment) {
  RecordingHttpServer server({{200, ""}});
  setenv("AWS_ACCESS_KEY_ID", "AKTEMPORARY", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "temporary-secret", 1);
  setenv("AWS_SESSION_TOKEN", "temporary-session-token", 1);
  S3Options options;
  options.url = "s3://bkt/pre";
  options.endpoint = server.endpoint();
  options.region = "ap-south-1";
  auto store = Store::Open(options);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_SESSION_TOKEN");
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("a b+c~d", "payload").ok());
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].rfind("HEAD /bkt HTTP/1.1\r\n", 0), 0u) << requests[0];
  EXPECT_EQ(requests[1].rfind("PUT /bkt/pre/a%20b%2Bc~d HTTP/1.1\r\n", 0), 0u) << requests[1];
  for (const std::string& request : requests) {
    EXPECT_NE(request.find("\r\nx-amz-security-token: temporary-session-token\r\n"),
              std::string::npos)
        << request;
    EXPECT_NE(request.find("Credential=AKTEMPORARY/"), std::string::npos) << request;
    EXPECT_NE(request.find("/ap-south-1/s3/aws4_request"), std::string::npos) << request;
    EXPECT_EQ(request.find("temporary-secret"), std::string::npos) << request;
  }
}

TEST(S3ObjectStoreWire, MapsEachAnswerToTheStatusOfItsMeaning) {
  const std::vector<std::pair<RecordingHttpServer::Reply, absl::StatusCode>> cases = {
      {{301, "<Error><Code>PermanentRedirect</Code></Error>"},
       absl::StatusCode::kFailedPrecondition},
      {{400, "<Error><Code>ExpiredToken</Code><Message>gone</Message></Error>"},
       absl::StatusCode::kPermissionDenied},
      {{400, "<Error><Code>InvalidArgument</Code></Error>"}, absl::StatusCode::kInvalidArgument},
      {{403, ""}, absl::StatusCode::kPermissionDenied},
      {{404, "<Error><Code>NoSuchKey</Code></Error>"}, absl::StatusCode::kNotFound},
      {{409, "<Error><Code>OperationAborted</Code></Error>"},
       absl::StatusCode::kFailedPrecondition},
      {{429, ""}, absl::StatusCode::kUnavailable},
      {{503, "<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"},
       absl::StatusCode::kUnavailable},
  };
  setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  for (const auto& [reply, code] : cases) {
    RecordingHttpServer server({reply});
    S3Options options;
    options.url = "s3://bkt";
    options.endpoint = server.endpoint();
    options.attempts = 1;
    auto store = Store::OpenUnchecked(options);
    ASSERT_TRUE(store.ok()) << store.status();
    const absl::Status status = (*store)->Get("k").status();
    EXPECT_EQ(status.code(), code) << reply.status << " " << reply.body << ": " << status;
    EXPECT_TRUE(StartsWithField(status.message(), "s3://bkt/k")) << status;
    if (reply.status == 503) {
      EXPECT_EQ(status.message(), "s3://bkt/k: HTTP 503 SlowDown: Reduce your rate");
    }
  }
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

}  // namespace
}  // namespace adaptd
