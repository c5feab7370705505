// absl::Status ⇄ grpc::Status: the codes map one to one (both follow the canonical codes).
#ifndef ADAPTD_SERVER_RPC_STATUS_H_
#define ADAPTD_SERVER_RPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace adaptd {

inline grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

inline absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Whether a call to another member failed as a call (the member down, late, or gone) rather
// than with that member's own answer.
inline bool Unreachable(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
      return true;
    default:
      return false;
  }
}

// The canonical name of a gRPC code, e.g. "INVALID_ARGUMENT", for metric labels.
inline std::string CodeName(grpc::StatusCode code) {
  std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN" : name;
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_RPC_STATUS_H_
