#include "server/objstore/s3_object_store.h"

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "server/base/status_macros.h"
#include "server/objstore/s3_credentials.h"
#include "server/objstore/s3_http.h"
#include "server/objstore/s3_location.h"
#include "server/objstore/s3_xml.h"

namespace adaptd {

using s3_internal::S3Response;

namespace {

constexpr size_t kMaxKeyBytes = 1024;          // S3's limit on a key
constexpr uint64_t kMaxPutBytes = 5ull << 30;  // S3's limit on one PUT
constexpr absl::string_view kAuthCodes[] = {"ExpiredToken", "InvalidToken", "TokenRefreshRequired",
                                            "InvalidAccessKeyId"};

absl::Status CheckOptions(const S3Options& options) {
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("timeout: must be positive");
  }
  if (options.attempts < 1) return absl::InvalidArgumentError("attempts: must be at least 1");
  if (options.list_page_size < 1 || options.list_page_size > 1000) {
    return absl::InvalidArgumentError("list_page_size: must be 1 to 1000");
  }
  if (!options.credentials_file.empty() && options.profile.empty()) {
    return absl::InvalidArgumentError("profile: empty");
  }
  return absl::OkStatus();
}

// The status of an answer that is not a success: the code by S3's documented meaning, the
// message opening with `what` and carrying S3's code and message.
absl::Status ErrorStatus(const S3Response& response, absl::string_view what) {
  const s3_internal::S3Error error = s3_internal::ParseError(response.body);
  std::string text = absl::StrCat(what, ": HTTP ", response.http_status);
  if (!error.code.empty()) absl::StrAppend(&text, " ", error.code);
  if (!error.message.empty()) absl::StrAppend(&text, ": ", error.message);
  const long status = response.http_status;
  if (status == 403 || absl::c_linear_search(kAuthCodes, error.code)) {
    return absl::PermissionDeniedError(text);
  }
  if (status == 404) return absl::NotFoundError(text);
  if (s3_internal::S3Http::RetryableStatus(status)) return absl::UnavailableError(text);
  // 301/307: the bucket is in another region or behind another endpoint.
  if (status == 301 || status == 307 || status == 409 || status == 412) {
    return absl::FailedPreconditionError(text);
  }
  if (status >= 400 && status < 500) return absl::InvalidArgumentError(text);
  return absl::UnknownError(text);
}

}  // namespace

struct S3ObjectStore::Impl {
  S3Options options;
  s3_internal::S3Location location;
  s3_internal::S3Endpoint endpoint;
  s3_internal::S3Credentials credentials;
  std::unique_ptr<s3_internal::S3Http> http;

  // scheme://HOST/BUCKET (path-style) or scheme://BUCKET.HOST, then `path` (from '/').
  std::string Url(absl::string_view path) const {
    if (options.path_style) {
      return absl::StrCat(endpoint.scheme, "://", endpoint.host, "/", location.bucket, path);
    }
    return absl::StrCat(endpoint.scheme, "://", location.bucket, ".", endpoint.host,
                        path.empty() ? "/" : path);
  }
  std::string ObjectUrl(const std::string& key) const {
    return Url(absl::StrCat("/", s3_internal::UriEncode(location.prefix + key, true)));
  }
  std::string BucketDescription() const { return absl::StrCat("s3://", location.bucket); }

  // One call, retried as S3Http does; a failure's message never holds the secret or token.
  absl::StatusOr<S3Response> Call(std::string method, std::string url, absl::string_view body,
                                  absl::string_view what) {
    return http->Perform(
        s3_internal::BuildRequest(std::move(method), std::move(url), body, credentials), what);
  }
  absl::Status Redacted(absl::Status status) const {
    if (status.ok()) return status;
    std::string message(status.message());
    for (const std::string* secret : {&credentials.secret_key, &credentials.session_token}) {
      if (!secret->empty()) absl::StrReplaceAll({{*secret, "[redacted]"}}, &message);
    }
    return absl::Status(status.code(), message);
  }
  absl::Status CheckKey(const std::string& key) const {
    if (key.empty()) return absl::InvalidArgumentError("key: empty");
    if (location.prefix.size() + key.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(absl::StrCat("key: ", location.prefix.size() + key.size(),
                                                     " bytes with the prefix, past S3's 1024"));
    }
    return absl::OkStatus();
  }
};

S3ObjectStore::S3ObjectStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3ObjectStore::~S3ObjectStore() = default;

absl::StatusOr<std::unique_ptr<S3ObjectStore>> S3ObjectStore::OpenUnchecked(S3Options options) {
  RETURN_IF_ERROR(CheckOptions(options));
  auto impl = std::make_unique<Impl>();
  ASSIGN_OR_RETURN(impl->location, s3_internal::ParseS3Url(options.url));
  ASSIGN_OR_RETURN(impl->endpoint, s3_internal::ParseEndpoint(options.endpoint, options.region));
  ASSIGN_OR_RETURN(impl->credentials,
                   s3_internal::LoadCredentials(options.credentials_file, options.profile));
  s3_internal::S3HttpOptions http_options;
  http_options.credentials = impl->credentials;
  http_options.region = options.region;
  http_options.ca_file = options.ca_file;
  http_options.timeout = options.timeout;
  http_options.attempts = options.attempts;
  impl->http = std::make_unique<s3_internal::S3Http>(std::move(http_options));
  impl->options = std::move(options);
  return std::unique_ptr<S3ObjectStore>(new S3ObjectStore(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<S3ObjectStore>> S3ObjectStore::Open(S3Options options) {
  ASSIGN_OR_RETURN(std::unique_ptr<S3ObjectStore> store, OpenUnchecked(std::move(options)));
  Impl& impl = *store->impl_;
  const std::string what = impl.BucketDescription();
  ASSIGN_OR_RETURN(S3Response response, impl.Call("HEAD", impl.Url(""), "", what));
  if (response.http_status == 404) {
    return absl::NotFoundError(absl::StrCat(what, ": HTTP 404: no such bucket"));
  }
  if (response.http_status / 100 != 2) return impl.Redacted(ErrorStatus(response, what));
  return store;
}

absl::Status S3ObjectStore::CreateBucket() {
  const std::string what = impl_->BucketDescription();
  std::string body;
  if (impl_->options.region != "us-east-1") {  // AWS's default region takes no configuration
    body = absl::StrCat(
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<LocationConstraint>",
        impl_->options.region, "</LocationConstraint></CreateBucketConfiguration>");
  }
  ASSIGN_OR_RETURN(S3Response response, impl_->Call("PUT", impl_->Url(""), body, what));
  if (response.http_status / 100 == 2) return absl::OkStatus();
  if (response.http_status == 409 &&
      s3_internal::ParseError(response.body).code == "BucketAlreadyOwnedByYou") {
    return absl::OkStatus();
  }
  return impl_->Redacted(ErrorStatus(response, what));
}

absl::Status S3ObjectStore::Put(const std::string& key, absl::string_view bytes) {
  RETURN_IF_ERROR(impl_->CheckKey(key));
  const std::string what = Describe(key);
  if (bytes.size() > kMaxPutBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bytes.size(), " bytes, past S3's 5 GiB for one PUT"));
  }
  ASSIGN_OR_RETURN(S3Response response, impl_->Call("PUT", impl_->ObjectUrl(key), bytes, what));
  if (response.http_status / 100 == 2) return absl::OkStatus();
  return impl_->Redacted(ErrorStatus(response, what));
}

absl::StatusOr<std::string> S3ObjectStore::Get(const std::string& key) {
  RETURN_IF_ERROR(impl_->CheckKey(key));
  const std::string what = Describe(key);
  ASSIGN_OR_RETURN(S3Response response, impl_->Call("GET", impl_->ObjectUrl(key), "", what));
  if (response.http_status == 200) return std::move(response.body);
  return impl_->Redacted(ErrorStatus(response, what));
}

absl::Status S3ObjectStore::Delete(const std::string& key) {
  RETURN_IF_ERROR(impl_->CheckKey(key));
  const std::string what = Describe(key);
  ASSIGN_OR_RETURN(S3Response response, impl_->Call("DELETE", impl_->ObjectUrl(key), "", what));
  if (response.http_status / 100 == 2 || response.http_status == 404) return absl::OkStatus();
  return impl_->Redacted(ErrorStatus(response, what));
}

absl::StatusOr<std::vector<ObjectStore::Object>> S3ObjectStore::List(
    const std::string& key_prefix) {
  const std::string what = Describe(key_prefix);
  const std::string& store_prefix = impl_->location.prefix;
  std::vector<Object> objects;
  std::string token;
  do {
    // The parameters in SigV4's canonical order (sorted by name), each value encoded.
    std::string query = "?";
    if (!token.empty()) {
      absl::StrAppend(&query, "continuation-token=", s3_internal::UriEncode(token, false), "&");
    }
    absl::StrAppend(&query, "list-type=2&max-keys=", impl_->options.list_page_size,
                    "&prefix=", s3_internal::UriEncode(store_prefix + key_prefix, false));
    ASSIGN_OR_RETURN(S3Response response, impl_->Call("GET", impl_->Url(query), "", what));
    if (response.http_status != 200) return impl_->Redacted(ErrorStatus(response, what));
    absl::StatusOr<s3_internal::ListPage> page = s3_internal::ParseListPage(response.body);
    if (!page.ok()) {
      return absl::UnavailableError(absl::StrCat(what, ": ", page.status().message()));
    }
    for (Object& object : page->objects) {
      if (!absl::StartsWith(object.key, store_prefix)) continue;
      object.key.erase(0, store_prefix.size());
      objects.push_back(std::move(object));
    }
    token = page->truncated ? page->next_token : std::string();
  } while (!token.empty());
  // S3 answers in key order; some S3-compatible servers list a directory tree instead.
  std::sort(objects.begin(), objects.end(),
            [](const Object& a, const Object& b) { return a.key < b.key; });
  return objects;
}

std::string S3ObjectStore::Describe(const std::string& key) const {
  return absl::StrCat("s3://", impl_->location.bucket, "/", impl_->location.prefix, key);
}

}  // namespace adaptd
