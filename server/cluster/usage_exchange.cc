#include "server/cluster/usage_exchange.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace adaptd {

absl::Status MemberUsagePeers::AskUsage(const cluster::Member& to,
                                        adapt::v1::ClusterQuotaResponse* response,
                                        absl::Duration timeout) {
  adapt::v1::ClusterQuotaRequest ask;
  ask.set_op(adapt::v1::ClusterQuotaRequest::USAGE);
  return calls_->ClusterQuota(to, ask, response, timeout);
}

UsageExchange::UsageExchange(UsagePeers* peers, TenantQuotas* quotas, MemoryByTenant memory,
                             absl::Duration interval)
    : peers_(peers), quotas_(quotas), memory_(std::move(memory)), interval_(interval) {}

UsageExchange::~UsageExchange() { Stop(); }

void UsageExchange::Start() {
  if (!quotas_->limits_memory() && !quotas_->limits_rate()) return;  // nothing to exchange
  const size_t members = peers_->Others().size() + 1;
  absl::MutexLock lock(&mu_);
  if (stop_ || thread_.joinable()) return;
  quotas_->SetPeerUsage(members, {}, {});
  thread_ = std::thread([this] { Loop(); });
}

void UsageExchange::Stop() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

adapt::v1::ClusterQuotaResponse UsageExchange::Usage() const {
  absl::MutexLock lock(&mu_);
  return usage_;
}

void UsageExchange::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), interval_)) return;
    }
    Exchange();
  }
}

void UsageExchange::Exchange() {
  // This member's usage of the tenants with a memory or rate limit.
  std::map<std::string, adapt::v1::TenantUsage> mine;
  absl::flat_hash_map<std::string, uint64_t> memory_here;
  if (quotas_->limits_memory()) {
    for (const auto& [tenant, bytes] : memory_()) {
      if (bytes == 0 || quotas_->LimitsOf(tenant).max_memory_bytes == 0) continue;
      mine[tenant].set_memory_bytes(bytes);
      memory_here[tenant] = bytes;
    }
  }
  for (const auto& [tenant, demand] : quotas_->UpdateDemand()) {
    mine[tenant].set_examples_demand(demand);
  }
  adapt::v1::ClusterQuotaResponse usage;
  for (auto& [tenant, u] : mine) {
    u.set_tenant(tenant);
    *usage.add_tenants() = std::move(u);
  }
  {
    absl::MutexLock lock(&mu_);
    usage_ = std::move(usage);
  }

  // The others' usage.
  const std::vector<const cluster::Member*> others = peers_->Others();
  std::map<std::string, adapt::v1::ClusterQuotaResponse> answered;
  std::set<std::string> listed;
  for (const cluster::Member* other : others) {
    listed.insert(other->name);
    adapt::v1::ClusterQuotaResponse answer;
    if (peers_->AskUsage(*other, &answer, std::min(interval_, absl::Seconds(2))).ok()) {
      answered[other->name] = std::move(answer);
    }
  }
  absl::flat_hash_map<std::string, PeerUsage> theirs;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = reported_.begin(); it != reported_.end();) {
      it = listed.count(it->first) == 0 ? reported_.erase(it) : std::next(it);
    }
    for (auto& [name, answer] : answered) reported_[name] = std::move(answer);
    for (const auto& [name, answer] : reported_) {
      // A member that did not answer keeps its memory counted but asks no examples.
      const bool spoke = answered.count(name) > 0;
      for (const adapt::v1::TenantUsage& u : answer.tenants()) {
        PeerUsage& other = theirs[u.tenant()];
        other.memory_bytes += u.memory_bytes();
        if (spoke && u.examples_demand() > 0) other.demands.push_back(u.examples_demand());
      }
    }
  }
  quotas_->SetPeerUsage(others.size() + 1, std::move(theirs), std::move(memory_here));
}

}  // namespace adaptd
