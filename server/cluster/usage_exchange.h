// UsageExchange: the part of the tenant quotas that hold over every member of a cluster
// (docs/CLUSTER.md, "Quotas") which the members settle by exchanging their usage, within about
// 10%: memory and examples per second. Every `interval` this member measures its usage of every
// tenant with such a limit (memory held, examples asked per second) and asks each other member
// for its own (ClusterQuota USAGE); the TenantQuotas then refuse a change that would take a
// tenant past its memory limit less what the others hold, and meter examples at this member's
// share of the rate (TenantQuotas::RateShare).
//
// The other members come from UsagePeers: the static cluster's member list, or the members
// registered in etcd (EtcdCluster). A member that does not answer keeps the memory it last
// reported counted (its stores are still its own) and asks no examples (it serves none); a
// member that left the list is forgotten. Tenants without these limits cost nothing: with no
// such limit configured the exchange does not run.
//
// Thread-safe: Usage may be called from any thread while the exchange runs on its own.
#ifndef ADAPTD_SERVER_CLUSTER_USAGE_EXCHANGE_H_
#define ADAPTD_SERVER_CLUSTER_USAGE_EXCHANGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapt/v1/adapt.pb.h"
#include "server/cluster/member_calls.h"
#include "server/cluster/membership.h"
#include "server/quota/tenant_quotas.h"

namespace adaptd {

// The members a UsageExchange asks, and the call that asks one.
class UsagePeers {
 public:
  virtual ~UsagePeers() = default;
  // The other members now (each kept for the process's life).
  virtual std::vector<const cluster::Member*> Others() const = 0;
  // Asks `to` for its usage (ClusterQuota USAGE, with the members' token); blocks until it
  // answers or `timeout` passes. The status is its answer or why the call failed.
  virtual absl::Status AskUsage(const cluster::Member& to,
                                adapt::v1::ClusterQuotaResponse* response,
                                absl::Duration timeout) = 0;
};

// UsagePeers over MemberCalls (which carry the members' token): the members `others` lists,
// each asked by a ClusterQuota USAGE call.
class MemberUsagePeers final : public UsagePeers {
 public:
  // `calls` must outlive this object; `others` is called once a round.
  MemberUsagePeers(std::function<std::vector<const cluster::Member*>()> others, MemberCalls* calls)
      : others_(std::move(others)), calls_(calls) {}
  std::vector<const cluster::Member*> Others() const override { return others_(); }
  absl::Status AskUsage(const cluster::Member& to, adapt::v1::ClusterQuotaResponse* response,
                        absl::Duration timeout) override;

 private:
  const std::function<std::vector<const cluster::Member*>()> others_;
  MemberCalls* const calls_;
};

class UsageExchange {
 public:
  // Each tenant's memory held on this member (Engine::MemoryByTenant).
  using MemoryByTenant = std::function<std::map<std::string, uint64_t>()>;

  // `peers` and `quotas` must outlive this object; `interval` paces the rounds.
  UsageExchange(UsagePeers* peers, TenantQuotas* quotas, MemoryByTenant memory,
                absl::Duration interval);
  ~UsageExchange();
  UsageExchange(const UsageExchange&) = delete;
  UsageExchange& operator=(const UsageExchange&) = delete;

  // Starts the rounds on a thread of their own, when some tenant has a memory or rate limit
  // (until the first round each member takes its even part of every limit). Once at most, and
  // not after Stop.
  void Start() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the rounds for good; idempotent, and safe while Start runs on another thread.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // What this member answers to USAGE: its usage as the last round measured it.
  adapt::v1::ClusterQuotaResponse Usage() const ABSL_LOCKS_EXCLUDED(mu_);

  // One round: this member's usage measured, the others' asked, the quotas told. Blocks on
  // the others (each at most min(interval, 2 s)).
  void Exchange() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  UsagePeers* const peers_;
  TenantQuotas* const quotas_;
  const MemoryByTenant memory_;
  const absl::Duration interval_;

  mutable absl::Mutex mu_;
  // This member's usage as the last round measured it.
  adapt::v1::ClusterQuotaResponse usage_ ABSL_GUARDED_BY(mu_);
  // The last usage each other member reported, by name (kept while it does not answer).
  std::map<std::string, adapt::v1::ClusterQuotaResponse> reported_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CLUSTER_USAGE_EXCHANGE_H_
