// S3Http: S3 requests over libcurl, signed with libcurl's AWS Signature Version 4, retried with
// exponential backoff and jitter. Easy handles are pooled (their connections kept alive).
// Thread-safe. BuildRequest is the pure part: the headers a request carries besides those
// curl's signer adds (Authorization, X-Amz-Date).
#ifndef ADAPTD_SERVER_OBJSTORE_S3_HTTP_H_
#define ADAPTD_SERVER_OBJSTORE_S3_HTTP_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/objstore/s3_credentials.h"

namespace adaptd::s3_internal {

struct S3Request {
  std::string method;                // GET, PUT, DELETE or HEAD
  std::string url;                   // path and query already in SigV4's canonical encoding
  std::vector<std::string> headers;  // "Name: value"
  absl::string_view body;            // PUT only; must outlive the call
};

// x-amz-content-sha256 (S3 signs the payload's hash; libcurl 7.88 does not add it),
// Content-MD5 and Content-Type for a body, x-amz-security-token for temporary credentials.
S3Request BuildRequest(std::string method, std::string url, absl::string_view body,
                       const S3Credentials& credentials);

struct S3Response {
  long http_status = 0;
  std::string body;
};

struct S3HttpOptions {
  S3Credentials credentials;
  std::string region;
  std::string ca_file;  // empty: the system's CA bundle
  absl::Duration timeout;
  int attempts = 1;
  absl::Duration first_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
};

class S3Http {
 public:
  explicit S3Http(S3HttpOptions options);
  ~S3Http();
  S3Http(const S3Http&) = delete;
  S3Http& operator=(const S3Http&) = delete;

  // The answer once it is not retryable (any HTTP status) or the attempts are spent (the last
  // 5xx or 429). Transport failures: Unavailable after the attempts, FailedPrecondition for a
  // TLS certificate that does not verify, InvalidArgument for a URL curl refuses; each message
  // opens with `what`.
  absl::StatusOr<S3Response> Perform(const S3Request& request, absl::string_view what);

  // Whether an HTTP status is worth another attempt (5xx, 429).
  static bool RetryableStatus(long http_status);

 private:
  struct Attempt {
    int curl_code = 0;
    std::string curl_error;
    S3Response response;
  };
  Attempt PerformOnce(const S3Request& request);
  void* AcquireHandle();
  void ReleaseHandle(void* handle);
  absl::Duration Backoff(int attempt) const;

  const S3HttpOptions options_;
  const std::string sigv4_;  // "aws:amz:REGION:s3"
  absl::Mutex mu_;
  std::vector<void*> idle_handles_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd::s3_internal

#endif  // ADAPTD_SERVER_OBJSTORE_S3_HTTP_H_
