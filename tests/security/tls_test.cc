// TLS and mutual TLS with certificates made by the openssl command (make_certs.sh): a TLS
// client works and a plaintext one fails; with mutual TLS a client without a certificate (or
// with one from another CA) fails and one with a certificate works; bad files fail start-up
// with a message naming the field and the file.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/security/security_server.h"

namespace adaptd::testing {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::random_device rd;
    dir_ = new std::string(::testing::TempDir() + "/adaptd-tls-" + std::to_string(rd()));
    const std::string command = std::string(ADAPTD_MAKE_CERTS) + " " + *dir_;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
  }
  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  static adapt::v1::ServerConfig TlsConfig(bool mutual) {
    adapt::v1::ServerConfig config = TestConfig();
    config.set_tls_cert_file(File("server.pem"));
    config.set_tls_key_file(File("server.key"));
    if (mutual) config.set_tls_client_ca_file(File("ca.pem"));
    return config;
  }

  // ListEncoders over a channel with `credentials`, with a short deadline: failures come fast.
  static grpc::Status Call(const std::string& address,
                           std::shared_ptr<grpc::ChannelCredentials> credentials) {
    auto stub = adapt::v1::Adaptation::NewStub(grpc::CreateChannel(address, credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    adapt::v1::ListEncodersResponse response;
    return stub->ListEncoders(&context, {}, &response);
  }

  static std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string& cert = "",
                                                       const std::string& key = "") {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = Read(File("ca.pem"));
    if (!cert.empty()) {
      options.pem_cert_chain = Read(File(cert));
      options.pem_private_key = Read(File(key));
    }
    return grpc::SslCredentials(options);
  }

  static std::string* dir_;
};

std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, TlsWorksAndPlaintextFails) {
  SecurityServer server(TlsConfig(/*mutual=*/false));
  ASSERT_NE(server.server(), nullptr);
  const std::string address = server.server()->address();
  const grpc::Status tls = Call(address, Tls());
  EXPECT_TRUE(tls.ok()) << tls.error_message();
  // The same server reached as "localhost" (the certificate names both).
  const std::string port = address.substr(address.rfind(':'));
  EXPECT_TRUE(Call("localhost" + port, Tls()).ok());
  EXPECT_FALSE(Call(address, grpc::InsecureChannelCredentials()).ok());
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  SecurityServer server(TlsConfig(/*mutual=*/true));
  ASSERT_NE(server.server(), nullptr);
  const std::string address = server.server()->address();
  EXPECT_FALSE(Call(address, Tls()).ok());
  EXPECT_FALSE(Call(address, Tls("rogue.pem", "rogue.key")).ok());
  EXPECT_FALSE(Call(address, grpc::InsecureChannelCredentials()).ok());
  const grpc::Status mutual = Call(address, Tls("client.pem", "client.key"));
  EXPECT_TRUE(mutual.ok()) << mutual.error_message();
}

TEST_F(TlsTest, BadFilesFailStartUpNamingTheFile) {
  struct Case {
    std::string cert, key, ca, expected;
  };
  const std::string missing = File("missing.pem");
  const std::vector<Case> cases = {
      {missing, File("server.key"), "", "tls_cert_file " + missing + ": cannot be read"},
      {File("server.pem"), missing, "", "tls_key_file " + missing + ": cannot be read"},
      {File("server.pem"), File("server.key"), missing, "tls_client_ca_file " + missing},
      {File("server.key"), File("server.key"), "", "not a PEM certificate"},
      {File("server.pem"), File("client.key"), "", "does not match the certificate"},
      {File("server.pem"), "", "", "needs both"},
      {"", "", File("ca.pem"), "mutual TLS needs tls_cert_file"},
  };
  for (const Case& c : cases) {
    adapt::v1::ServerConfig config = TestConfig();
    config.set_tls_cert_file(c.cert);
    config.set_tls_key_file(c.key);
    config.set_tls_client_ca_file(c.ca);
    auto server = AdaptdServer::Start(config);
    ASSERT_FALSE(server.ok()) << c.expected;
    EXPECT_NE(server.status().message().find(c.expected), absl::string_view::npos)
        << server.status();
  }
}

}  // namespace
}  // namespace adaptd::testing
