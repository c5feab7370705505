// The parts of EtcdClient that LeaseKeeper and EtcdWatcher share (internal to server/etcd): one
// channel and its stubs per endpoint, and which endpoint a call goes to first. Thread-safe.
#ifndef ADAPTD_SERVER_ETCD_ETCD_CLIENT_IMPL_H_
#define ADAPTD_SERVER_ETCD_ETCD_CLIENT_IMPL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/etcd/etcd_client.h"

namespace adaptd::etcd {

struct EtcdEndpoint {
  std::string address;  // HOST:PORT
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
};

// EtcdClient's state, apart from the class so that the call helpers and LeaseKeeper can take it.
struct EtcdConnection {
  EtcdOptions options;
  std::vector<std::string> addresses;
  std::vector<EtcdEndpoint> endpoints;

  // The endpoint that last answered (where a call starts).
  size_t Current() const ABSL_LOCKS_EXCLUDED(mu);
  void Answered(size_t index) ABSL_LOCKS_EXCLUDED(mu);
  // Moves on from `index` when it is still the current one (another call may have moved on).
  void Failed(size_t index) ABSL_LOCKS_EXCLUDED(mu);

  // Waits (until `deadline`) for the endpoint's channel to leave IDLE and CONNECTING: true when
  // it is READY, false when it could not connect (so nothing would be sent over it).
  bool Connected(size_t index, absl::Time deadline) const;

  mutable absl::Mutex mu;
  size_t current ABSL_GUARDED_BY(mu) = 0;
};

struct EtcdClient::Impl : EtcdConnection {};

// etcd's or gRPC's error for `method` at `endpoint`, as the header's codes; the message names
// both and keeps etcd's text.
absl::Status EtcdError(const grpc::Status& status, const char* method, const std::string& endpoint);

// Whether a call that failed with `status` (from EtcdError) should try the next endpoint.
bool IsEndpointFailure(const absl::Status& status);
// Whether etcd refused the request before it could be applied (so a write may go elsewhere).
bool NeverApplied(const grpc::Status& status);
// `status` marked as the error of a write that was sent and not answered (IsOutcomeUnknown).
absl::Status OutcomeUnknown(absl::Status status);

}  // namespace adaptd::etcd

#endif  // ADAPTD_SERVER_ETCD_ETCD_CLIENT_IMPL_H_
