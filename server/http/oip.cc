#include "server/http/oip.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "server/http/oip_tensors.h"

namespace adaptd::http {
namespace {

namespace pb = adapt::v1;

Reply OipJson(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

Reply OipError(int http_status, const absl::Status& status) {
  return OipJson(http_status, oip::ErrorBody(status));
}

Reply OipError(const absl::Status& status) { return OipError(HttpStatusOf(status.code()), status); }

// A model's path: /v2/models/TENANT/STORE[/ready|/infer].
struct ModelPath {
  std::string tenant;
  std::string store;
  std::string action;  // "", "ready", "infer"
};

absl::StatusOr<ModelPath> ModelPathOf(absl::string_view path) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(path.substr(std::string_view("/v2/models/").size()), '/');
  ModelPath model;
  if (parts.size() == 3 && (parts[2] == "ready" || parts[2] == "infer")) {
    model.action = std::string(parts[2]);
    parts.pop_back();
  }
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::NotFoundError(absl::StrCat(
        "path ", path,
        ": not served; a model is a store, named TENANT/STORE: GET /v2/models/TENANT/STORE, "
        "GET /v2/models/TENANT/STORE/ready, POST /v2/models/TENANT/STORE/infer (versions are "
        "not named: a store answers with its latest published version)"));
  }
  model.tenant = std::string(parts[0]);
  model.store = std::string(parts[1]);
  return model;
}

// Admits a call on the model's tenant and checks where the store is served: an error answer
// (the call counted under `method`), or nullopt to go on, here or, with `relay`, at `*owner`
// when another member serves the store (without one, 421 naming it).
std::optional<Reply> Admitted(Service& service, const Relay& relay, const char* method,
                              const CallInfo& info, const ModelPath& model, absl::Time start,
                              AdmittedCall* admitted, const cluster::Member** owner) {
  absl::Status status = service.Admit(info, model.tenant, admitted);
  int http_status = 0;
  if (status.ok()) {
    auto to = service.Route(info, model.tenant, model.store, Access::kRead);
    if (!to.ok()) {
      status = to.status();
    } else if (*to != nullptr && relay) {
      *owner = *to;
    } else if (*to != nullptr) {
      status = MisdirectedStatus(model.tenant, model.store, **to);
      http_status = kMisdirected;
    }
  }
  if (status.ok()) return std::nullopt;
  service.Record(method, status, start, Transport::kHttp);
  return http_status != 0 ? OipError(http_status, status) : OipError(status);
}

// GetStore on the model's store (here, or relayed to the member that serves it), counted: the
// store, or the error answer.
absl::StatusOr<pb::StoreInfo> StoreOf(Service& service, const Relay& relay, const CallInfo& info,
                                      const ModelPath& model, std::optional<Reply>* refused) {
  const absl::Time start = absl::Now();
  AdmittedCall admitted;
  const cluster::Member* owner = nullptr;
  *refused = Admitted(service, relay, "GetStore", info, model, start, &admitted, &owner);
  if (refused->has_value()) return absl::CancelledError("refused");
  pb::GetStoreRequest request;
  request.set_tenant(model.tenant);
  request.set_store(model.store);
  pb::StoreInfo store;
  const absl::Status status =
      owner != nullptr
          ? RelayedCall(relay, *owner, "GetStore", info, request, &store)
          : Wait([&](Service::Done done) { service.GetStore(info, request, &store, done); });
  service.Record("GetStore", status, start, Transport::kHttp);
  if (!status.ok()) {
    *refused = OipError(status);
    return status;
  }
  return store;
}

// GET /v2/models/TENANT/STORE: the store's inputs and outputs; whether its encoder takes text
// is ListEncoders'.
Reply Metadata(Service& service, const Relay& relay, const CallInfo& info, const ModelPath& model) {
  std::optional<Reply> refused;
  absl::StatusOr<pb::StoreInfo> store = StoreOf(service, relay, info, model, &refused);
  if (refused.has_value()) return *std::move(refused);
  pb::ListEncodersResponse encoders;
  const absl::Status listed = Wait([&](Service::Done done) {
    service.ListEncoders(info, pb::ListEncodersRequest(), &encoders, done);
  });
  if (!listed.ok()) return OipError(listed);
  bool text = false;
  for (const pb::EncoderInfo& encoder : encoders.encoders()) {
    if (encoder.name() == store->spec().encoder()) text = encoder.input_kind() == "text";
  }
  return OipJson(200,
                 oip::ModelMetadata(absl::StrCat(model.tenant, "/", model.store), *store, text));
}

// GET /v2/models/TENANT/STORE/ready: 200 for a healthy store, 503 for a failed one.
Reply ModelReady(Service& service, const Relay& relay, const CallInfo& info,
                 const ModelPath& model) {
  std::optional<Reply> refused;
  absl::StatusOr<pb::StoreInfo> store = StoreOf(service, relay, info, model, &refused);
  if (refused.has_value()) return *std::move(refused);
  if (!store->failure().empty()) {
    return OipError(absl::UnavailableError(
        absl::StrCat("model ", model.tenant, "/", model.store, ": failed: ", store->failure())));
  }
  return OipJson(200, "");
}

// POST /v2/models/TENANT/STORE/infer: one Predict, counted as Predict; for another member's
// store, the Predict relayed there and its answer written here.
Reply Infer(Service& service, const Relay& relay, const Request& request, const CallInfo& info,
            const ModelPath& model) {
  const absl::Time start = absl::Now();
  absl::StatusOr<oip::InferCall> call = oip::ParseInfer(request.body, request.header_length);
  if (!call.ok()) {
    service.Record("Predict", call.status(), start, Transport::kHttp);
    return OipError(call.status());
  }
  AdmittedCall admitted;
  const cluster::Member* owner = nullptr;
  if (auto refused = Admitted(service, relay, "Predict", info, model, start, &admitted, &owner)) {
    return *std::move(refused);
  }
  call->predict.set_tenant(model.tenant);
  call->predict.set_store(model.store);
  pb::PredictResponse response;
  const absl::Status status =
      owner != nullptr ? RelayedCall(relay, *owner, "Predict", info, call->predict, &response)
                       : Wait([&](Service::Done done) {
                           service.Predict(info, call->predict, &response, done);
                         });
  service.Record("Predict", status, start, Transport::kHttp);
  if (!status.ok()) return OipError(status);
  absl::StatusOr<oip::InferAnswer> answer =
      oip::WriteInfer(*call, absl::StrCat(model.tenant, "/", model.store), response);
  if (!answer.ok()) return OipError(answer.status());
  Reply reply = OipJson(200, std::move(answer->body));
  if (answer->header_length.has_value()) {
    reply.content_type = "application/octet-stream";
    reply.headers.emplace_back(oip::kHeaderLengthHeader, absl::StrCat(*answer->header_length));
  }
  return reply;
}

Reply NotAllowed(const Request& request, const char* allowed) {
  Reply reply = OipError(
      405, absl::InvalidArgumentError(absl::StrCat(request.path, ": method ", request.method,
                                                   " not allowed; send ", allowed)));
  reply.headers.emplace_back("Allow", allowed);
  return reply;
}

}  // namespace

bool IsOipPath(absl::string_view path) { return path == "/v2" || absl::StartsWith(path, "/v2/"); }

Reply ServeOip(Service& service, const Relay& relay, const Request& request, const CallInfo& info,
               const std::string& not_ready) {
  const absl::string_view path = request.path;
  if (path == "/v2" || path == "/v2/health/live" || path == "/v2/health/ready") {
    if (request.method != "GET") return NotAllowed(request, "GET");
    if (path == "/v2") {
      return OipJson(200, R"({"name":"adaptd","version":"1","extensions":["classification",)"
                          R"("binary_tensor_data"]})");
    }
    if (path == "/v2/health/ready" && !not_ready.empty()) {
      return OipError(absl::UnavailableError(not_ready));
    }
    return OipJson(200, "");
  }
  if (!absl::StartsWith(path, "/v2/models/")) {
    return OipError(absl::NotFoundError(
        absl::StrCat("path ", path,
                     ": not served; the Open Inference Protocol's paths are /v2, "
                     "/v2/health/live, /v2/health/ready and /v2/models/TENANT/STORE[/ready, "
                     "/infer]")));
  }
  absl::StatusOr<ModelPath> model = ModelPathOf(path);
  if (!model.ok()) return OipError(model.status());
  if (model->action == "infer") {
    if (request.method != "POST") return NotAllowed(request, "POST");
    return Infer(service, relay, request, info, *model);
  }
  if (request.method != "GET") return NotAllowed(request, "GET");
  return model->action == "ready" ? ModelReady(service, relay, info, *model)
                                  : Metadata(service, relay, info, *model);
}

}  // namespace adaptd::http
