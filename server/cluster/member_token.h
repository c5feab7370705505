// The token the members of a cluster call each other with (docs/SECURITY.md, "Between
// members"): read from `cluster.member_token_file`, and accepted as an admin token.
#ifndef ADAPTD_SERVER_CLUSTER_MEMBER_TOKEN_H_
#define ADAPTD_SERVER_CLUSTER_MEMBER_TOKEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace adaptd {

// The token in `path`, surrounding whitespace stripped; INVALID_ARGUMENT naming
// cluster.member_token_file when the file cannot be read or holds nothing.
absl::StatusOr<std::string> ReadMemberToken(const std::string& path);

// With a cluster and tokens configured, adds the members' token to `tokens` as an admin token
// ("cluster member"), so the members' own calls pass authentication; otherwise nothing.
absl::Status AddMemberToken(const adapt::v1::ServerConfig& config,
                            google::protobuf::RepeatedPtrField<adapt::v1::TokenConfig>* tokens);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_MEMBER_TOKEN_H_
