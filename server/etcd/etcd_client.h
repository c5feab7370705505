// EtcdClient: adaptd's client of etcd's v3 API (KV, Lease, Maintenance, Cluster) over gRPC.
// The stubs are generated at build time from the .proto files Debian's golang-etcd-server-dev
// ships (server/etcd/CMakeLists.txt copies them into the build tree and strips their gogoproto
// and google.api options); nothing of etcd's is kept in the repository. Requests and responses
// are etcd's own messages (etcdserverpb, mvccpb), so a caller builds a transaction as etcd
// documents it.
//
// Endpoints: one channel per endpoint. A call goes to the endpoint that last answered; when it
// fails with a transport error (the member down, or it has no leader), the client moves to the
// next endpoint. Reads, leases and maintenance calls are retried there (each endpoint at most
// once per call); a Txn, Put or DeleteRange is not retried once sent, since it may have been
// applied: its error then carries IsOutcomeUnknown, and the caller, which can tell (a key its
// transaction writes), looks before it writes again.
//
// Errors (etcd's own messages kept in the text): Unavailable when no endpoint answered in
// time, none has a leader, or the cluster lost quorum; ResourceExhausted for etcd's space
// quota (its NOSPACE alarm); InvalidArgument for a request over etcd's size or operation
// limits; OutOfRange for a compacted revision; FailedPrecondition for a permission etcd
// refused. Thread-safe.
#ifndef ADAPTD_SERVER_ETCD_ETCD_CLIENT_H_
#define ADAPTD_SERVER_ETCD_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"

namespace adaptd::etcd {

struct EtcdOptions {
  // "http://HOST:PORT", "https://HOST:PORT" or "HOST:PORT" (plain); at least one. https
  // endpoints use TLS with the files below.
  std::vector<std::string> endpoints;
  // The CA that signed the members' certificates (empty: the system's roots), and this
  // client's certificate and key when etcd asks for one (both or neither).
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // Each call's deadline, per endpoint tried.
  absl::Duration call_timeout = absl::Seconds(5);
};

// The end of the range of keys that start with `prefix` (etcd's range_end): every key when
// `prefix` is empty or all 0xff.
std::string PrefixEnd(const std::string& prefix);

// A transaction's comparisons that a key's create revision (0: the key does not exist), mod
// revision or version equals the one given.
etcdserverpb::Compare CreateRevisionIs(const std::string& key, int64_t revision);
etcdserverpb::Compare ModRevisionIs(const std::string& key, int64_t revision);
etcdserverpb::Compare VersionIs(const std::string& key, int64_t version);

// Whether a failed write's outcome is unknown (sent, and no answer came back).
bool IsOutcomeUnknown(const absl::Status& status);

class EtcdClient {
 public:
  // Checks the options (InvalidArgument naming the field) and reads the TLS files; does not
  // wait for a member to answer.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // KV.
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  // Every key under `prefix` (keys only when `keys_only`), in key order, read in pages at one
  // revision (the first page's, stored in `*revision` when not null).
  absl::StatusOr<std::vector<mvccpb::KeyValue>> RangePrefix(const std::string& prefix,
                                                            bool keys_only = false,
                                                            int64_t* revision = nullptr);
  absl::StatusOr<etcdserverpb::PutResponse> Put(const etcdserverpb::PutRequest& request);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> DeleteRange(
      const etcdserverpb::DeleteRangeRequest& request);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request);
  // Compacts the key-value history up to `revision` (etcd's Compact).
  absl::Status Compact(int64_t revision, bool physical = false);

  // Leases.
  // A lease of `ttl` (whole seconds, at least 1); its id and the TTL etcd granted.
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> GrantLease(absl::Duration ttl);
  absl::Status RevokeLease(int64_t id);
  // The lease's remaining TTL in seconds (-1 when it expired or never existed).
  absl::StatusOr<int64_t> LeaseTimeToLive(int64_t id);

  // Maintenance, of one endpoint (one of `endpoints()`).
  absl::StatusOr<etcdserverpb::StatusResponse> Status(const std::string& endpoint);
  absl::Status Defragment(const std::string& endpoint);
  // The cluster's alarms (NOSPACE, CORRUPT), from any endpoint.
  absl::StatusOr<etcdserverpb::AlarmResponse> Alarms();
  // Clears every alarm (after space was freed).
  absl::Status DisarmAlarms();

  // Cluster membership (etcd's own members, for operating it and for tests).
  absl::StatusOr<etcdserverpb::MemberListResponse> MemberList();
  absl::StatusOr<etcdserverpb::MemberAddResponse> MemberAdd(
      const std::vector<std::string>& peer_urls);
  absl::Status MemberRemove(uint64_t id);

  // The endpoints as configured, normalised to HOST:PORT.
  const std::vector<std::string>& endpoints() const;

 private:
  struct Impl;
  explicit EtcdClient(std::unique_ptr<Impl> impl);
  friend class LeaseKeeper;
  friend class EtcdWatcher;
  std::unique_ptr<Impl> impl_;
};

// Keeps one lease alive on a thread of its own, over etcd's LeaseKeepAlive stream (a
// keep-alive every third of the TTL, a new stream on another endpoint when one fails), and
// knows until when the lease is certainly valid.
class LeaseKeeper {
 public:
  // Grants a lease of `ttl` and keeps it; `on_lost` runs once, on the keeper's thread, when
  // etcd answers that the lease expired or ValidUntil passed without a renewal.
  static absl::StatusOr<std::unique_ptr<LeaseKeeper>> Start(EtcdClient* client, absl::Duration ttl,
                                                            std::function<void()> on_lost);
  // Stops keeping it alive; does not revoke it (it expires after its TTL).
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  int64_t id() const;
  absl::Duration ttl() const;
  // The send time of the last keep-alive etcd acknowledged (at first, of the grant) plus the
  // TTL it answered: until then no one else can hold a key this lease holds. A caller allows
  // itself a margin below it.
  absl::Time ValidUntil() const;
  // Whether the lease is lost (etcd said it expired, or ValidUntil passed).
  bool Lost() const;
  // Revokes the lease (what it holds goes at once) and stops.
  absl::Status Revoke();

 private:
  struct Impl;
  explicit LeaseKeeper(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace adaptd::etcd

#endif  // ADAPTD_SERVER_ETCD_ETCD_CLIENT_H_
