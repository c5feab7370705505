#include "server/http/http_server.h"

#include <civetweb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/http/civetweb_tls.h"

namespace adaptd::http {

namespace {

// The header's value, if the request has it.
std::optional<std::string> Header(mg_connection* connection, const char* name) {
  const char* value = mg_get_header(connection, name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Reads the request body into `*body`: false once it passes `limit` (the rest is left unread)
// or the connection fails (`*failed`).
bool ReadBody(mg_connection* connection, size_t limit, std::string* body, bool* failed) {
  const mg_request_info* info = mg_get_request_info(connection);
  if (info->content_length > 0 && static_cast<uint64_t>(info->content_length) > limit) {
    return false;
  }
  std::vector<char> buffer(64 << 10);
  for (;;) {
    const int got = mg_read(connection, buffer.data(), buffer.size());
    if (got == 0) return true;
    if (got < 0) {
      *failed = true;
      return false;
    }
    body->append(buffer.data(), static_cast<size_t>(got));
    if (body->size() > limit) return false;
  }
}

void Send(mg_connection* connection, const Reply& reply) {
  mg_response_header_start(connection, reply.status);
  mg_response_header_add(connection, "Content-Type", reply.content_type.c_str(), -1);
  const std::string length = absl::StrCat(reply.body.size());
  if (reply.stream) {
    mg_response_header_add(connection, "Transfer-Encoding", "chunked", -1);
  } else {
    mg_response_header_add(connection, "Content-Length", length.c_str(), -1);
  }
  for (const auto& [name, value] : reply.headers) {
    mg_response_header_add(connection, name.c_str(), value.c_str(), -1);
  }
  mg_response_header_send(connection);
  if (!reply.stream) {
    mg_write(connection, reply.body.data(), reply.body.size());
    return;
  }
  bool open = true;
  const bool whole = reply.stream([connection, &open](const std::string& piece) {
    open = open && mg_send_chunk(connection, piece.data(), piece.size()) > 0;
    return open;
  });
  if (open && whole) mg_send_chunk(connection, "", 0);  // the last chunk: the body's end
}

// An error civetweb answers itself (a malformed request line or header, a missing length),
// answered as the front end's own errors are: JSON naming the code and the reason.
int SendLibraryError(mg_connection* connection, int status, const char* message) {
  // A request line civetweb could not read leaves no HTTP version to answer in: its own
  // plain-text page answers that.
  const char* version = mg_get_request_info(connection)->http_version;
  if (version == nullptr ||
      (std::strcmp(version, "1.0") != 0 && std::strcmp(version, "1.1") != 0)) {
    return 1;
  }
  Send(connection, ErrorReply(status, absl::Status(CodeOfHttpStatus(status),
                                                   absl::StrCat("HTTP request: ", message))));
  return 0;  // handled: no page of civetweb's own
}

// OpenSSL's last error, for a message.
std::string TlsErrorText() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256] = {};
  ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return text;
}

}  // namespace

int HttpServer::InitTls(void* ssl_ctx, void* self) {
  auto* server = static_cast<HttpServer*>(self);
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  auto fail = [server](const std::string& field, const std::string& file) {
    server->tls_error_ = absl::StrCat(field, " ", file, ": ", TlsErrorText());
    return -1;
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx, server->tls_cert_file_.c_str()) != 1) {
    return fail("tls_cert_file", server->tls_cert_file_);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, server->tls_key_file_.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    return fail("tls_key_file", server->tls_key_file_);
  }
  if (!server->tls_client_ca_file_.empty()) {
    // As gRPC's GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY: a certificate the
    // CA signed is required; none, or another CA's, fails the handshake.
    const char* ca = server->tls_client_ca_file_.c_str();
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca);
    if (names == nullptr || SSL_CTX_load_verify_locations(ctx, ca, nullptr) != 1) {
      if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return fail("tls_client_ca_file", server->tls_client_ca_file_);
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  return 1;  // civetweb sets nothing more up
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              Service* service) {
  const bool tls = !options.tls_cert_file.empty();
  // With TLS, civetweb loads OpenSSL here (libssl.so and libcrypto.so, by those unversioned
  // names); mg_start2 fails, saying so, when it could not. (1.15's first mg_init_library
  // answers 0 whatever it initialized, so its answer is not read.)
  mg_init_library(tls ? MG_FEATURES_TLS : 0);
  if (tls) {
    if (absl::Status repaired = RepairCivetwebTls(); !repaired.ok()) {
      mg_exit_library();
      return absl::FailedPreconditionError(
          absl::StrCat("cannot serve HTTP over TLS on ", options.listen, ": ", repaired.message()));
    }
  }
  std::unique_ptr<HttpServer> server(new HttpServer(service, options));
  const std::string threads = absl::StrCat(options.threads);
  // A port served over TLS is named with an `s` after it.
  const std::string listening = tls ? absl::StrCat(options.listen, "s") : options.listen;
  // The headers and the body leave in two writes: without tcp_nodelay, Nagle's algorithm holds
  // the body back until the client's delayed ACK (about 40 ms a call).
  // clang-format off
  const char* settings[] = {"listening_ports",   listening.c_str(),
                            "num_threads",       threads.c_str(),
                            "enable_keep_alive", "yes",
                            "tcp_nodelay",       "1",
                            nullptr};
  // clang-format on
  mg_callbacks callbacks = {};
  callbacks.http_error = &SendLibraryError;
  if (tls) callbacks.init_ssl = &HttpServer::InitTls;
  mg_init_data init = {&callbacks, server.get(), settings};
  char error_text[256] = {};
  mg_error_data error = {nullptr, error_text, sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    mg_exit_library();  // Stop, which gives back the library otherwise, has nothing to stop
    if (!server->tls_error_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot serve HTTP over TLS on ", options.listen, ": ", server->tls_error_));
    }
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", options.listen, ": ",
                                               error_text,
                                               " (the address may be in use or not available)"));
  }
  mg_set_request_handler(server->context_, "/", &HttpServer::Handle, server.get());
  mg_server_port port = {};
  const int ports = mg_get_server_ports(server->context_, 1, &port);
  server->address_ = absl::StrCat(options.listen.substr(0, options.listen.rfind(':')), ":",
                                  ports > 0 ? port.port : 0);
  return server;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (context_ == nullptr) return;
  api_.CancelAll();
  mg_stop(context_);
  context_ = nullptr;
  mg_exit_library();
}

int HttpServer::Handle(mg_connection* connection, void* self) {
  return static_cast<const HttpServer*>(self)->Serve(connection);
}

int HttpServer::Serve(mg_connection* connection) const {
  const mg_request_info* info = mg_get_request_info(connection);
  Request request;
  request.method = info->request_method;
  request.path = info->local_uri != nullptr ? info->local_uri : "";
  request.authorization = Header(connection, "Authorization");
  request.timeout_ms = Header(connection, kTimeoutHeader);
  request.header_length = Header(connection, "Inference-Header-Content-Length");
  bool failed = false;
  Reply reply;
  if (Api::ReadsOwnBody(request.method, request.path)) {
    if (Api::HasCallLimit(request.path) && info->content_length > 0 &&
        static_cast<uint64_t>(info->content_length) > max_call_bytes_) {
      reply = ErrorReply(413, absl::ResourceExhaustedError(absl::StrCat(
                                  "request body: larger than ", max_call_bytes_,
                                  " bytes, the server's limit on one Adapt or Forget call; "
                                  "nothing was committed")));
      reply.headers.emplace_back("Connection", "close");
    } else {
      request.read_body = [connection](char* buffer, size_t size) {
        return mg_read(connection, buffer, size);
      };
      reply = api_.Serve(request);
    }
  } else if (ReadBody(connection, max_body_bytes_, &request.body, &failed)) {
    reply = api_.Serve(request);
  } else if (failed) {
    reply = ErrorReply(absl::InvalidArgumentError("request body: the connection failed"));
  } else {
    reply = ErrorReply(413, absl::ResourceExhaustedError(
                                absl::StrCat("request body: larger than ", max_body_bytes_,
                                             " bytes, the server's --max-message-bytes")));
    reply.headers.emplace_back("Connection", "close");
  }
  Send(connection, reply);
  return reply.status;
}

}  // namespace adaptd::http
