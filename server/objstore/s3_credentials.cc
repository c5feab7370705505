#include "server/objstore/s3_credentials.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace adaptd::s3_internal {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

absl::StatusOr<S3Credentials> ParseCredentialsFile(absl::string_view text, absl::string_view file,
                                                   absl::string_view profile) {
  S3Credentials credentials;
  bool in_profile = false;
  bool found = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') {
        return absl::InvalidArgumentError(absl::StrCat("credentials_file: ", file, " line ",
                                                       line_number, ": a section without ']'"));
      }
      in_profile = absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    const size_t equals = line.find('=');
    if (equals == absl::string_view::npos) {
      // The line itself is never quoted: it may hold a secret.
      return absl::InvalidArgumentError(
          absl::StrCat("credentials_file: ", file, " line ", line_number, ": not KEY = VALUE"));
    }
    if (!in_profile) continue;
    const absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, equals));
    const std::string value(absl::StripAsciiWhitespace(line.substr(equals + 1)));
    if (key == "aws_access_key_id") credentials.access_key = value;
    if (key == "aws_secret_access_key") credentials.secret_key = value;
    if (key == "aws_session_token") credentials.session_token = value;
  }
  if (!found) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile: no [", profile, "] section in ", file));
  }
  for (const auto& [name, value] : {std::pair{"aws_access_key_id", &credentials.access_key},
                                    std::pair{"aws_secret_access_key", &credentials.secret_key}}) {
    if (value->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile: [", profile, "] in ", file, " has no ", name));
    }
  }
  return credentials;
}

absl::StatusOr<S3Credentials> LoadCredentials(const std::string& file, const std::string& profile) {
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      return absl::InvalidArgumentError(absl::StrCat("credentials_file: cannot read ", file));
    }
    return ParseCredentialsFile(text.str(), file, profile);
  }
  S3Credentials credentials{Env("AWS_ACCESS_KEY_ID"), Env("AWS_SECRET_ACCESS_KEY"),
                            Env("AWS_SESSION_TOKEN")};
  if (credentials.access_key.empty()) {
    return absl::InvalidArgumentError("AWS_ACCESS_KEY_ID: not set (and no credentials_file given)");
  }
  if (credentials.secret_key.empty()) {
    return absl::InvalidArgumentError(
        "AWS_SECRET_ACCESS_KEY: not set (and no credentials_file given)");
  }
  return credentials;
}

}  // namespace adaptd::s3_internal
