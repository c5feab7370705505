// Fuzzes the server config parser (JSON and protobuf text format, picked by the first byte)
// and what start-up builds from a parsed config: validation, the token authorizer and the
// quotas. The input is written to a file because the parser reads a path, as adaptd does.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "server/auth/token_authorizer.h"
#include "server/config/config.h"
#include "server/quota/tenant_quotas.h"

namespace {

std::string Path(bool json) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/adaptd-config-fuzz-" +
         std::to_string(getpid()) + (json ? ".json" : ".txtpb");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool json = (data[0] & 1) != 0;
  const std::string path = Path(json);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  auto parsed = adaptd::ParseConfigFile(path);
  std::remove(path.c_str());
  if (!parsed.ok()) return 0;
  const adapt::v1::ServerConfig config = adaptd::MergeConfig(adaptd::DefaultConfig(), *parsed);
  (void)adaptd::ValidateConfig(config);
  auto auth = adaptd::TokenAuthorizer::Create(config.tokens());
  if (auth.ok()) (void)auth->Authorize("Bearer x", "t");
  auto quotas = adaptd::TenantQuotas::Create(config);
  if (quotas.ok()) {
    (void)(*quotas)->TakeExamples("t", 3);
    (void)(*quotas)->CheckMemory("t", 1, 2);
  }
  return 0;
}
