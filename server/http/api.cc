#include "server/http/api.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "server/http/delimited_body.h"
#include "server/http/json_mapping.h"
#include "server/http/oip.h"
#include "server/http/predict_json.h"

namespace adaptd::http {
namespace {

namespace pb = adapt::v1;

// What a call checks after admission and before it runs.
enum class Check {
  kNone,   // ListEncoders, ClusterRoutes
  kRoute,  // a store call: served here, or relayed (else refused) when another member holds it
  kBase,   // CreateStore: the base's tenant, then the route
  kList,   // ListStores: one server's page, or a cluster's pages gathered (else refused)
  kAdmin,  // ClusterStatus, DrainMember: admin tokens, a cluster member
};

// The tenant a request names, read through its descriptor; requests that name none are
// checked for authentication only.
std::string TenantOf(const google::protobuf::Message& request) {
  const google::protobuf::FieldDescriptor* field =
      request.GetDescriptor()->FindFieldByName("tenant");
  if (field == nullptr || field->type() != google::protobuf::FieldDescriptor::TYPE_STRING ||
      field->is_repeated()) {
    return "";
  }
  return request.GetReflection()->GetString(request, field);
}

// An answer with a JSON body.
Reply Json(int status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

// A refusal after admission: the status, and the HTTP status it is answered with.
struct Refusal {
  absl::Status status;
  int http_status;
};

Refusal Refused(const absl::Status& status) { return {status, HttpStatusOf(status.code())}; }

// A call the service routed to another member, answered 421 Misdirected Request.
Refusal Misdirected(const std::string& tenant, const std::string& store,
                    const cluster::Member& member) {
  return {MisdirectedStatus(tenant, store, member), kMisdirected};
}

// The check of `kCheck` for `request`: a refusal, or nullopt to go on. With `owner` (the call
// can be relayed), a call for another member's store sets `*owner` to that member instead of
// being refused; a cluster's listing is then gathered.
template <Check kCheck, Access kAccess, typename Req>
std::optional<Refusal> Checked(Service& service, const CallInfo& info, const Req& request,
                               const cluster::Member** owner) {
  if constexpr (kCheck == Check::kAdmin) {
    if (auto s = service.AdmitAdmin(info); !s.ok()) return Refused(s);
  } else if constexpr (kCheck == Check::kList) {
    if (owner == nullptr && service.ListPeers(info).has_value()) {
      return Refused(absl::UnimplementedError(
          "ListStores over HTTP in a cluster: the members' pages are gathered over gRPC only "
          "(docs/HTTP.md, \"Slices\"); call ListStores over gRPC"));
    }
  } else if constexpr (kCheck == Check::kRoute || kCheck == Check::kBase) {
    if constexpr (kCheck == Check::kBase) {
      if (auto s = service.CheckBase(info, request); !s.ok()) return Refused(s);
    }
    auto to = service.Route(info, request.tenant(), request.store(), kAccess);
    if (!to.ok()) return Refused(to.status());
    if (*to != nullptr && owner == nullptr) {
      return Misdirected(request.tenant(), request.store(), **to);
    }
    if (owner != nullptr) *owner = *to;
  }
  return std::nullopt;
}

template <typename Req, typename Resp>
using ServiceCall = void (Service::*)(const CallInfo&, const Req&, Resp*, Service::Done);

// Parses, admits and checks one request read whole: the error answer (the call counted), or
// nullopt to run it (here, or at `*owner` when set: Checked).
template <typename Req, Check kCheck, Access kAccess>
std::optional<Reply> Admitted(Service& service, const char* name, const CallInfo& info,
                              absl::string_view body, absl::Time start, Req* request,
                              AdmittedCall* admitted, const cluster::Member** owner = nullptr) {
  absl::Status status;
  if constexpr (std::is_same_v<Req, pb::PredictRequest>) {
    // Predict's common shape read directly; any other form, and every refusal, the mapping's.
    if (!ReadPredictJson(body, request)) {
      request->Clear();
      status = ParseJson(body, request);
    }
  } else {
    status = ParseJson(body, request);
  }
  if (status.ok()) status = service.Admit(info, TenantOf(*request), admitted);
  if (!status.ok()) {
    service.Record(name, status, start, Transport::kHttp);
    return ErrorReply(status);
  }
  if (std::optional<Refusal> refused = Checked<kCheck, kAccess>(service, info, *request, owner)) {
    service.Record(name, refused->status, start, Transport::kHttp);
    return ErrorReply(refused->http_status, refused->status);
  }
  return std::nullopt;
}

// A cluster's listing (docs/CLUSTER.md, "Calls"): this member's page and each of `others`'
// (relayed, so each answers from its own stores), merged; an error here wins, else the first
// member's, named.
absl::Status Gathered(Service& service, const Relay& relay, const CallInfo& info,
                      const std::vector<const cluster::Member*>& others,
                      const pb::ListStoresRequest& request, pb::ListStoresResponse* out) {
  std::vector<pb::ListStoresResponse> pages(others.size() + 1);
  std::vector<std::string> replies(others.size());
  std::vector<absl::Status> statuses(others.size() + 1);
  absl::BlockingCounter pending(static_cast<int>(others.size()) + 1);
  const std::string bytes = request.SerializeAsString();
  for (size_t i = 0; i < others.size(); ++i) {
    relay(*others[i], "ListStores", bytes, info, &replies[i],
          [&statuses, &pending, i](const absl::Status& s) {
            statuses[i] = s;
            pending.DecrementCount();
          });
  }
  service.ListStores(info, request, &pages.back(), [&](const absl::Status& s) {
    statuses.back() = s;
    pending.DecrementCount();
  });
  pending.Wait();
  if (!statuses.back().ok()) return statuses.back();
  for (size_t i = 0; i < others.size(); ++i) {
    absl::Status s = statuses[i];
    if (s.ok() && !pages[i].ParseFromString(replies[i])) {
      s = absl::InternalError("the page does not parse");
    }
    if (!s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("ListStores: member ", others[i]->name, ": ", s.message()));
    }
  }
  return Service::MergeListPages(request, &pages, out);
}

// One unary call: parse, admit, check, run here or at the store's member (with a relay),
// answer; counted as the gRPC calls are.
template <typename Req, typename Resp, ServiceCall<Req, Resp> kCall, Check kCheck,
          Access kAccess = Access::kRead>
Reply Unary(Service& service, const Relays& relays, const char* name, const CallInfo& info,
            absl::string_view body) {
  const Relay& relay = relays.unary;
  const absl::Time start = absl::Now();
  Req request;
  AdmittedCall admitted;
  const cluster::Member* owner = nullptr;
  if (auto refused = Admitted<Req, kCheck, kAccess>(service, name, info, body, start, &request,
                                                    &admitted, relay ? &owner : nullptr)) {
    return *std::move(refused);
  }
  Resp response;
  absl::Status status;
  std::optional<std::vector<const cluster::Member*>> others;
  if constexpr (kCheck == Check::kList) {
    if (relay) others = service.ListPeers(info);
  }
  if (owner != nullptr) {
    status = RelayedCall(relay, *owner, name, info, request, &response);
  } else if (others.has_value()) {
    if constexpr (kCheck == Check::kList) {
      status = Gathered(service, relay, info, *others, request, &response);
    }
  } else {
    status = Wait([&](Service::Done done) { (service.*kCall)(info, request, &response, done); });
  }
  service.Record(name, status, start, Transport::kHttp);
  if (!status.ok()) return ErrorReply(status);
  absl::StatusOr<std::string> json = PrintJson(response);
  if (!json.ok()) return ErrorReply(json.status());
  return Json(200, *std::move(json));
}

// The body of an export from the member's StoreChunk messages, each written length-delimited
// as this member writes its own: false when the client stopped reading or a chunk does not
// parse (`*status` says which).
bool WriteChunks(MemberStream& stream, std::string first, const PieceWriter& write,
                 absl::Status* status) {
  std::string bytes = std::move(first);
  do {
    pb::StoreChunk chunk;
    if (!chunk.ParseFromString(bytes)) {
      *status = absl::InternalError("ExportStore: the member sent a chunk that does not parse");
      return false;
    }
    std::string piece;
    AppendDelimited(chunk, &piece);
    if (!write(piece)) {
      *status = absl::CancelledError("the client stopped reading");
      return false;
    }
  } while (stream.Next(&bytes));  // the next chunk is read once this one is written
  return true;
}

// ExportStore for a store another member serves: its server stream relayed into the body as
// the chunks arrive, one buffered at most. A refusal before the first chunk answers as the
// member's own; a failure after it cuts the body short (no last chunk: Reply::stream), as the
// gRPC relay ends the caller's stream with the member's status. Counted once the member's call
// ended.
Reply RelayedExport(Service& service, const StreamRelay& open, const cluster::Member& to,
                    const char* name, const CallInfo& info, const pb::ExportStoreRequest& request,
                    absl::Time start, std::shared_ptr<AdmittedCall> admitted) {
  std::shared_ptr<MemberStream> stream =
      open(to, name, request.SerializeAsString(), /*last=*/true, info);
  auto first = std::make_shared<std::string>();
  const bool any = stream->Next(first.get());
  if (!any) {
    std::string none;
    if (absl::Status status = stream->Finish(&none); !status.ok()) {
      service.Record(name, status, start, Transport::kHttp);
      return ErrorReply(status);
    }
  }
  Reply reply;
  reply.content_type = "application/octet-stream";
  reply.headers.emplace_back("Connection", "close");  // the body may be cut short
  reply.stream = [&service, name, start, admitted, stream, first, any](const PieceWriter& write) {
    absl::Status status;
    if (any && !WriteChunks(*stream, std::move(*first), write, &status)) {
      stream->Cancel();
    } else {
      std::string none;
      status = stream->Finish(&none);
    }
    service.Record(name, status, start, Transport::kHttp);
    return status.ok();
  };
  return reply;
}

// ExportStore: the store's snapshot file as the gRPC call streams it, StoreChunk messages of
// the service's export chunk size, each written length-delimited into a chunked
// application/octet-stream body. The call holds its place in the gate and is counted once the
// last piece is written, or once the client stopped reading (CANCELLED).
Reply Export(Service& service, const Relays& relays, const char* name, const CallInfo& info,
             absl::string_view body) {
  const absl::Time start = absl::Now();
  pb::ExportStoreRequest request;
  auto admitted = std::make_shared<AdmittedCall>();
  const cluster::Member* owner = nullptr;
  if (auto refused = Admitted<pb::ExportStoreRequest, Check::kRoute, Access::kRead>(
          service, name, info, body, start, &request, admitted.get(),
          relays.stream ? &owner : nullptr)) {
    return *std::move(refused);
  }
  if (owner != nullptr) {
    return RelayedExport(service, relays.stream, *owner, name, info, request, start, admitted);
  }
  auto file = std::make_shared<std::string>();
  const absl::Status status =
      Wait([&](Service::Done done) { service.Export(info, request, file.get(), done); });
  if (!status.ok()) {
    service.Record(name, status, start, Transport::kHttp);
    return ErrorReply(status);
  }
  Reply reply;
  reply.content_type = "application/octet-stream";
  reply.stream = [&service, name, start, admitted, file](const PieceWriter& write) {
    const size_t step = std::max<size_t>(1, service.export_chunk_bytes());
    absl::Status written;
    for (size_t offset = 0; offset < file->size() && written.ok(); offset += step) {
      pb::StoreChunk chunk;
      chunk.set_data(file->substr(offset, step));
      std::string piece;
      AppendDelimited(chunk, &piece);
      if (!write(piece)) written = absl::CancelledError("the client stopped reading");
    }
    service.Record(name, written, start, Transport::kHttp);
    return written.ok();
  };
  return reply;
}

// Ping: admitted, then answered at once (the transport's baseline for load tests).
Reply Ping(Service& service, const Relays&, const char* name, const CallInfo& info,
           absl::string_view body) {
  const absl::Time start = absl::Now();
  pb::PingRequest request;
  absl::Status status = ParseJson(body, &request);
  AdmittedCall admitted;
  if (status.ok()) status = service.Admit(info, "", &admitted);
  service.Record(name, status, start, Transport::kHttp);
  return status.ok() ? Json(200, "{}") : ErrorReply(status);
}

// Where a message of a streamed write was, for the answers naming it.
absl::Status At(const BodyMessage& message, const absl::Status& status) {
  const std::string where =
      message.line > 0 ? absl::StrCat("message ", message.index, " (line ", message.line, ")")
                       : absl::StrCat("message ", message.index);
  return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
}

template <typename Req, typename Resp>
using Write = Service::Write<Req, Resp>;

// Reads, checks and stages each message of the body in order, as a gRPC Adapt or Forget
// stream's: its tenant authorized, the first message naming a store routes the call. With
// `open`, a call for another member's store is relayed there from that message on, each
// message sent as it is read (`*relayed`; a message the member ended the call before stops the
// reading, and its status answers). A refusal, or nullopt once every message is staged or sent.
template <typename Req, typename Resp>
std::optional<Refusal> StageAll(Service& service, const StreamRelay& open, const char* name,
                                const CallInfo& info, WriteBody& body, Write<Req, Resp>& write,
                                std::unique_ptr<MemberStream>* relayed) {
  bool routed = false;
  for (;;) {
    BodyMessage message;
    bool got = false;
    if (std::optional<BodyRefusal> refused = body.Next(&message, &got)) {
      return Refusal{refused->status, refused->http_status};
    }
    if (!got) return std::nullopt;
    Req request;
    if (absl::Status s = ParseJson(message.json, &request); !s.ok()) return Refused(At(message, s));
    if (absl::Status s = service.Authorize(info, request.tenant()); !s.ok()) return Refused(s);
    if (*relayed != nullptr) {
      if (!(*relayed)->Send(request.SerializeAsString())) return std::nullopt;
      continue;
    }
    if (!routed && !request.tenant().empty() && !request.store().empty()) {
      auto to = service.Route(info, request.tenant(), request.store(), Access::kWrite);
      if (!to.ok()) return Refused(to.status());
      if (*to != nullptr && !open) return Misdirected(request.tenant(), request.store(), **to);
      if (*to != nullptr) {
        *relayed = open(**to, name, request.SerializeAsString(), /*last=*/false, info);
        continue;
      }
      routed = true;
    }
    const absl::Status staged = Wait([&](Service::Done done) { write.Stage(request, done); });
    if (!staged.ok()) return Refused(staged);  // the session's refusal names the message
  }
}

// The end of a client stream relayed to another member: after a refusal here, the call
// cancelled (the member commits nothing) and the refusal; else the call half-closed and the
// member's answer, its reply in `*response`.
std::optional<Refusal> RelayEnded(MemberStream& relayed, const std::optional<Refusal>& refused,
                                  google::protobuf::Message* response) {
  if (refused.has_value()) {
    relayed.Cancel();
    return refused;
  }
  std::string reply;
  absl::Status status = relayed.Finish(&reply);
  if (status.ok() && !response->ParseFromString(reply)) {
    status = absl::InternalError("the member answered a message that does not parse");
  }
  if (!status.ok()) return Refused(status);
  return std::nullopt;
}

// The answer to a call that read its own body, counted: the refusal (closing the connection
// when the body was not read to its end), or `response` in JSON.
Reply Answered(Service& service, const char* name, absl::Time start,
               const std::optional<Refusal>& refused, bool body_ended,
               const google::protobuf::Message& response) {
  service.Record(name, refused.has_value() ? refused->status : absl::OkStatus(), start,
                 Transport::kHttp);
  if (refused.has_value()) {
    Reply reply = ErrorReply(refused->http_status, refused->status);
    if (!body_ended) reply.headers.emplace_back("Connection", "close");
    return reply;
  }
  absl::StatusOr<std::string> json = PrintJson(response);
  if (!json.ok()) return ErrorReply(json.status());
  return Json(200, *std::move(json));
}

// Adapt or Forget: the body's messages (newline-delimited JSON, or one JSON array) staged as
// they arrive and committed once at its end, one transaction as a gRPC stream; a refusal
// commits nothing. A refusal before the body's end closes the connection, the rest unread.
template <typename Req, typename Resp>
Reply Streamed(Service& service, const StreamRelay& open, const char* name, const CallInfo& info,
               const BodyReader& read, const WriteLimits& limits) {
  const absl::Time start = absl::Now();
  WriteBody body(read, limits);
  std::optional<Refusal> refused;
  AdmittedCall admitted;
  Resp response;
  if (absl::Status s = service.Admit(info, "", &admitted); !s.ok()) refused = Refused(s);
  if (!refused.has_value()) {
    std::unique_ptr<Write<Req, Resp>> write;
    if constexpr (std::is_same_v<Req, pb::AdaptRequest>) {
      write = service.StartAdapt(info);
    } else {
      write = service.StartForget(info);
    }
    std::unique_ptr<MemberStream> relayed;
    refused = StageAll(service, open, name, info, body, *write, &relayed);
    if (relayed != nullptr) {
      refused = RelayEnded(*relayed, refused, &response);
    } else if (!refused.has_value()) {
      const absl::Status committed =
          Wait([&](Service::Done done) { write->Commit(&response, done); });
      if (!committed.ok()) refused = Refused(committed);
    }
  }
  return Answered(service, name, start, refused, body.ended(), response);
}

// Reads each length-delimited StoreChunk of the body in order and adds it to `import`, as a
// gRPC ImportStore stream's: its tenant authorized, the first chunk routes the call, past the
// import limit 413. With `open`, a call for another member's store is relayed there from that
// chunk on, as StageAll relays a write. A refusal, or nullopt once the body ended (or the
// member ended the call).
std::optional<Refusal> AddAll(Service& service, const StreamRelay& open, const CallInfo& info,
                              DelimitedBody& body, Service::Import& import,
                              std::unique_ptr<MemberStream>* relayed) {
  for (;;) {
    std::string bytes;
    bool got = false;
    if (std::optional<BodyRefusal> refused = body.Next(&bytes, &got)) {
      return Refusal{refused->status, refused->http_status};
    }
    if (!got) return std::nullopt;
    pb::StoreChunk chunk;
    if (!chunk.ParseFromString(bytes)) {
      return Refused(absl::InvalidArgumentError(absl::StrCat(
          "request body, message ", body.messages(),
          ": not an adapt.v1.StoreChunk; the body is length-delimited StoreChunk messages (each "
          "a varint length, then the message), as ExportStore writes them")));
    }
    if (absl::Status s = service.Authorize(info, chunk.tenant()); !s.ok()) return Refused(s);
    if (*relayed != nullptr) {
      if (!(*relayed)->Send(std::move(bytes))) return std::nullopt;
      continue;
    }
    if (!import.named()) {
      auto to = service.Route(info, chunk.tenant(), chunk.store(), Access::kCreate);
      if (!to.ok()) return Refused(to.status());
      if (*to != nullptr && !open) return Misdirected(chunk.tenant(), chunk.store(), **to);
      if (*to != nullptr) {
        *relayed = open(**to, "ImportStore", bytes, /*last=*/false, info);
        continue;
      }
    }
    if (absl::Status added = import.Add(chunk); !added.ok()) {
      // Past the import limit: the body is too large, as for the other calls' limits.
      return Refusal{added, added.code() == absl::StatusCode::kResourceExhausted
                                ? 413
                                : HttpStatusOf(added.code())};
    }
  }
}

// ImportStore: the body's StoreChunk messages (ExportStore's bytes, the first chunk naming the
// target tenant and store), read as they arrive and imported once at the body's end; a refusal
// imports nothing.
Reply Import(Service& service, const StreamRelay& open, const char* name, const CallInfo& info,
             const BodyReader& read, const WriteLimits& limits) {
  const absl::Time start = absl::Now();
  DelimitedBody body(read, limits.max_message_bytes);
  std::optional<Refusal> refused;
  AdmittedCall admitted;
  pb::StoreInfo response;
  if (absl::Status s = service.Admit(info, "", &admitted); !s.ok()) refused = Refused(s);
  if (!refused.has_value()) {
    std::unique_ptr<Service::Import> import = service.StartImport(info);
    std::unique_ptr<MemberStream> relayed;
    refused = AddAll(service, open, info, body, *import, &relayed);
    if (relayed != nullptr) {
      refused = RelayEnded(*relayed, refused, &response);
    } else if (!refused.has_value()) {
      const absl::Status committed =
          Wait([&](Service::Done done) { import->Commit(&response, done); });
      if (!committed.ok()) refused = Refused(committed);
    }
  }
  return Answered(service, name, start, refused, body.ended(), response);
}

using StreamedHandler = Reply (*)(Service&, const StreamRelay&, const char*, const CallInfo&,
                                  const BodyReader&, const WriteLimits&);

struct StreamedMethod {
  const char* name;
  StreamedHandler handler;
};

// The client-streaming calls, their body read as it arrives.
constexpr StreamedMethod kStreamedMethods[] = {
    {"Adapt", &Streamed<pb::AdaptRequest, pb::AdaptResponse>},
    {"Forget", &Streamed<pb::ForgetRequest, pb::ForgetResponse>},
    {"ImportStore", &Import},
};

using Handler = Reply (*)(Service&, const Relays&, const char*, const CallInfo&, absl::string_view);

struct Method {
  const char* name;
  Handler handler;
};

// Every public unary RPC of adapt.v1.Adaptation, and ExportStore: its request read whole as a
// unary call's, its answer a download.
constexpr Method kMethods[] = {
    {"CreateStore", &Unary<pb::CreateStoreRequest, pb::StoreInfo, &Service::CreateStore,
                           Check::kBase, Access::kCreate>},
    {"GetStore",
     &Unary<pb::GetStoreRequest, pb::StoreInfo, &Service::GetStore, Check::kRoute, Access::kRead>},
    {"ListStores",
     &Unary<pb::ListStoresRequest, pb::ListStoresResponse, &Service::ListStores, Check::kList>},
    {"DeleteStore", &Unary<pb::DeleteStoreRequest, pb::DeleteStoreResponse, &Service::DeleteStore,
                           Check::kRoute, Access::kDelete>},
    {"PinStore",
     &Unary<pb::PinStoreRequest, pb::StoreInfo, &Service::PinStore, Check::kRoute, Access::kWrite>},
    {"Compile", &Unary<pb::CompileRequest, pb::CompileResponse, &Service::Compile, Check::kRoute,
                       Access::kWrite>},
    {"Predict", &Unary<pb::PredictRequest, pb::PredictResponse, &Service::Predict, Check::kRoute,
                       Access::kRead>},
    {"Feedback", &Unary<pb::FeedbackRequest, pb::FeedbackResponse, &Service::Feedback,
                        Check::kRoute, Access::kWrite>},
    {"ListEncoders", &Unary<pb::ListEncodersRequest, pb::ListEncodersResponse,
                            &Service::ListEncoders, Check::kNone>},
    // Any authenticated caller; the service answers 501 on a single server.
    {"ClusterRoutes", &Unary<pb::ClusterRoutesRequest, pb::ClusterRoutesResponse,
                             &Service::ClusterRoutes, Check::kNone>},
    {"ClusterStatus", &Unary<pb::ClusterStatusRequest, pb::ClusterStatusResponse,
                             &Service::ClusterStatus, Check::kAdmin>},
    {"DrainMember",
     &Unary<pb::DrainMemberRequest, pb::DrainMemberResponse, &Service::DrainMember, Check::kAdmin>},
    {"Ping", &Ping},
    {"ExportStore", &Export},  // the answer a download
};

// The streaming RPCs, served over HTTP in later slices (docs/HTTP.md, "Slices").
constexpr absl::string_view kLaterSlices[] = {"PredictStream"};
// The members' own calls: gRPC between members only.
constexpr absl::string_view kMembersOnly[] = {"ClusterQuota", "ClusterBase"};

template <typename List>
bool Lists(const List& list, absl::string_view method) {
  for (absl::string_view m : list) {
    if (m == method) return true;
  }
  return false;
}

template <typename Table>
auto Find(const Table& table, absl::string_view method) -> decltype(&table[0]) {
  for (const auto& m : table) {
    if (method == m.name) return &m;
  }
  return nullptr;
}

std::string MethodNames() {
  std::string names;
  for (const Method& m : kMethods) absl::StrAppend(&names, names.empty() ? "" : ", ", m.name);
  for (const StreamedMethod& m : kStreamedMethods) absl::StrAppend(&names, ", ", m.name);
  return names;
}

// A body already read whole, handed out as a BodyReader would.
BodyReader ReaderOf(absl::string_view body) {
  return [body](char* buffer, size_t size) mutable {
    const size_t n = std::min(size, body.size());
    std::copy(body.begin(), body.begin() + n, buffer);
    body.remove_prefix(n);
    return static_cast<int>(n);
  };
}

}  // namespace

absl::Status Wait(const std::function<void(Service::Done)>& start) {
  absl::Notification finished;
  absl::Status result;
  start([&](const absl::Status& status) {
    result = status;
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

absl::Status RelayedCall(const Relay& relay, const cluster::Member& to, const char* method,
                         const CallInfo& call, const google::protobuf::Message& request,
                         google::protobuf::Message* response) {
  std::string reply;
  absl::Status status = Wait([&](Service::Done done) {
    relay(to, method, request.SerializeAsString(), call, &reply, std::move(done));
  });
  if (status.ok() && !response->ParseFromString(reply)) {
    status = absl::InternalError(
        absl::StrCat(method, ": member ", to.name, " answered a message that does not parse"));
  }
  return status;
}

absl::Status MisdirectedStatus(const std::string& tenant, const std::string& store,
                               const cluster::Member& member) {
  return absl::UnavailableError(
      absl::StrCat("store ", tenant, "/", store, " is served by member ", member.name, " (gRPC ",
                   member.address, "); this member does not relay this HTTP call: call member ",
                   member.name, " over HTTP, or call this one over gRPC"));
}

std::string Api::NotReady() const {
  if (draining_) return "the server is draining";
  if (!ready_)
    return "the server is starting: a member of a cluster on etcd is ready once it holds its "
           "shards";
  return "";
}

Reply Api::Serve(const Request& request) const {
  if (request.path == "/healthz") return Json(200, R"({"status":"SERVING"})");
  if (request.path == "/readyz") {
    return NotReady().empty() ? Json(200, R"({"status":"SERVING"})")
                              : Json(503, R"({"status":"NOT_SERVING"})");
  }
  if (absl::StartsWith(request.path, "/v1/")) {
    return ServeMethod(absl::string_view(request.path).substr(4), request);
  }
  if (IsOipPath(request.path)) {
    absl::StatusOr<CallInfo> info = CallInfoOf(request);
    if (!info.ok()) return ErrorReply(info.status());
    return ServeOip(*service_, relays_.unary, request, *info, NotReady());
  }
  return ErrorReply(absl::NotFoundError(absl::StrCat(
      "path ", request.path, ": not served; the calls are POST /v1/<Method> (", MethodNames(),
      "), GET /healthz and /readyz, and the Open Inference "
      "Protocol's under /v2")));
}

MethodKind Api::KindOf(absl::string_view method) {
  if (Find(kMethods, method) != nullptr) return MethodKind::kServed;
  if (Find(kStreamedMethods, method) != nullptr) return MethodKind::kStreamed;
  if (Lists(kLaterSlices, method)) return MethodKind::kLaterSlice;
  if (Lists(kMembersOnly, method)) return MethodKind::kMembersOnly;
  return MethodKind::kUnknown;
}

Reply Api::ServeMethod(absl::string_view method, const Request& request) const {
  const MethodKind kind = KindOf(method);
  switch (kind) {
    case MethodKind::kServed:
    case MethodKind::kStreamed:
      break;
    case MethodKind::kLaterSlice:
      return ErrorReply(absl::UnimplementedError(
          absl::StrCat("/v1/", method,
                       ": a streaming call, not served over HTTP yet (docs/HTTP.md, "
                       "\"Slices\"); call it over gRPC")));
    case MethodKind::kMembersOnly:
      return ErrorReply(absl::NotFoundError(
          absl::StrCat("/v1/", method,
                       ": the cluster members' own call, served between members over gRPC "
                       "only")));
    case MethodKind::kUnknown:
      return ErrorReply(absl::NotFoundError(absl::StrCat(
          "/v1/", method, ": no such method over HTTP; the methods are ", MethodNames())));
  }
  if (request.method != "POST") {
    Reply reply = ErrorReply(405, absl::InvalidArgumentError(absl::StrCat(
                                      "/v1/", method, ": method ", request.method,
                                      " not allowed; send POST with the request in JSON")));
    reply.headers.emplace_back("Allow", "POST");
    return reply;
  }
  absl::StatusOr<CallInfo> info = CallInfoOf(request);
  if (!info.ok()) return ErrorReply(info.status());
  if (kind == MethodKind::kStreamed) {
    const StreamedMethod* streamed = Find(kStreamedMethods, method);
    return streamed->handler(*service_, relays_.stream, streamed->name, *info,
                             request.read_body ? request.read_body : ReaderOf(request.body),
                             limits_);
  }
  const Method* found = Find(kMethods, method);
  return found->handler(*service_, relays_, found->name, *info, request.body);
}

bool Api::ReadsOwnBody(absl::string_view verb, absl::string_view path) {
  return verb == "POST" && absl::StartsWith(path, "/v1/") &&
         KindOf(path.substr(4)) == MethodKind::kStreamed;
}

bool Api::HasCallLimit(absl::string_view path) {
  return path == "/v1/Adapt" || path == "/v1/Forget";
}

absl::StatusOr<CallInfo> Api::CallInfoOf(const Request& request) const {
  CallInfo call;
  if (request.authorization.has_value()) call.authorization = *request.authorization;
  if (request.timeout_ms.has_value()) {
    uint64_t ms = 0;
    if (!absl::SimpleAtoi(*request.timeout_ms, &ms)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTimeoutHeader, ": expected a whole number of milliseconds, got \"",
                       *request.timeout_ms, "\""));
    }
    call.deadline = absl::Now() + absl::Milliseconds(ms);
  }
  call.cancelled = [this] { return cancelled_.load(); };
  return call;
}

}  // namespace adaptd::http
