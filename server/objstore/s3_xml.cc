#include "server/objstore/s3_xml.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace adaptd::s3_internal {
namespace {

// The raw content of each <tag>...</tag> (or <tag attr="...">...</tag>); <tag/> is empty.
std::vector<absl::string_view> RawElements(absl::string_view xml, absl::string_view tag) {
  std::vector<absl::string_view> out;
  const std::string open = absl::StrCat("<", tag);
  const std::string close = absl::StrCat("</", tag, ">");
  size_t pos = 0;
  while ((pos = xml.find(open, pos)) != absl::string_view::npos) {
    const size_t after_name = pos + open.size();
    if (after_name >= xml.size()) break;
    const char next = xml[after_name];
    if (next != '>' && next != ' ' && next != '/') {  // a longer tag name, e.g. <KeyCount>
      pos = after_name;
      continue;
    }
    const size_t gt = xml.find('>', after_name);
    if (gt == absl::string_view::npos) break;
    if (xml[gt - 1] == '/') {
      out.push_back(absl::string_view());
      pos = gt + 1;
      continue;
    }
    const size_t end = xml.find(close, gt + 1);
    if (end == absl::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

// One entity's replacement (`name` between '&' and ';'), false when unknown.
bool DecodeEntity(absl::string_view name, std::string* out) {
  if (name == "amp") return out->push_back('&'), true;
  if (name == "lt") return out->push_back('<'), true;
  if (name == "gt") return out->push_back('>'), true;
  if (name == "quot") return out->push_back('"'), true;
  if (name == "apos") return out->push_back('\''), true;
  if (name.size() < 2 || name[0] != '#') return false;
  uint32_t cp = 0;
  const bool hex = name[1] == 'x' || name[1] == 'X';
  const bool parsed =
      hex ? absl::SimpleHexAtoi(name.substr(2), &cp) : absl::SimpleAtoi(name.substr(1), &cp);
  // CUnescape writes a code point as UTF-8 and refuses a surrogate or one past U+10FFFF.
  std::string utf8;
  if (!parsed || cp > 0x10FFFF || !absl::CUnescape(absl::StrFormat("\\U%08x", cp), &utf8)) {
    return false;
  }
  out->append(utf8);
  return true;
}

}  // namespace

std::string DecodeXmlText(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '&') {
      const size_t semi = text.find(';', i);
      if (semi != absl::string_view::npos && semi - i <= 10 &&
          DecodeEntity(text.substr(i + 1, semi - i - 1), &out)) {
        i = semi;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::vector<std::string> ElementTexts(absl::string_view xml, absl::string_view tag) {
  std::vector<std::string> out;
  for (absl::string_view raw : RawElements(xml, tag)) out.push_back(DecodeXmlText(raw));
  return out;
}

absl::StatusOr<ListPage> ParseListPage(absl::string_view xml) {
  if (RawElements(xml, "ListBucketResult").size() != 1) {
    return absl::InvalidArgumentError("ListObjectsV2 answer: no ListBucketResult element");
  }
  ListPage page;
  for (absl::string_view contents : RawElements(xml, "Contents")) {
    ObjectStore::Object object;
    const std::vector<std::string> key = ElementTexts(contents, "Key");
    const std::vector<std::string> size = ElementTexts(contents, "Size");
    const std::vector<std::string> modified = ElementTexts(contents, "LastModified");
    if (key.size() != 1 || key[0].empty()) {
      return absl::InvalidArgumentError("ListObjectsV2 answer: a Contents element without Key");
    }
    object.key = key[0];
    if (size.size() != 1 || !absl::SimpleAtoi(size[0], &object.size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ListObjectsV2 answer: no valid Size for key \"", object.key, "\""));
    }
    std::string error;
    if (modified.size() != 1 ||
        !absl::ParseTime(absl::RFC3339_full, modified[0], &object.modified, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ListObjectsV2 answer: no valid LastModified for key \"", object.key, "\""));
    }
    page.objects.push_back(std::move(object));
  }
  // Contents hold no IsTruncated or NextContinuationToken, so the first one is the page's own.
  const std::vector<std::string> truncated = ElementTexts(xml, "IsTruncated");
  page.truncated = !truncated.empty() && truncated[0] == "true";
  const std::vector<std::string> token = ElementTexts(xml, "NextContinuationToken");
  if (page.truncated) {
    if (token.empty() || token[0].empty()) {
      return absl::InvalidArgumentError(
          "ListObjectsV2 answer: IsTruncated without NextContinuationToken");
    }
    page.next_token = token[0];
  }
  return page;
}

S3Error ParseError(absl::string_view xml) {
  S3Error error;
  const std::vector<absl::string_view> body = RawElements(xml, "Error");
  if (body.empty()) return error;
  const std::vector<std::string> code = ElementTexts(body[0], "Code");
  const std::vector<std::string> message = ElementTexts(body[0], "Message");
  if (!code.empty()) error.code = code[0];
  if (!message.empty()) error.message = message[0];
  return error;
}

}  // namespace adaptd::s3_internal
