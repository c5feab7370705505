// Test-only checks of error messages, anchored at the start: every bad input answers a message
// that opens with the field it names ("spec.faast.rcond: must be ..."), so a test checks that
// prefix (or the whole message), never a substring that could sit anywhere, e.g. in a value
// echoed back. Thread-compatible.
#ifndef ADAPTD_SERVER_BASE_STATUS_TEST_UTIL_H_
#define ADAPTD_SERVER_BASE_STATUS_TEST_UTIL_H_

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace adaptd::testing_util {

// `message` is "<field>: ..." (the field, then a colon).
inline ::testing::AssertionResult StartsWithField(absl::string_view message,
                                                  absl::string_view field) {
  if (message.size() > field.size() && message.substr(0, field.size()) == field &&
      message[field.size()] == ':') {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "message \"" << message << "\" does not start with \"" << field << ":\"";
}

}  // namespace adaptd::testing_util

#endif  // ADAPTD_SERVER_BASE_STATUS_TEST_UTIL_H_
