// Unicode helpers for the text encoders: strict UTF-8 decoding, simple lowercase mapping from
// a table generated from the Unicode character database (lowercase_table.inc, written by
// make_lowercase_table.py), and the word-character rule of the tokenizer. Pure functions;
// thread-safe. Independent of the locale and of any library version, so every machine
// tokenizes alike.
#ifndef ADAPTD_SERVER_ENCODERS_UNICODE_H_
#define ADAPTD_SERVER_ENCODERS_UNICODE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace adaptd {

// Appends the code points of `text`; false (and `out` unspecified) when `text` is not valid
// UTF-8: a bad lead or continuation byte, a truncated sequence, an overlong form, a surrogate
// or a value above U+10FFFF.
bool DecodeUtf8(absl::string_view text, std::u32string* out);

// The simple lowercase mapping (one code point to one code point); other code points are
// returned unchanged.
char32_t ToLower(char32_t c);

void AppendUtf8(char32_t c, std::string* out);

// Word characters: everything except ASCII characters that are not letters or digits, the
// Latin-1 punctuation and symbols (U+00A0-U+00BF, U+00D7, U+00F7), General Punctuation
// (U+2000-U+206F), Supplemental Punctuation (U+2E00-U+2E7F), CJK Symbols and Punctuation
// (U+3000-U+303F), the fullwidth ASCII punctuation (U+FF01-U+FF0F, U+FF1A-U+FF20,
// U+FF3B-U+FF40, U+FF5B-U+FF65) and U+FEFF.
bool IsWordChar(char32_t c);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_UNICODE_H_
