// gmock matchers shared by adaptctl's tests. Test-only.
#ifndef ADAPTD_CLIENT_ADAPTCTL_TEST_MATCHERS_H_
#define ADAPTD_CLIENT_ADAPTCTL_TEST_MATCHERS_H_

#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"

namespace adaptctl {

// A message (std::string or absl::string_view) that begins with `prefix`: error checks anchor
// at the start, where the option or field is named.
MATCHER_P(Begins, prefix, "begins with \"" + std::string(prefix) + "\"") {
  *result_listener << "which is \"" << std::string(arg) << "\"";
  return absl::StartsWith(arg, prefix);
}

}  // namespace adaptctl

#endif  // ADAPTD_CLIENT_ADAPTCTL_TEST_MATCHERS_H_
