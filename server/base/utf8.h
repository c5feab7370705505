// Strict UTF-8 decoding shared by request validation and the text encoders. Rejects a bad lead
// or continuation byte, a truncated sequence, an overlong form, a surrogate and any value above
// U+10FFFF. Pure functions; thread-safe.
#ifndef ADAPTD_SERVER_BASE_UTF8_H_
#define ADAPTD_SERVER_BASE_UTF8_H_

#include <cstddef>
#include <string_view>

namespace adaptd {

// Decodes the code point that starts at `*pos` into `*cp` and advances `*pos` past it; false
// (with `*pos` unchanged) when the bytes there are not valid UTF-8. Requires *pos < size.
bool NextUtf8CodePoint(std::string_view text, size_t* pos, char32_t* cp);

bool IsValidUtf8(std::string_view text);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_UTF8_H_
