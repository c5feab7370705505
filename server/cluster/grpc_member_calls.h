// GrpcMemberCalls: MemberCalls over gRPC, on the forwarder's channels (one per member, TLS when
// the server uses it). Each call carries a deadline, the members' token (when the cluster has
// one) and this member's name as the forwarded mark, so the receiver never passes it on.
#ifndef ADAPTD_SERVER_CLUSTER_GRPC_MEMBER_CALLS_H_
#define ADAPTD_SERVER_CLUSTER_GRPC_MEMBER_CALLS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "adapt/v1/adapt.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "server/cluster/forwarding.h"
#include "server/cluster/member_calls.h"

namespace adaptd {

class GrpcMemberCalls final : public MemberCalls {
 public:
  // `forwarder` must outlive this object; `member_token` may be empty (authentication off).
  GrpcMemberCalls(Forwarder* forwarder, std::string member_token)
      : forwarder_(forwarder), member_token_(std::move(member_token)) {}

  absl::Status ClusterQuota(const cluster::Member& to,
                            const adapt::v1::ClusterQuotaRequest& request,
                            adapt::v1::ClusterQuotaResponse* response,
                            absl::Duration timeout) override;
  absl::Status ClusterBase(const cluster::Member& to, const adapt::v1::ClusterBaseRequest& request,
                           adapt::v1::ClusterBaseResponse* response,
                           absl::Duration timeout) override;

 private:
  // A client context for a call to another member: deadline, the members' token, the mark.
  std::unique_ptr<grpc::ClientContext> MemberContext(absl::Duration timeout) const;
  // The stub for calls to `member` (one per address, kept).
  adapt::v1::Adaptation::Stub* StubFor(const cluster::Member& member) ABSL_LOCKS_EXCLUDED(mu_);
  // One blocking call of the stub's `method` to `to`.
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (adapt::v1::Adaptation::Stub::*method)(grpc::ClientContext*,
                                                                        const Request&, Response*),
                    const cluster::Member& to, const Request& request, Response* response,
                    absl::Duration timeout);

  Forwarder* const forwarder_;
  const std::string member_token_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<adapt::v1::Adaptation::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_GRPC_MEMBER_CALLS_H_
