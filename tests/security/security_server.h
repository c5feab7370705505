// An in-process adaptd started from a given config on 127.0.0.1:0, with channels and contexts
// that carry a bearer token, for the security and quota tests.
#ifndef ADAPTD_TESTS_SECURITY_SECURITY_SERVER_H_
#define ADAPTD_TESTS_SECURITY_SECURITY_SERVER_H_

#include <memory>
#include <string>

#include "adapt/v1/adapt.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/config/config.h"
#include "server/rpc/server.h"

namespace adaptd::testing {

// The default config on 127.0.0.1:0 with metrics off and a fresh data directory.
adapt::v1::ServerConfig TestConfig();

class SecurityServer {
 public:
  // Fails the test (and leaves server() null) when the server does not start.
  explicit SecurityServer(adapt::v1::ServerConfig config);
  ~SecurityServer();

  AdaptdServer* server() { return server_.get(); }
  // A plaintext stub.
  adapt::v1::Adaptation::Stub& stub() { return *stub_; }

 private:
  std::string data_dir_;
  std::unique_ptr<AdaptdServer> server_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
};

// A context with a 30 s deadline and, unless `token` is empty, `authorization: Bearer token`.
std::unique_ptr<grpc::ClientContext> TokenContext(const std::string& token);

}  // namespace adaptd::testing

#endif  // ADAPTD_TESTS_SECURITY_SECURITY_SERVER_H_
