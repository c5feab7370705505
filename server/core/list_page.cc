#include "server/core/list_page.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/base/names.h"

namespace adaptd {
namespace {

constexpr absl::string_view kTokenVersion = "ls1";

absl::Status BadToken(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "page_token: ", why, "; pass the next_page_token of the previous page unchanged"));
}

}  // namespace

absl::StatusOr<PageQuery> ParseListPage(const adapt::v1::ListStoresRequest& request) {
  PageQuery page;
  if (request.page_size() > kMaxListPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: at most ", kMaxListPageSize, ", got ", request.page_size()));
  }
  if (request.page_size() != 0) page.limit = request.page_size();
  if (request.page_token().empty()) return page;

  std::string decoded;
  if (!absl::WebSafeBase64Unescape(request.page_token(), &decoded)) {
    return BadToken("not a page token (not web-safe base64)");
  }
  // Names have no '/', so a well-formed token splits into exactly three parts.
  const std::vector<absl::string_view> parts = absl::StrSplit(decoded, '/');
  if (parts.size() != 3 || parts[0] != kTokenVersion) {
    return BadToken("not a page token this server issued");
  }
  if (parts[1] != request.tenant()) return BadToken("issued for another tenant's listing");
  if (!ValidateName("store", parts[2]).ok()) {
    return BadToken("not a page token this server issued (no valid store name in it)");
  }
  page.after = std::string(parts[2]);
  return page;
}

std::string ListPageToken(absl::string_view tenant, absl::string_view last_store) {
  return absl::WebSafeBase64Escape(absl::StrCat(kTokenVersion, "/", tenant, "/", last_store));
}

}  // namespace adaptd
