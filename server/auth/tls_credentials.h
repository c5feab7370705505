// The gRPC server credentials the config asks for: plaintext, TLS (tls_cert_file and
// tls_key_file) or mutual TLS (plus tls_client_ca_file: client certificates are required and
// verified). The files are read and checked at start-up (PEM, the key matches the certificate),
// so a bad path or file fails there with a message naming the field and the file.
// An rpc-edge file: it includes gRPC headers. Thread-safe (pure function).
#ifndef ADAPTD_SERVER_AUTH_TLS_CREDENTIALS_H_
#define ADAPTD_SERVER_AUTH_TLS_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/security/server_credentials.h"

namespace adaptd {

// "plaintext", "TLS" or "mutual TLS", for the start-up line.
std::string TransportSecurityName(const adapt::v1::ServerConfig& config);

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const adapt::v1::ServerConfig& config);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_TLS_CREDENTIALS_H_
