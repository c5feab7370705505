// How the HTTP front end answers an absl::Status: the HTTP status each canonical code maps to
// (the mapping of Google's API design guide and grpc-gateway), and the JSON error body
// {"code": "INVALID_ARGUMENT", "message": "..."} whose message is the service's, naming the
// field and the reason. Pure functions; thread-safe.
#ifndef ADAPTD_SERVER_HTTP_HTTP_STATUS_H_
#define ADAPTD_SERVER_HTTP_HTTP_STATUS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace adaptd::http {

// Writes one piece of an answer's body as it is produced: false once the client is gone.
using PieceWriter = std::function<bool(const std::string& piece)>;

// One HTTP answer: status, body and any header beside Content-Type and Content-Length.
struct Reply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "application/json";
  // Set for a body written in pieces (Transfer-Encoding: chunked) instead of `body`: called
  // once, after the headers, with the writer of the pieces; it answers whether the body is
  // whole. A body cut short has no last chunk, so the client cannot take it for whole (such a
  // reply says `Connection: close`).
  std::function<bool(const PieceWriter&)> stream;
};

// 200 for OK; 400, 401, 403, 404, 409, 429, 499, 500, 501, 503, 504 for the others.
int HttpStatusOf(absl::StatusCode code);

// The canonical code an HTTP error status stands for, for the errors the HTTP library answers
// itself (a malformed request: 400, 411, 414, 431; 413; 408; 500; 503).
absl::StatusCode CodeOfHttpStatus(int http_status);

// {"code": "<CANONICAL_NAME>", "message": "<the status's message>"}.
std::string ErrorBody(const absl::Status& status);

// `status` (not OK) answered with its mapped HTTP status and ErrorBody.
Reply ErrorReply(const absl::Status& status);

// A refusal whose HTTP status is the transport's own (413, 405, 421), with the error body of
// `status`.
Reply ErrorReply(int http_status, const absl::Status& status);

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_HTTP_STATUS_H_
