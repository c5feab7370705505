#include "server/objstore/s3_http.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/objstore/testing/recording_http_server.h"

namespace adaptd::s3_internal {
namespace {

using ::adaptd::testing_util::RecordingHttpServer;

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

bool Has(const std::vector<std::string>& headers, const std::string& header) {
  return std::find(headers.begin(), headers.end(), header) != headers.end();
}

S3HttpOptions Options(int attempts) {
  S3HttpOptions options;
  options.credentials = {"AKWIRE", "wire-secret-value", ""};
  options.region = "eu-west-1";
  options.timeout = absl::Seconds(5);
  options.attempts = attempts;
  options.first_backoff = absl::Milliseconds(1);
  return options;
}

TEST(S3Request, CarriesThePayloadHashAndTheToken) {
  const S3Request get = BuildRequest("GET", "http://h/b/k", "", {"AK", "SK", ""});
  EXPECT_TRUE(Has(get.headers, std::string("x-amz-content-sha256: ") + kEmptySha256));
  EXPECT_EQ(get.headers.size(), 1u);
  const S3Request put = BuildRequest("PUT", "http://h/b/k", "hello\n", {"AK", "SK", "TOKEN"});
  EXPECT_TRUE(Has(put.headers,
                  "x-amz-content-sha256: "
                  "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"));
  EXPECT_TRUE(Has(put.headers, "Content-MD5: sZRqySSS0jR8YjW00mERhA=="));
  EXPECT_TRUE(Has(put.headers, "x-amz-security-token: TOKEN"));
  EXPECT_EQ(put.body, "hello\n");
}

TEST(S3Http, SignsWithTheTokenAndNeverSendsTheSecret) {
  RecordingHttpServer server({{200, ""}});
  S3HttpOptions options = Options(1);
  options.credentials.session_token = "wire-session-token";
  S3Http http(options);
  const std::string url = server.endpoint() + "/bkt/a%20b";
  auto response = http.Perform(BuildRequest("PUT", url, "payload", options.credentials), "obj");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->http_status, 200);
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string& wire = requests[0];
  EXPECT_EQ(wire.rfind("PUT /bkt/a%20b HTTP/1.1\r\n", 0), 0u) << wire;
  EXPECT_NE(wire.find("\r\nx-amz-security-token: wire-session-token\r\n"), std::string::npos);
  EXPECT_NE(wire.find("Credential=AKWIRE/"), std::string::npos) << wire;
  EXPECT_NE(wire.find("/eu-west-1/s3/aws4_request"), std::string::npos) << wire;
  const size_t signed_headers = wire.find("SignedHeaders=");
  ASSERT_NE(signed_headers, std::string::npos);
  const std::string names =
      wire.substr(signed_headers, wire.find(',', signed_headers) - signed_headers);
  EXPECT_NE(names.find("x-amz-content-sha256"), std::string::npos) << names;
  EXPECT_NE(names.find("x-amz-security-token"), std::string::npos) << names;
  // Every header signed is sent (a server checks the signature over what it receives).
  const std::string lower_wire = absl::AsciiStrToLower(wire);
  for (absl::string_view name : absl::StrSplit(names.substr(14), ';')) {
    EXPECT_NE(lower_wire.find(absl::StrCat("\r\n", name, ":")), std::string::npos) << name;
  }
  EXPECT_EQ(wire.substr(wire.size() - 7), "payload");
  EXPECT_EQ(wire.find("wire-secret-value"), std::string::npos);
}

// What a GET gets from a server answering `replies` in turn, with `attempts`: the final HTTP
// status and body, and how many requests reached the server.
struct Outcome {
  long http_status = 0;
  std::string body;
  size_t requests = 0;
};
Outcome GetFrom(std::vector<RecordingHttpServer::Reply> replies, int attempts) {
  RecordingHttpServer server(std::move(replies));
  S3Http http(Options(attempts));
  auto response = http.Perform(BuildRequest("GET", server.endpoint() + "/b/k", "", {}), "obj");
  EXPECT_TRUE(response.ok()) << response.status();
  if (!response.ok()) return {};
  return {response->http_status, response->body, server.requests().size()};
}

TEST(S3Http, RetriesServerErrorsAndSlowDown) {
  const Outcome outcome = GetFrom(
      {{503, "<Error><Code>SlowDown</Code></Error>"}, {500, ""}, {429, ""}, {200, "done"}}, 4);
  EXPECT_EQ(outcome.http_status, 200);
  EXPECT_EQ(outcome.body, "done");
  EXPECT_EQ(outcome.requests, 4u);
}

TEST(S3Http, GivesUpAfterTheAttempts) {
  const Outcome outcome = GetFrom({{503, ""}}, 2);
  EXPECT_EQ(outcome.http_status, 503);
  EXPECT_EQ(outcome.requests, 2u);
}

TEST(S3Http, DoesNotRetryClientErrors) {
  const Outcome outcome = GetFrom({{400, ""}, {200, ""}}, 4);
  EXPECT_EQ(outcome.http_status, 400);
  EXPECT_EQ(outcome.requests, 1u);
}

TEST(S3Http, ConnectionRefusedIsUnavailableAfterTheAttempts) {
  std::string endpoint;
  {
    RecordingHttpServer closed({{200, ""}});
    endpoint = closed.endpoint();
  }
  S3Http http(Options(3));
  auto response = http.Perform(BuildRequest("GET", endpoint + "/b/k", "", {}), "s3://b/k");
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(response.status().message().rfind("s3://b/k: ", 0), 0u) << response.status();
  EXPECT_NE(response.status().message().find("after 3 attempt(s)"), std::string::npos)
      << response.status();
}

}  // namespace
}  // namespace adaptd::s3_internal
