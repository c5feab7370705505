// Router: where a client sends each call for a store in a cluster on etcd
// (docs/CLUSTER_OPERATIONS.md, "Clients route to holders"). It keeps the route table
// (ClusterRoutes, fetched before the first routed call), one channel per member address, and
// answers the holder of a store's shard, or no route (the member the client was given, which
// forwards) when the shard has no holder, its holder's channel is not connected, or there is
// no table. After each routed call it reads the answer's holder hint (a newer one updates its
// shard) and an UNAVAILABLE from a holder (the table is stale); either refetches the table, at
// most once a second, on the calling thread. A member's UNIMPLEMENTED (a single server) turns
// routing off for good.
//
// Thread-safety: every method may be called from several threads at once.
#ifndef ADAPTD_CLIENT_CPP_ROUTER_H_
#define ADAPTD_CLIENT_CPP_ROUTER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.grpc.pb.h"
#include "client/cpp/routes.h"
#include "grpcpp/grpcpp.h"

namespace adaptd {

class Router {
 public:
  // Asks the member the client was given for the route table.
  using Fetch = std::function<absl::StatusOr<adapt::v1::ClusterRoutesResponse>()>;
  // A channel to a member's address, with the client's credentials and options.
  using Dial = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;
  // The time now (tests move it).
  using Clock = std::function<absl::Time()>;

  // `given` is the address of the member the client was given: its calls use the client's own
  // channel, never one of the Router's.
  Router(std::string given, Fetch fetch, Dial dial, Clock clock = absl::Now);

  // A call's destination: a holder's stub and address, or none (the given member).
  struct Route {
    adapt::v1::Adaptation::Stub* stub = nullptr;
    std::string address;
  };
  // Where a call for tenant/store goes. Fetches the table first when none was fetched yet
  // (at most once a second).
  Route Pick(absl::string_view tenant, absl::string_view store);
  // After a call sent by `route` finished with `code`: takes its holder hint and, for an
  // UNAVAILABLE from a holder, marks the table stale; refetches when either says the holder
  // changed.
  void Observe(const grpc::ClientContext& context, grpc::StatusCode code, const Route& route);
  // False once the given member said it is no cluster member (UNIMPLEMENTED).
  bool enabled() const;
  // The table's revision; nullopt before one was fetched.
  std::optional<int64_t> revision() const;

  // Refetches now when the last fetch is a second old or more (the caller's thread).
  void Refresh();

 private:
  // The stub of `address`, its channel dialed on first use; null when its channel is in
  // TRANSIENT_FAILURE or SHUTDOWN.
  adapt::v1::Adaptation::Stub* StubOf(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Member {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<adapt::v1::Adaptation::Stub> stub;
  };

  const std::string given_;
  const Fetch fetch_;
  const Dial dial_;
  const Clock clock_;

  mutable absl::Mutex mu_;
  std::optional<RouteTable> table_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Member> members_ ABSL_GUARDED_BY(mu_);  // by address
  bool enabled_ ABSL_GUARDED_BY(mu_) = true;
  bool stale_ ABSL_GUARDED_BY(mu_) = true;  // a fetch is due
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_fetch_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace adaptd

#endif  // ADAPTD_CLIENT_CPP_ROUTER_H_
