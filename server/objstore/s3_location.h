// Where S3ObjectStore's objects are: the bucket and key prefix of an s3:// URL, the endpoint it
// talks to, and the URI encoding that AWS Signature Version 4 signs. Pure functions.
#ifndef ADAPTD_SERVER_OBJSTORE_S3_LOCATION_H_
#define ADAPTD_SERVER_OBJSTORE_S3_LOCATION_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace adaptd::s3_internal {

struct S3Location {
  std::string bucket;
  std::string prefix;  // empty, or ending in '/'
};

// s3://BUCKET or s3://BUCKET/PREFIX[/]; InvalidArgument naming `url` otherwise.
absl::StatusOr<S3Location> ParseS3Url(absl::string_view url);

struct S3Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // HOST or HOST:PORT
};

// "http(s)://HOST[:PORT][/]"; empty: https://s3.REGION.amazonaws.com. InvalidArgument naming
// `endpoint` (or `region`) otherwise.
absl::StatusOr<S3Endpoint> ParseEndpoint(absl::string_view endpoint, absl::string_view region);

// Percent-encodes every byte but A-Z a-z 0-9 - _ . ~ (and '/' when `keep_slash`), with
// upper-case hex: SigV4's canonical form of a path (keep_slash) or of a query value.
std::string UriEncode(absl::string_view text, bool keep_slash);

}  // namespace adaptd::s3_internal

#endif  // ADAPTD_SERVER_OBJSTORE_S3_LOCATION_H_
