#include "server/encoders/bert/wordpiece.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "unicode/normalizer2.h"
#include "unicode/uchar.h"
#include "unicode/unistr.h"
#include "unicode/utf8.h"

namespace adaptd::bert {
namespace {

constexpr size_t kMaxWordChars = 100;

bool IsControl(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
    case U_UNASSIGNED:
      return true;
    default:
      return false;
  }
}

bool IsWhitespace(UChar32 c) { return u_isUWhiteSpace(c); }

// ASCII symbols BERT counts as punctuation although Unicode does not ($, +, <, ^, `, |, ~...),
// plus every Unicode P* category.
bool IsPunctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126)) {
    return true;
  }
  switch (u_charType(c)) {
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

// The CJK Unified Ideograph blocks BERT splits character by character.
bool IsCjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void AppendUtf8(UChar32 c, std::string& out) {
  char buf[4];
  int32_t n = 0;
  UBool error = false;
  U8_APPEND(buf, n, 4, c, error);
  if (!error) out.append(buf, n);
}

}  // namespace

absl::StatusOr<WordPieceTokenizer> WordPieceTokenizer::Load(const std::string& vocab_path,
                                                            bool lower_case) {
  std::ifstream in(vocab_path);
  if (!in) return absl::NotFoundError(absl::StrCat(vocab_path, ": cannot open the vocabulary"));
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(line);
  }
  return FromTokens(std::move(tokens), lower_case, vocab_path);
}

absl::StatusOr<WordPieceTokenizer> WordPieceTokenizer::FromTokens(std::vector<std::string> tokens,
                                                                  bool lower_case,
                                                                  const std::string& source) {
  WordPieceTokenizer t;
  t.lower_case_ = lower_case;
  t.tokens_ = std::move(tokens);
  for (size_t i = 0; i < t.tokens_.size(); ++i) {
    t.ids_.emplace(t.tokens_[i], static_cast<int32_t>(i));  // the first occurrence wins
  }
  for (auto [name, id] : {std::pair<const char*, int32_t*>{"[CLS]", &t.cls_},
                          {"[SEP]", &t.sep_},
                          {"[UNK]", &t.unk_}}) {
    auto it = t.ids_.find(name);
    if (it == t.ids_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": the vocabulary has no ", name, " token"));
    }
    *id = it->second;
  }
  return t;
}

std::vector<std::string> WordPieceTokenizer::BasicTokenize(std::string_view text) const {
  // Clean-up and CJK splitting, into UTF-16 for the normaliser.
  icu::UnicodeString cleaned;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const int32_t length = static_cast<int32_t>(text.size());
  for (int32_t i = 0; i < length;) {
    UChar32 c;
    U8_NEXT(s, i, length, c);
    if (c < 0 || c == 0 || c == 0xFFFD || IsControl(c)) continue;
    if (IsWhitespace(c)) {
      cleaned.append(static_cast<UChar>(' '));
    } else if (IsCjk(c)) {
      cleaned.append(static_cast<UChar>(' ')).append(c).append(static_cast<UChar>(' '));
    } else {
      cleaned.append(c);
    }
  }
  if (lower_case_) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
    if (U_SUCCESS(status)) {
      icu::UnicodeString decomposed = nfd->normalize(cleaned, status);
      if (U_SUCCESS(status)) cleaned = std::move(decomposed);
    }
  }

  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (int32_t i = 0; i < cleaned.length();) {
    UChar32 c = cleaned.char32At(i);
    i += U16_LENGTH(c);
    if (lower_case_) {
      if (u_charType(c) == U_NON_SPACING_MARK) continue;
      c = u_tolower(c);
    }
    if (IsWhitespace(c)) {
      flush();
    } else if (IsPunctuation(c)) {
      flush();
      AppendUtf8(c, word);
      flush();
    } else {
      AppendUtf8(c, word);
    }
  }
  flush();
  return words;
}

void WordPieceTokenizer::AppendWord(const std::string& word, size_t chars,
                                    std::vector<int32_t>& out) const {
  if (chars > kMaxWordChars) {
    out.push_back(unk_);
    return;
  }
  // Byte offsets of the character boundaries.
  std::vector<size_t> bounds;
  bounds.reserve(chars + 1);
  const auto* s = reinterpret_cast<const uint8_t*>(word.data());
  const int32_t length = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < length;) {
    bounds.push_back(static_cast<size_t>(i));
    U8_FWD_1(s, i, length);
  }
  bounds.push_back(word.size());
  const size_t n = bounds.size() - 1;

  const size_t first = out.size();
  std::string piece;
  for (size_t start = 0; start < n;) {
    size_t end = n;
    int32_t found = -1;
    for (; end > start; --end) {
      piece.assign(start > 0 ? "##" : "");
      piece.append(word, bounds[start], bounds[end] - bounds[start]);
      auto it = ids_.find(piece);
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      out.resize(first);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::Encode(std::string_view text, int max_tokens) const {
  std::vector<int32_t> ids;
  ids.push_back(cls_);
  const size_t limit = static_cast<size_t>(std::max(max_tokens, 2)) - 1;
  for (const std::string& word : BasicTokenize(text)) {
    size_t chars = 0;
    for (unsigned char b : word) chars += (b & 0xC0) != 0x80;
    AppendWord(word, chars, ids);
    if (ids.size() >= limit) break;
  }
  if (ids.size() > limit) ids.resize(limit);
  ids.push_back(sep_);
  return ids;
}

}  // namespace adaptd::bert
