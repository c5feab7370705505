// HttpServer: the HTTP/1.1 listener of the HTTP/JSON front end (docs/HTTP.md), on civetweb
// (Debian's libcivetweb, which prometheus-cpp's exposer already brings). Civetweb parses HTTP
// (keep-alive, chunked request bodies, TLS through the OpenSSL it loads) and runs each
// connection on one of its threads; each request's body is read up to the size limit and
// served by `Api`. Start once; Drain and Stop
// from the thread that shuts the server down.
#ifndef ADAPTD_SERVER_HTTP_HTTP_SERVER_H_
#define ADAPTD_SERVER_HTTP_HTTP_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/http/api.h"
#include "server/http/member_relay.h"
#include "server/service/service.h"

struct mg_context;     // civetweb.h
struct mg_connection;  // civetweb.h

namespace adaptd::http {

struct HttpServerOptions {
  std::string listen;  // HOST:PORT, a numeric host; port 0 picks a free one
  // A request body past this answers 413 and is not read further (--max-message-bytes).
  size_t max_body_bytes = size_t{64} << 20;
  // The whole body of one Adapt or Forget, read as it arrives: past it, 413 and nothing
  // committed.
  size_t max_call_bytes = WriteLimits{}.max_call_bytes;
  // Connections served at once; each waits on its call.
  int threads = 64;
  // TLS with the gRPC listener's files (tls_cert_file, tls_key_file): empty for plain HTTP.
  // With a client CA (tls_client_ca_file), mutual TLS: a client certificate that CA signed is
  // required, as gRPC requires it.
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  // In a cluster, the gRPC channels to the other members: calls for another member's store
  // are relayed through it and ListStores gathers every member's page (docs/HTTP.md, "A
  // cluster"). Null: a single server. Must outlive the server.
  Forwarder* forwarder = nullptr;
};

class HttpServer {
 public:
  // Binds `options.listen` and serves the calls of `service`, which must outlive the server.
  // UNAVAILABLE naming the address when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           Service* service);
  ~HttpServer();

  // The bound address, HOST:PORT with the real port.
  const std::string& address() const { return address_; }
  // /readyz answers 503 from here on; the service refuses new calls by itself.
  void Drain() { api_.Drain(); }
  // /readyz answers 503 while not ready (Api::SetReady).
  void SetReady(bool ready) { api_.SetReady(ready); }
  // Stops listening and returns once every request in progress was answered; calls still
  // queued are cancelled.
  void Stop();

 private:
  explicit HttpServer(Service* service, const HttpServerOptions& options)
      : api_(service, WriteLimits{options.max_body_bytes, options.max_call_bytes},
             RelaysOver(options.forwarder)),
        max_body_bytes_(options.max_body_bytes),
        max_call_bytes_(options.max_call_bytes),
        tls_cert_file_(options.tls_cert_file),
        tls_key_file_(options.tls_key_file),
        tls_client_ca_file_(options.tls_client_ca_file) {}
  static int Handle(mg_connection* connection, void* self);
  // civetweb's init_ssl: loads the files into its SSL_CTX; 1 when done, -1 (tls_error_ set)
  // when a file cannot be used.
  static int InitTls(void* ssl_ctx, void* self);
  int Serve(mg_connection* connection) const;

  Api api_;
  const size_t max_body_bytes_;
  const size_t max_call_bytes_;
  mg_context* context_ = nullptr;
  std::string address_;
  std::string tls_cert_file_, tls_key_file_, tls_client_ca_file_;
  std::string tls_error_;  // why InitTls failed
};

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_HTTP_SERVER_H_
