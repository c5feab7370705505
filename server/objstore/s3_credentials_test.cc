#include "server/objstore/s3_credentials.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/base/status_test_util.h"

namespace adaptd::s3_internal {
namespace {

using ::adaptd::testing_util::StartsWithField;

constexpr char kTwoProfiles[] =
    "# shared credentials\n"
    "[default]\n"
    "aws_access_key_id = AKIDEFAULT\n"
    "aws_secret_access_key = default/secret+key\n"
    "\n"
    "[ci]\r\n"
    "aws_access_key_id=AKICI\r\n"
    "aws_secret_access_key=ci-secret\r\n"
    "aws_session_token = ci-token==\r\n"
    "region = eu-west-1\r\n";

TEST(S3Credentials, ReadsEachProfileOfAFile) {
  auto first = ParseCredentialsFile(kTwoProfiles, "creds", "default");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->access_key, "AKIDEFAULT");
  EXPECT_EQ(first->secret_key, "default/secret+key");
  EXPECT_EQ(first->session_token, "");
  auto second = ParseCredentialsFile(kTwoProfiles, "creds", "ci");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->access_key, "AKICI");
  EXPECT_EQ(second->secret_key, "ci-secret");
  EXPECT_EQ(second->session_token, "ci-token==");
}

TEST(S3Credentials, NamesWhatIsMissingAndNeverQuotesTheFile) {
  auto missing = ParseCredentialsFile(kTwoProfiles, "creds", "prod");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWithField(missing.status().message(), "profile"));
  auto no_secret = ParseCredentialsFile("[x]\naws_access_key_id=A\n", "creds", "x");
  EXPECT_TRUE(StartsWithField(no_secret.status().message(), "profile"));
  EXPECT_NE(no_secret.status().message().find("aws_secret_access_key"), std::string::npos);
  auto malformed =
      ParseCredentialsFile("[x]\naws_secret_access_key: hunter2-secret\n", "creds", "x");
  EXPECT_TRUE(StartsWithField(malformed.status().message(), "credentials_file"));
  EXPECT_EQ(malformed.status().message().find("hunter2"), std::string::npos);
  auto unreadable = LoadCredentials("/nonexistent/credentials", "default");
  EXPECT_TRUE(StartsWithField(unreadable.status().message(), "credentials_file"));
}

TEST(S3Credentials, LoadsAFile) {
  const std::string path = ::testing::TempDir() + "/s3_credentials_test";
  std::ofstream(path) << kTwoProfiles;
  auto loaded = LoadCredentials(path, "ci");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->access_key, "AKICI");
}

TEST(S3Credentials, ReadsTheEnvironment) {
  setenv("AWS_ACCESS_KEY_ID", "AKIENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
  setenv("AWS_SESSION_TOKEN", "env-token", 1);
  auto loaded = LoadCredentials("", "ignored");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->access_key, "AKIENV");
  EXPECT_EQ(loaded->secret_key, "env-secret");
  EXPECT_EQ(loaded->session_token, "env-token");
  unsetenv("AWS_SESSION_TOKEN");
  EXPECT_EQ(LoadCredentials("", "")->session_token, "");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_TRUE(StartsWithField(LoadCredentials("", "").status().message(), "AWS_SECRET_ACCESS_KEY"));
  unsetenv("AWS_ACCESS_KEY_ID");
  EXPECT_TRUE(StartsWithField(LoadCredentials("", "").status().message(), "AWS_ACCESS_KEY_ID"));
}

}  // namespace
}  // namespace adaptd::s3_internal
