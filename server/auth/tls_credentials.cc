#include "server/auth/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, " ", path, ": cannot be read (missing file or no permission)"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> Bio(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::unique_ptr<X509, X509Free> ParseCert(const std::string& pem) {
  auto bio = Bio(pem);
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

std::string TransportSecurityName(const adapt::v1::ServerConfig& config) {
  if (config.tls_cert_file().empty()) return "plaintext";
  return config.tls_client_ca_file().empty() ? "TLS" : "mutual TLS";
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const adapt::v1::ServerConfig& config) {
  const bool cert = !config.tls_cert_file().empty(), key = !config.tls_key_file().empty();
  if (!cert && !key) {
    if (!config.tls_client_ca_file().empty()) {
      return absl::InvalidArgumentError(
          "tls_client_ca_file: mutual TLS needs tls_cert_file and tls_key_file too");
    }
    return grpc::InsecureServerCredentials();
  }
  if (cert != key) {
    return absl::InvalidArgumentError(
        "tls_cert_file, tls_key_file: TLS needs both the certificate and its key");
  }
  auto cert_pem = ReadPem("tls_cert_file", config.tls_cert_file());
  if (!cert_pem.ok()) return cert_pem.status();
  auto key_pem = ReadPem("tls_key_file", config.tls_key_file());
  if (!key_pem.ok()) return key_pem.status();
  auto x509 = ParseCert(*cert_pem);
  if (x509 == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_cert_file ", config.tls_cert_file(), ": not a PEM certificate"));
  }
  auto key_bio = Bio(*key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tls_key_file ", config.tls_key_file(),
                                                   ": not a PEM private key (or it is encrypted)"));
  }
  if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("tls_key_file ", config.tls_key_file(),
                                                   ": does not match the certificate in ",
                                                   config.tls_cert_file()));
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*std::move(key_pem), *std::move(cert_pem)});
  if (!config.tls_client_ca_file().empty()) {
    auto ca_pem = ReadPem("tls_client_ca_file", config.tls_client_ca_file());
    if (!ca_pem.ok()) return ca_pem.status();
    if (ParseCert(*ca_pem) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tls_client_ca_file ", config.tls_client_ca_file(), ": not a PEM certificate"));
    }
    options.pem_root_certs = *std::move(ca_pem);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace adaptd
