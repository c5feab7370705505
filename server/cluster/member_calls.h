// MemberCalls: the calls one member of a cluster makes to another on its own behalf
// (docs/CLUSTER_ETCD.md): tenants' usage for the quotas, and base reads. An interface, so the
// cluster's logic (UsageExchange, ClusterBases) does not depend on the transport;
// GrpcMemberCalls (grpc_member_calls.h) is the implementation. Every call carries this member's
// mark and the members' token. Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_MEMBER_CALLS_H_
#define ADAPTD_SERVER_CLUSTER_MEMBER_CALLS_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "server/base/status_name.h"
#include "server/cluster/membership.h"

namespace adaptd {

class MemberCalls {
 public:
  virtual ~MemberCalls() = default;

  // Each blocks until `to` answers or `timeout` passes. The status is the member's own answer,
  // or why the call failed as a call (Unreachable); `*response` is filled on OK.
  virtual absl::Status ClusterQuota(const cluster::Member& to,
                                    const adapt::v1::ClusterQuotaRequest& request,
                                    adapt::v1::ClusterQuotaResponse* response,
                                    absl::Duration timeout) = 0;
  virtual absl::Status ClusterBase(const cluster::Member& to,
                                   const adapt::v1::ClusterBaseRequest& request,
                                   adapt::v1::ClusterBaseResponse* response,
                                   absl::Duration timeout) = 0;
};

// Whether a call to another member failed as a call (the member down, late, or gone) rather
// than with that member's own answer.
inline bool Unreachable(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_MEMBER_CALLS_H_
