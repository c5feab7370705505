#include "server/objstore/s3_location.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace adaptd::s3_internal {
namespace {

// S3's bucket naming rules: 3 to 63 of [a-z0-9.-], a letter or digit at both ends.
bool ValidBucket(absl::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '.' && c != '-') return false;
  }
  return absl::ascii_isalnum(bucket.front()) && absl::ascii_isalnum(bucket.back());
}

bool ValidHost(absl::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<S3Location> ParseS3Url(absl::string_view url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "s3://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("url: \"", url, "\" is not s3://BUCKET or s3://BUCKET/PREFIX"));
  }
  S3Location location;
  const size_t slash = rest.find('/');
  location.bucket = std::string(rest.substr(0, slash));
  if (!ValidBucket(location.bucket)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "url: bucket \"", location.bucket,
        "\" is not 3 to 63 of a-z, 0-9, '.' and '-' starting and ending with a letter or digit"));
  }
  if (slash == absl::string_view::npos) return location;
  absl::string_view prefix = rest.substr(slash + 1);
  absl::ConsumeSuffix(&prefix, "/");
  if (prefix.empty()) return location;
  for (char c : prefix) {
    if (absl::ascii_iscntrl(c)) {
      return absl::InvalidArgumentError("url: the prefix holds a control character");
    }
  }
  if (absl::StartsWith(prefix, "/") || absl::StrContains(prefix, "//")) {
    return absl::InvalidArgumentError(
        absl::StrCat("url: the prefix \"", prefix, "\" has an empty path segment"));
  }
  location.prefix = absl::StrCat(prefix, "/");
  return location;
}

absl::StatusOr<S3Endpoint> ParseEndpoint(absl::string_view endpoint, absl::string_view region) {
  if (region.empty() || !std::all_of(region.begin(), region.end(), [](char c) {
        return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-';
      })) {
    return absl::InvalidArgumentError(
        absl::StrCat("region: \"", region, "\" is not an AWS region name (a-z, 0-9, '-')"));
  }
  if (endpoint.empty()) return S3Endpoint{"https", absl::StrCat("s3.", region, ".amazonaws.com")};
  S3Endpoint parsed;
  absl::string_view rest = endpoint;
  if (absl::ConsumePrefix(&rest, "https://")) {
    parsed.scheme = "https";
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    parsed.scheme = "http";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint: \"", endpoint, "\" is not http(s)://HOST[:PORT]"));
  }
  absl::ConsumeSuffix(&rest, "/");
  absl::string_view host = rest;
  const size_t colon = rest.rfind(':');
  if (colon != absl::string_view::npos) {
    host = rest.substr(0, colon);
    int port = 0;
    if (!absl::SimpleAtoi(rest.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("endpoint: \"", endpoint, "\" has no valid port (1 to 65535)"));
    }
  }
  if (!ValidHost(host)) {
    return absl::InvalidArgumentError(
        absl::StrCat("endpoint: \"", endpoint, "\" is not http(s)://HOST[:PORT] (no path)"));
  }
  parsed.host = std::string(rest);
  return parsed;
}

std::string UriEncode(absl::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace adaptd::s3_internal
