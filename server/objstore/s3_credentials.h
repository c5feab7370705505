// The credentials S3ObjectStore signs with: from an AWS shared credentials file (INI: a
// [PROFILE] section with aws_access_key_id, aws_secret_access_key and optionally
// aws_session_token) or from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN). No message here ever holds a secret, a token or a line of the file.
#ifndef ADAPTD_SERVER_OBJSTORE_S3_CREDENTIALS_H_
#define ADAPTD_SERVER_OBJSTORE_S3_CREDENTIALS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace adaptd::s3_internal {

struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty for long-term credentials
};

// From `file`'s [profile] section when `file` is set, else from the environment.
// InvalidArgument naming `credentials_file`, `profile` or the variable missing.
absl::StatusOr<S3Credentials> LoadCredentials(const std::string& file, const std::string& profile);

// The profile's credentials in the text of a shared credentials file (`file` names it in
// messages).
absl::StatusOr<S3Credentials> ParseCredentialsFile(absl::string_view text, absl::string_view file,
                                                   absl::string_view profile);

}  // namespace adaptd::s3_internal

#endif  // ADAPTD_SERVER_OBJSTORE_S3_CREDENTIALS_H_
