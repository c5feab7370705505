// Strict text <-> float conversions for table cells. Stateless; thread-safe.
#ifndef ADAPTD_CLIENT_ADAPTCTL_NUMBERS_H_
#define ADAPTD_CLIENT_ADAPTCTL_NUMBERS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace adaptctl {

// Parses a finite decimal number (surrounding blanks and a leading '+' allowed, e.g. " 1.5e-3").
// Returns false for anything else, including an empty text, "nan" and "inf".
bool ParseFloat(absl::string_view text, float* value);

// The shortest text that reads back as the same float ("0.1", "3", "1e-07").
std::string FormatFloat(float value);

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_NUMBERS_H_
