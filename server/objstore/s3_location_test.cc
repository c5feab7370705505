#include "server/objstore/s3_location.h"

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"

namespace adaptd::s3_internal {
namespace {

using ::adaptd::testing_util::StartsWithField;

TEST(S3Location, ParsesBucketAndPrefix) {
  auto bare = ParseS3Url("s3://my-bucket.logs");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->bucket, "my-bucket.logs");
  EXPECT_EQ(bare->prefix, "");
  auto nested = ParseS3Url("s3://bkt/deploy/one/");
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->bucket, "bkt");
  EXPECT_EQ(nested->prefix, "deploy/one/");
  EXPECT_EQ(ParseS3Url("s3://bkt/")->prefix, "");
}

TEST(S3Location, RejectsBadUrlsNamingTheField) {
  for (const char* url : {"", "http://bkt/x", "s3://", "s3://B", "s3://ab", "s3://-bkt",
                          "s3://bkt_x/p", "s3://bkt//p", "s3://bkt/a//b", "s3://bkt/a\nb"}) {
    auto parsed = ParseS3Url(url);
    ASSERT_FALSE(parsed.ok()) << url;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_TRUE(StartsWithField(parsed.status().message(), "url"));
  }
}

TEST(S3Location, ParsesEndpoints) {
  auto aws = ParseEndpoint("", "eu-west-3");
  ASSERT_TRUE(aws.ok()) << aws.status();
  EXPECT_EQ(aws->scheme, "https");
  EXPECT_EQ(aws->host, "s3.eu-west-3.amazonaws.com");
  auto local = ParseEndpoint("http://127.0.0.1:8333/", "us-east-1");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(local->scheme, "http");
  EXPECT_EQ(local->host, "127.0.0.1:8333");
  for (const char* endpoint : {"ftp://host", "127.0.0.1:8333", "http://", "http://host:0",
                               "http://host:99999", "http://host/path", "http://user@host"}) {
    auto parsed = ParseEndpoint(endpoint, "us-east-1");
    ASSERT_FALSE(parsed.ok()) << endpoint;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << endpoint;
    EXPECT_TRUE(StartsWithField(parsed.status().message(), "endpoint"));
  }
  EXPECT_TRUE(StartsWithField(ParseEndpoint("", "US East").status().message(), "region"));
}

TEST(S3Location, EncodesAsSigV4Signs) {
  EXPECT_EQ(UriEncode("a/b c~d+e_f-g.h", true), "a/b%20c~d%2Be_f-g.h");
  EXPECT_EQ(UriEncode("a/b c", false), "a%2Fb%20c");
  EXPECT_EQ(UriEncode("\xC3\xA9=&?%", false), "%C3%A9%3D%26%3F%25");
}

}  // namespace
}  // namespace adaptd::s3_internal
