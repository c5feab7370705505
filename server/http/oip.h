// The Open Inference Protocol (KServe v2 REST, as Triton's HTTP clients speak it) over the
// service layer (docs/HTTP.md, "The Open Inference Protocol"): the model is a store, named
// TENANT/STORE (two path segments). GET /v2, /v2/health/live, /v2/health/ready;
// GET /v2/models/TENANT/STORE (metadata) and /v2/models/TENANT/STORE/ready; and
// POST /v2/models/TENANT/STORE/infer, each infer one Service::Predict (relayed as a Predict to
// the member that serves the store). Errors are the
// protocol's {"error": ...} bodies with the HTTP status of the other calls. Runs on the HTTP
// library's connection thread and waits there for the service. Thread-safe.
#ifndef ADAPTD_SERVER_HTTP_OIP_H_
#define ADAPTD_SERVER_HTTP_OIP_H_

#include <string>

#include "server/http/api.h"
#include "server/http/http_status.h"
#include "server/service/service.h"

namespace adaptd::http {

// Whether `path` is the protocol's: /v2 and under it.
bool IsOipPath(absl::string_view path);

// Serves a request whose path IsOipPath; `not_ready`: why /v2/health/ready answers 503 ("" when
// the server is ready). With
// `relay`, a model another cluster member serves is asked there (docs/HTTP.md, "A cluster");
// without, 421 naming the member.
Reply ServeOip(Service& service, const Relay& relay, const Request& request, const CallInfo& info,
               const std::string& not_ready);

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_OIP_H_
