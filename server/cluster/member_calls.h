// MemberCalls: the calls one member of the static cluster makes to another on its own behalf
// (docs/CLUSTER.md): status and drains for the hand-off, quota counts and usage, base reads,
// and the hand-off of a store itself. An interface, so the cluster's logic (HandOff,
// ClusterQuotas, ClusterBases) does not depend on the transport; GrpcMemberCalls
// (grpc_member_calls.h) is the implementation. Every call carries this member's mark and the
// members' token. Thread-safe.
#ifndef ADAPTD_SERVER_CLUSTER_MEMBER_CALLS_H_
#define ADAPTD_SERVER_CLUSTER_MEMBER_CALLS_H_

#include <memory>
#include <string>
#include <vector>

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
  virtual absl::Status ClusterStatus(const cluster::Member& to,
                                     const adapt::v1::ClusterStatusRequest& request,
                                     adapt::v1::ClusterStatusResponse* response,
                                     absl::Duration timeout) = 0;
  virtual absl::Status DrainMember(const cluster::Member& to,
                                   const adapt::v1::DrainMemberRequest& request,
                                   adapt::v1::DrainMemberResponse* response,
                                   absl::Duration timeout) = 0;
  virtual absl::Status ClusterQuota(const cluster::Member& to,
                                    const adapt::v1::ClusterQuotaRequest& request,
                                    adapt::v1::ClusterQuotaResponse* response,
                                    absl::Duration timeout) = 0;
  virtual absl::Status ClusterBase(const cluster::Member& to,
                                   const adapt::v1::ClusterBaseRequest& request,
                                   adapt::v1::ClusterBaseResponse* response,
                                   absl::Duration timeout) = 0;

  // A store handed off to its owner: an ImportStore marked as a move, its snapshot file in
  // chunks of at most `chunk_bytes`, the first naming the store and carrying `applied_ids`.
  // Run sends it and returns the owner's answer; Cancel (from any thread) ends a Run in
  // progress, which then returns CANCELLED.
  class Send {
   public:
    virtual ~Send() = default;
    virtual absl::Status Run() = 0;
    virtual void Cancel() = 0;
  };
  // `file` and `applied_ids` must outlive the Send.
  virtual std::unique_ptr<Send> PrepareSend(const cluster::Member& to, const std::string& tenant,
                                            const std::string& store,
                                            const std::vector<std::string>& applied_ids,
                                            const std::string& file, size_t chunk_bytes,
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
