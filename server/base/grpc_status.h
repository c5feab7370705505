// absl::Status ⇄ grpc::Status: the codes map one to one (both follow the canonical codes).
#ifndef ADAPTD_SERVER_BASE_GRPC_STATUS_H_
#define ADAPTD_SERVER_BASE_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "server/base/status_name.h"

namespace adaptd {

inline grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

inline absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// The canonical name of a gRPC code (status_name.h).
inline std::string CodeName(grpc::StatusCode code) {
  return CodeName(static_cast<absl::StatusCode>(code));
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_BASE_GRPC_STATUS_H_
