#include "client/adaptctl/numbers.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "absl/strings/ascii.h"

namespace adaptctl {

bool ParseFloat(absl::string_view text, float* value) {
  text = absl::StripAsciiWhitespace(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value, std::chars_format::general);
  return ec == std::errc() && ptr == end && std::isfinite(*value);
}

std::string FormatFloat(float value) {
  char buffer[32];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return "nan";
  return std::string(buffer, ptr);
}

}  // namespace adaptctl
