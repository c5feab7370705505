#include "server/cluster/grpc_member_calls.h"

#include "server/base/grpc_status.h"

namespace adaptd {
std::unique_ptr<grpc::ClientContext> GrpcMemberCalls::MemberContext(absl::Duration timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!member_token_.empty()) context->AddMetadata("authorization", "Bearer " + member_token_);
  context->AddMetadata(kForwardedHeader, forwarder_->membership().self().name);
  return context;
}

adapt::v1::Adaptation::Stub* GrpcMemberCalls::StubFor(const cluster::Member& member) {
  absl::MutexLock lock(&mu_);
  // By address, as the forwarder's channels: a member of a cluster on etcd may come back
  // elsewhere under its name.
  std::unique_ptr<adapt::v1::Adaptation::Stub>& stub = stubs_[member.address];
  if (stub == nullptr) stub = adapt::v1::Adaptation::NewStub(forwarder_->ChannelFor(member));
  return stub.get();
}

template <typename Request, typename Response>
absl::Status GrpcMemberCalls::Call(grpc::Status (adapt::v1::Adaptation::Stub::*method)(
                                       grpc::ClientContext*, const Request&, Response*),
                                   const cluster::Member& to, const Request& request,
                                   Response* response, absl::Duration timeout) {
  std::unique_ptr<grpc::ClientContext> context = MemberContext(timeout);
  return FromGrpc((StubFor(to)->*method)(context.get(), request, response));
}

absl::Status GrpcMemberCalls::ClusterQuota(const cluster::Member& to,
                                           const adapt::v1::ClusterQuotaRequest& request,
                                           adapt::v1::ClusterQuotaResponse* response,
                                           absl::Duration timeout) {
  return Call(&adapt::v1::Adaptation::Stub::ClusterQuota, to, request, response, timeout);
}

absl::Status GrpcMemberCalls::ClusterBase(const cluster::Member& to,
                                          const adapt::v1::ClusterBaseRequest& request,
                                          adapt::v1::ClusterBaseResponse* response,
                                          absl::Duration timeout) {
  return Call(&adapt::v1::Adaptation::Stub::ClusterBase, to, request, response, timeout);
}

}  // namespace adaptd
