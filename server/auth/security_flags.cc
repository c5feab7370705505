#include "server/auth/security_flags.h"

#include "absl/strings/str_cat.h"
#include "server/config/defaults.h"

namespace adaptd {

void AddSecurityFlags(CLI::App& app, SecurityFlags* f) {
  app.add_option("--tls-cert", f->tls_cert,
                 "PEM certificate chain of the server; with --tls-key turns TLS on");
  app.add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert");
  app.add_option("--tls-client-ca", f->tls_client_ca,
                 "PEM CA that signs client certificates; requires them (mutual TLS)");
  f->grace_flag = app.add_option(
      "--shutdown-grace-seconds", f->shutdown_grace_seconds,
      absl::StrCat("On SIGTERM, how long in-flight calls may take to finish [default ",
                   defaults::kShutdownGraceSeconds, "]"));
  f->max_stores_flag =
      app.add_option("--quota-max-stores", f->max_stores,
                     absl::StrCat("Default per-tenant limit on stores; 0 = unlimited [default ",
                                  defaults::kQuotaMaxStores, "]"));
  f->max_memory_flag = app.add_option(
      "--quota-max-memory-bytes", f->max_memory_bytes,
      absl::StrCat("Default per-tenant limit on the memory of its stores; 0 = unlimited [default ",
                   defaults::kQuotaMaxMemoryBytes, "]"));
  f->rate_flag = app.add_option("--quota-examples-per-second", f->examples_per_second,
                                absl::StrCat("Default per-tenant rate of adapted examples; 0 = "
                                             "unlimited [default ",
                                             defaults::kQuotaExamplesPerSecond, "]"))
                     ->check(CLI::NonNegativeNumber);
}

void ApplySecurityFlags(const SecurityFlags& f, adapt::v1::ServerConfig* config) {
  if (!f.tls_cert.empty()) config->set_tls_cert_file(f.tls_cert);
  if (!f.tls_key.empty()) config->set_tls_key_file(f.tls_key);
  if (!f.tls_client_ca.empty()) config->set_tls_client_ca_file(f.tls_client_ca);
  const auto given = [](const CLI::Option* flag) { return flag != nullptr && flag->count() > 0; };
  if (given(f.grace_flag)) config->set_shutdown_grace_seconds(f.shutdown_grace_seconds);
  adapt::v1::QuotaConfig* quota = config->mutable_default_quota();
  if (given(f.max_stores_flag)) quota->set_max_stores(f.max_stores);
  if (given(f.max_memory_flag)) quota->set_max_memory_bytes(f.max_memory_bytes);
  if (given(f.rate_flag)) quota->set_examples_per_second(f.examples_per_second);
}

std::string SecuritySummary(const adapt::v1::ServerConfig& config) {
  std::string line = config.tokens().empty()
                         ? "auth off (no tokens configured: every caller reaches every tenant)"
                         : absl::StrCat("auth on (", config.tokens_size(), " tokens)");
  absl::StrAppend(&line, ", ",
                  config.tls_cert_file().empty()        ? "plaintext"
                  : config.tls_client_ca_file().empty() ? "TLS"
                                                        : "mutual TLS");
  const adapt::v1::QuotaConfig& q = config.default_quota();
  if (q.max_stores() > 0 || q.max_memory_bytes() > 0 || q.examples_per_second() > 0 ||
      !config.tenant_quotas().empty()) {
    absl::StrAppend(&line, ", quotas on");
  }
  return line;
}

}  // namespace adaptd
