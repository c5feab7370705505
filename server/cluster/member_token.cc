#include "server/cluster/member_token.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/auth/sha256.h"
#include "server/base/status_macros.h"

namespace adaptd {

absl::StatusOr<std::string> ReadMemberToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.member_token_file ", path, ": cannot be read"));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(bytes.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.member_token_file ", path, ": the file is empty"));
  }
  return token;
}

absl::Status AddMemberToken(const adapt::v1::ServerConfig& config,
                            google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>* tokens) {
  if (!config.has_cluster() || tokens->empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string member_token, ReadMemberToken(config.cluster().member_token_file()));
  adapt::v1::TokenConfig* member = tokens->Add();
  member->set_sha256(Sha256Hex(member_token));
  member->set_admin(true);
  member->set_name("cluster member");
  return absl::OkStatus();
}

}  // namespace adaptd
