// The canonical name of a status code, e.g. "INVALID_ARGUMENT", as error messages and metric
// labels write it.
#ifndef ADAPTD_SERVER_BASE_STATUS_NAME_H_
#define ADAPTD_SERVER_BASE_STATUS_NAME_H_

#include <string>

#include "absl/status/status.h"

namespace adaptd {

inline std::string CodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  return name.empty() ? "UNKNOWN" : name;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_STATUS_NAME_H_
