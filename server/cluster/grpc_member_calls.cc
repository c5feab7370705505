#include "server/cluster/grpc_member_calls.h"

#include <algorithm>

#include "server/base/grpc_status.h"
#include "server/cluster/handoff.h"

namespace adaptd {
namespace {

// An ImportStore handing a store off, on a context Cancel can end from another thread.
class GrpcSend final : public MemberCalls::Send {
 public:
  GrpcSend(adapt::v1::Adaptation::Stub* stub, std::unique_ptr<grpc::ClientContext> context,
           const std::string& tenant, const std::string& store,
           const std::vector<std::string>& applied_ids, const std::string& file, size_t chunk_bytes)
      : stub_(stub),
        context_(std::move(context)),
        tenant_(tenant),
        store_(store),
        applied_ids_(applied_ids),
        file_(file),
        chunk_bytes_(chunk_bytes) {}

  absl::Status Run() override {
    adapt::v1::StoreInfo info;
    std::unique_ptr<grpc::ClientWriter<adapt::v1::StoreChunk>> writer =
        stub_->ImportStore(context_.get(), &info);
    size_t offset = 0;
    bool first = true;
    while (first || offset < file_.size()) {
      adapt::v1::StoreChunk chunk;
      if (first) {
        chunk.set_tenant(tenant_);
        chunk.set_store(store_);
        for (const std::string& id : applied_ids_) chunk.add_applied_ids(id);
      }
      const size_t n = std::min(chunk_bytes_, file_.size() - offset);
      chunk.set_data(file_.substr(offset, n));
      offset += n;
      first = false;
      if (!writer->Write(chunk)) break;  // the call ended: Finish says why
    }
    writer->WritesDone();
    return FromGrpc(writer->Finish());
  }

  void Cancel() override { context_->TryCancel(); }

 private:
  adapt::v1::Adaptation::Stub* const stub_;
  const std::unique_ptr<grpc::ClientContext> context_;
  const std::string& tenant_;
  const std::string& store_;
  const std::vector<std::string>& applied_ids_;
  const std::string& file_;
  const size_t chunk_bytes_;
};

}  // namespace

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

absl::Status GrpcMemberCalls::ClusterStatus(const cluster::Member& to,
                                            const adapt::v1::ClusterStatusRequest& request,
                                            adapt::v1::ClusterStatusResponse* response,
                                            absl::Duration timeout) {
  return Call(&adapt::v1::Adaptation::Stub::ClusterStatus, to, request, response, timeout);
}

absl::Status GrpcMemberCalls::DrainMember(const cluster::Member& to,
                                          const adapt::v1::DrainMemberRequest& request,
                                          adapt::v1::DrainMemberResponse* response,
                                          absl::Duration timeout) {
  return Call(&adapt::v1::Adaptation::Stub::DrainMember, to, request, response, timeout);
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

std::unique_ptr<MemberCalls::Send> GrpcMemberCalls::PrepareSend(
    const cluster::Member& to, const std::string& tenant, const std::string& store,
    const std::vector<std::string>& applied_ids, const std::string& file, size_t chunk_bytes,
    absl::Duration timeout) {
  std::unique_ptr<grpc::ClientContext> context = MemberContext(timeout);
  context->AddMetadata(kMoveHeader, forwarder_->membership().self().name);
  return std::make_unique<GrpcSend>(StubFor(to), std::move(context), tenant, store, applied_ids,
                                    file, chunk_bytes);
}

}  // namespace adaptd
