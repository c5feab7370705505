// The few parts of S3's XML answers S3ObjectStore reads: a ListObjectsV2 page and an error
// body. Not a general XML parser: S3 escapes text, so an element is found by its tag alone, and
// no element read here nests in one of the same name. Pure functions.
#ifndef ADAPTD_SERVER_OBJSTORE_S3_XML_H_
#define ADAPTD_SERVER_OBJSTORE_S3_XML_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/objstore/object_store.h"

namespace adaptd::s3_internal {

struct ListPage {
  std::vector<ObjectStore::Object> objects;  // keys as S3 holds them (with the store's prefix)
  bool truncated = false;
  std::string next_token;  // NextContinuationToken, when truncated
};

// A ListBucketResult; InvalidArgument (what is malformed) otherwise.
absl::StatusOr<ListPage> ParseListPage(absl::string_view xml);

struct S3Error {
  std::string code;  // e.g. "NoSuchKey"; empty when `xml` is no S3 error body
  std::string message;
};
S3Error ParseError(absl::string_view xml);

// The text of `<tag>` elements (entities decoded), in document order.
std::vector<std::string> ElementTexts(absl::string_view xml, absl::string_view tag);

// Decodes &amp; &lt; &gt; &quot; &apos; and numeric character references (as UTF-8); an
// unknown entity stays as it is.
std::string DecodeXmlText(absl::string_view text);

}  // namespace adaptd::s3_internal

#endif  // ADAPTD_SERVER_OBJSTORE_S3_XML_H_
