// S3ObjectStore: an ObjectStore over the S3 API (AWS S3, MinIO, SeaweedFS, Ceph RGW), with
// libcurl and its built-in AWS Signature Version 4.
//
// Credentials: from `credentials_file` (the AWS shared credentials format: a [PROFILE] section
// with aws_access_key_id, aws_secret_access_key and optionally aws_session_token) when set, else
// from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). The
// secret and the session token never appear in a message or a log line.
//
// Failures: a connection error, a timeout, 5xx and 429 (SlowDown) are retried with backoff up
// to `attempts` times (every call here is idempotent), then Unavailable naming the object and
// S3's error code; 403 is PermissionDenied, 404 NotFound, other 4xx InvalidArgument or
// FailedPrecondition, each naming the object and S3's code and message. A redirect (301/307:
// the bucket is in another region or behind another endpoint) and a TLS certificate that does
// not verify are FailedPrecondition, not retried. Messages open with the object
// ("s3://BUCKET/PREFIX/KEY: ...") or, for a bad option, with the field ("url: ...").
#ifndef ADAPTD_SERVER_OBJSTORE_S3_OBJECT_STORE_H_
#define ADAPTD_SERVER_OBJSTORE_S3_OBJECT_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/objstore/object_store.h"

namespace adaptd {

struct S3Options {
  // s3://BUCKET or s3://BUCKET/PREFIX (keys are PREFIX/KEY).
  std::string url;
  // The service, "https://HOST[:PORT]" or "http://HOST:PORT"; empty: AWS's regional
  // endpoint, https://s3.REGION.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  // The AWS shared credentials file and its profile; empty file: the environment.
  std::string credentials_file;
  std::string profile = "default";
  // The CA bundle for https endpoints (empty: the system's).
  std::string ca_file;
  // Path-style addressing (ENDPOINT/BUCKET/KEY), which every S3-compatible server takes;
  // false: virtual-hosted (BUCKET.HOST/KEY).
  bool path_style = true;
  // Each request's deadline, and how many times a retryable failure is tried.
  absl::Duration timeout = absl::Seconds(30);
  int attempts = 4;
  // Keys per ListObjectsV2 page, 1 to 1000 (S3's maximum; smaller in tests of paging).
  int list_page_size = 1000;
};

class S3ObjectStore final : public ObjectStore {
 public:
  // Checks the options and the credentials (InvalidArgument naming the field or the variable
  // missing) and that the bucket answers (NotFound naming it, PermissionDenied, Unavailable).
  static absl::StatusOr<std::unique_ptr<S3ObjectStore>> Open(S3Options options);
  // As Open, without checking the bucket; then CreateBucket makes it (tests and set-up).
  static absl::StatusOr<std::unique_ptr<S3ObjectStore>> OpenUnchecked(S3Options options);
  ~S3ObjectStore() override;

  absl::Status CreateBucket();

  absl::Status Put(const std::string& key, absl::string_view bytes) override;
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Delete(const std::string& key) override;
  absl::StatusOr<std::vector<Object>> List(const std::string& key_prefix) override;
  std::string Describe(const std::string& key) const override;

 private:
  struct Impl;
  explicit S3ObjectStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_OBJSTORE_S3_OBJECT_STORE_H_
