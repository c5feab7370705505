// Paging of ListStores (AIP-158): the page size limits and the page token.
//
// A page token is an opaque resume point: the web-safe base64 of "ls1/TENANT/LAST_STORE".
// - "ls1" versions the format, so a later server can change it and still recognise old tokens.
// - The tenant binds the token to one listing: a token cannot continue another tenant's list.
// - The last store returned, not an offset, is the resume point, so the next page starts
//   strictly after that name: a store that exists throughout a listing is returned exactly once
//   whatever is created or deleted meanwhile, and a token survives a restart.
// The token is not signed: it holds only the tenant and a name its holder was shown, and a
// forged one can only move the start of a listing its holder may read anyway.
//
// Thread safety: pure functions.
#ifndef ADAPTD_SERVER_CORE_LIST_PAGE_H_
#define ADAPTD_SERVER_CORE_LIST_PAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapt/v1/adapt.pb.h"

namespace adaptd {

inline constexpr uint32_t kDefaultListPageSize = 100;
inline constexpr uint32_t kMaxListPageSize = 1000;

// Where a page starts and how many stores it holds at most.
struct PageQuery {
  std::string after;  // the last store of the previous page; empty for the first page
  size_t limit = kDefaultListPageSize;
};

// The page `request` asks for: InvalidArgument naming page_size (over kMaxListPageSize) or
// page_token (not issued by this server, or issued for another tenant). The tenant must have
// been validated.
absl::StatusOr<PageQuery> ParseListPage(const adapt::v1::ListStoresRequest& request);

// The token that resumes `tenant`'s listing after `last_store`.
std::string ListPageToken(absl::string_view tenant, absl::string_view last_store);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_LIST_PAGE_H_
