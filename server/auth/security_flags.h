// adaptd's flags for transport security, quotas and shutdown: declared on the CLI11 app by
// AddSecurityFlags and applied over the config (flags win) by ApplySecurityFlags.
#ifndef ADAPTD_SERVER_AUTH_SECURITY_FLAGS_H_
#define ADAPTD_SERVER_AUTH_SECURITY_FLAGS_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "adapt/v1/config.pb.h"

namespace adaptd {

// Each value applies only when its flag was given (the Option's count is then non-zero).
struct SecurityFlags {
  std::string tls_cert, tls_key, tls_client_ca;
  uint32_t shutdown_grace_seconds = 0;
  uint64_t max_stores = 0, max_memory_bytes = 0;
  double examples_per_second = 0;
  CLI::Option* grace_flag = nullptr;
  CLI::Option* max_stores_flag = nullptr;
  CLI::Option* max_memory_flag = nullptr;
  CLI::Option* rate_flag = nullptr;
};

void AddSecurityFlags(CLI::App& app, SecurityFlags* flags);
void ApplySecurityFlags(const SecurityFlags& flags, adapt::v1::ServerConfig* config);

// The start-up line's description, e.g. "auth on (3 tokens), TLS"; never a token or hash.
std::string SecuritySummary(const adapt::v1::ServerConfig& config);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_AUTH_SECURITY_FLAGS_H_
