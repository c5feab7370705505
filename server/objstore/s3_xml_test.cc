#include "server/objstore/s3_xml.h"

#include "gtest/gtest.h"

namespace adaptd::s3_internal {
namespace {

TEST(S3Xml, ParsesAListPage) {
  const char* xml =
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      R"(<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>)"
      R"(<Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>)"
      R"(<Contents><Key>p/a &amp; b&lt;&#34;&#xE9;</Key><ETag>&#34;x&#34;</ETag><Size>6</Size>)"
      R"(<LastModified>2026-12-06T03:48:48Z</LastModified></Contents>)"
      R"(<Contents><Key>p/c</Key><Size>0</Size>)"
      R"(<LastModified>2026-12-06T03:48:49.250Z</LastModified></Contents>)"
      R"(<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>)";
  auto page = ParseListPage(xml);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "p/a & b<\"\xC3\xA9");
  EXPECT_EQ(page->objects[0].size, 6u);
  EXPECT_EQ(page->objects[0].modified, absl::FromUnixSeconds(1796528928));
  EXPECT_EQ(page->objects[1].key, "p/c");
  EXPECT_EQ(page->objects[1].modified, absl::FromUnixSeconds(1796528929) + absl::Milliseconds(250));
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok+/=");
}

TEST(S3Xml, ALastPageAndAnEmptyOne) {
  auto last = ParseListPage(
      "<ListBucketResult><IsTruncated>false</IsTruncated><Prefix/></ListBucketResult>");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(last->objects.empty());
  EXPECT_FALSE(last->truncated);
}

TEST(S3Xml, RejectsMalformedPages) {
  EXPECT_FALSE(ParseListPage("<Error><Code>x</Code></Error>").ok());
  EXPECT_FALSE(ParseListPage("<ListBucketResult><Contents><Size>1</Size></Contents>"
                             "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(ParseListPage("<ListBucketResult><Contents><Key>k</Key><Size>x</Size>"
                             "<LastModified>2026-12-06T03:48:48Z</LastModified></Contents>"
                             "</ListBucketResult>")
                   .ok());
  EXPECT_FALSE(
      ParseListPage("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>").ok());
}

TEST(S3Xml, ParsesErrorBodies) {
  const S3Error error = ParseError(
      R"(<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>The key &amp; more.</Message>)"
      R"(<Key>k</Key></Error>)");
  EXPECT_EQ(error.code, "NoSuchKey");
  EXPECT_EQ(error.message, "The key & more.");
  EXPECT_EQ(ParseError("").code, "");
  EXPECT_EQ(ParseError("<html>bad gateway</html>").code, "");
}

TEST(S3Xml, LeavesUnknownEntities) {
  EXPECT_EQ(DecodeXmlText("a &nbsp; &#xZZ; & b"), "a &nbsp; &#xZZ; & b");
  EXPECT_EQ(DecodeXmlText("&#xD800;&#x110000;"), "&#xD800;&#x110000;");
  EXPECT_EQ(DecodeXmlText("&#9;&#x1F600;&#13;"), "\t\xF0\x9F\x98\x80\r");
}

}  // namespace
}  // namespace adaptd::s3_internal
