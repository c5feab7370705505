// etcd's and gRPC's errors as the codes etcd_client.h documents, and the marker of a write whose
// outcome is unknown.
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/base/grpc_status.h"
#include "server/etcd/etcd_client.h"
#include "server/etcd/etcd_client_impl.h"

namespace adaptd::etcd {
namespace {

constexpr char kOutcomeUnknown[] = "type.adaptd/etcd.OutcomeUnknown";

struct MessageRule {
  const char* text;
  absl::StatusCode code;
};

// etcd's own error strings (rpctypes), whichever gRPC code carried them; the first that the
// message contains decides.
constexpr MessageRule kMessageRules[] = {
    {"database space exceeded", absl::StatusCode::kResourceExhausted},
    {"request is too large", absl::StatusCode::kInvalidArgument},
    {"too many operations in txn request", absl::StatusCode::kInvalidArgument},
    {"duplicate key given in txn request", absl::StatusCode::kInvalidArgument},
    // gRPC's own limit on a message's size (etcd's is its max-request-bytes plus 512 KiB).
    {"larger than max", absl::StatusCode::kInvalidArgument},
    {"required revision has been compacted", absl::StatusCode::kOutOfRange},
    {"required revision is a future revision", absl::StatusCode::kOutOfRange},
    {"no leader", absl::StatusCode::kUnavailable},
    {"request timed out", absl::StatusCode::kUnavailable},
    {"leader changed", absl::StatusCode::kUnavailable},
    {"not capable", absl::StatusCode::kUnavailable},
    {"too many requests", absl::StatusCode::kUnavailable},
    {"unhealthy cluster", absl::StatusCode::kUnavailable},
    {"permission denied", absl::StatusCode::kFailedPrecondition},
};

absl::StatusCode CodeFor(const grpc::Status& status) {
  for (const MessageRule& rule : kMessageRules) {
    if (absl::StrContains(status.error_message(), rule.text)) return rule.code;
  }
  switch (status.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StatusCode::kUnavailable;
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return static_cast<absl::StatusCode>(status.error_code());
  }
}

}  // namespace

absl::Status EtcdError(const grpc::Status& status, const char* method,
                       const std::string& endpoint) {
  return absl::Status(CodeFor(status),
                      absl::StrCat("etcd ", method, " at ", endpoint, ": ",
                                   CodeName(status.error_code()), ": ", status.error_message()));
}

bool IsEndpointFailure(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

bool NeverApplied(const grpc::Status& status) {
  // etcd refuses a request with "no leader" before proposing it.
  return absl::StrContains(status.error_message(), "etcdserver: no leader");
}

absl::Status OutcomeUnknown(absl::Status status) {
  status.SetPayload(kOutcomeUnknown, absl::Cord("sent; no answer"));
  return status;
}

bool IsOutcomeUnknown(const absl::Status& status) {
  return status.GetPayload(kOutcomeUnknown).has_value();
}

}  // namespace adaptd::etcd
