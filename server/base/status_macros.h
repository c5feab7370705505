// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr (this abseil has none).
#ifndef ADAPTD_SERVER_BASE_STATUS_MACROS_H_
#define ADAPTD_SERVER_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ADAPTD_CONCAT_INNER_(a, b) a##b
#define ADAPTD_CONCAT_(a, b) ADAPTD_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::absl::Status _adaptd_status = (expr);          \
    if (!_adaptd_status.ok()) return _adaptd_status; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ADAPTD_ASSIGN_OR_RETURN_IMPL_(ADAPTD_CONCAT_(_adaptd_statusor_, __LINE__), lhs, expr)

#define ADAPTD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // ADAPTD_SERVER_BASE_STATUS_MACROS_H_
