#include "server/http/http_status.h"

#include "nlohmann/json.hpp"
#include "server/base/status_name.h"

namespace adaptd::http {

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;  // the client closed the request (nginx's code, as grpc-gateway uses it)
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:  // UNKNOWN, INTERNAL, DATA_LOSS and codes outside the canonical set
      return 500;
  }
}

absl::StatusCode CodeOfHttpStatus(int http_status) {
  switch (http_status) {
    case 404:
      return absl::StatusCode::kNotFound;
    case 408:
      return absl::StatusCode::kDeadlineExceeded;
    case 413:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 501:
      return absl::StatusCode::kUnimplemented;
    case 503:
      return absl::StatusCode::kUnavailable;
    default:  // the rest of 4xx: the request is malformed
      return http_status >= 400 && http_status < 500 ? absl::StatusCode::kInvalidArgument
                                                     : absl::StatusCode::kUnknown;
  }
}

std::string ErrorBody(const absl::Status& status) {
  nlohmann::json body = {{"code", CodeName(status.code())},
                         {"message", std::string(status.message())}};
  // A message that is not UTF-8 (a name echoed back) is written with replacement characters
  // rather than refused.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Reply ErrorReply(const absl::Status& status) {
  return ErrorReply(HttpStatusOf(status.code()), status);
}

Reply ErrorReply(int http_status, const absl::Status& status) {
  Reply reply;
  reply.status = http_status;
  reply.body = ErrorBody(status);
  return reply;
}

}  // namespace adaptd::http
