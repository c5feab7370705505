// hash-token: the SHA-256 a server config lists for a bearer token (the config never holds
// the token itself), optionally for a freshly generated random token.
#include <openssl/rand.h>

#include <iostream>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "client/adaptctl/commands.h"
#include "server/auth/sha256.h"

namespace adaptctl {
namespace {

struct HashTokenOptions {
  std::string token;
  bool generate = false;
};

absl::Status RunHashToken(const HashTokenOptions& options) {
  Json summary;
  std::string token = options.token;
  if (options.generate) {
    if (!token.empty()) return UsageError("hash-token: give a TOKEN or --generate, not both");
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
      return absl::InternalError("hash-token: the system's random source failed");
    }
    token = absl::BytesToHexString(
        absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
    summary["token"] = token;
  } else if (token.empty() || token == "-") {
    // From stdin, so the token stays out of the shell's history and the process list.
    std::getline(std::cin, token);
    token = std::string(absl::StripAsciiWhitespace(token));
  }
  if (token.empty()) return UsageError("hash-token: the token is empty");
  summary["sha256"] = adaptd::Sha256Hex(token);
  PrintSummary(summary);
  return absl::OkStatus();
}

}  // namespace

void AddSecurityCommands(CLI::App& app, Action* action) {
  auto options = std::make_shared<HashTokenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "hash-token",
      "Print {\"sha256\": HASH} for a bearer token (from TOKEN, or stdin when TOKEN is - or "
      "absent), the value a server config lists under tokens { sha256: ... }");
  cmd->add_option("TOKEN", options->token, "The token; - or absent: read one line from stdin");
  cmd->add_flag("--generate", options->generate,
                "Make a random 256-bit token and print it with its hash");
  cmd->callback([action, options] {
    *action = [options](const GlobalOptions&) { return RunHashToken(*options); };
  });
}

}  // namespace adaptctl
