#include "server/cluster/etcd_cluster.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/base/status_macros.h"
#include "server/config/defaults.h"
#include "server/durability/etcd_durability.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Register(
    const adapt::v1::ServerConfig& config, Metrics* metrics, std::function<void()> on_lease_lost) {
  const adapt::v1::ClusterConfig& c = config.cluster();
  const adapt::v1::DurableLogConfig& log = config.durable_log();
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  cluster->self_ = c.self();
  cluster->restart_grace_ = absl::Seconds(
      c.restart_grace_seconds() > 0 ? c.restart_grace_seconds() : defaults::kRestartGraceSeconds);
  ASSIGN_OR_RETURN(cluster->forwarder_, Forwarder::Create(config, metrics));
  ASSIGN_OR_RETURN(cluster->client_, ConnectConfiguredEtcd(log));

  cluster::ClusterMember::Options options;
  options.registry.prefix = log.etcd_prefix().empty() ? defaults::kEtcdPrefix : log.etcd_prefix();
  options.registry.self = c.self();
  options.registry.address = c.advertise_address();
  options.registry.lease_ttl = absl::Seconds(
      log.lease_ttl_seconds() > 0 ? log.lease_ttl_seconds() : defaults::kEtcdLeaseTtlSeconds);
  options.registry.settle =
      c.settle_seconds() > 0 ? absl::Seconds(c.settle_seconds()) : 2 * options.registry.lease_ttl;
  // A member restarted after a SIGKILL waits out its previous lease; longer is another process.
  options.registry.register_wait = 3 * options.registry.lease_ttl;
  options.on_lease_lost = std::move(on_lease_lost);
  absl::StatusOr<std::unique_ptr<cluster::ClusterMember>> member =
      cluster::ClusterMember::Register(cluster->client_.get(), std::move(options));
  if (!member.ok()) {
    return absl::Status(member.status().code(),
                        absl::StrCat("cluster (etcd): registering member '", c.self(),
                                     "': ", member.status().message()));
  }
  cluster->member_ = *std::move(member);
  return cluster;
}

EtcdCluster::~EtcdCluster() { member_.reset(); }

absl::Status EtcdCluster::Serve(Engine* engine) {
  absl::Status served = member_->Serve(engine);
  serving_.store(true);
  return served;
}

absl::StatusOr<const cluster::Member*> EtcdCluster::Route(const cluster::CallOrigin& origin,
                                                          const std::string& tenant,
                                                          const std::string& store) const {
  ASSIGN_OR_RETURN(std::string holder, member_->Route(tenant, store));
  if (holder.empty()) {
    if (absl::Now() >= member_->registry().ValidUntil()) {
      return absl::UnavailableError(absl::StrCat(
          "member '", self_,
          "': its lease in etcd is not known to be valid (etcd has not answered its renewals); "
          "calls resume once it does; retry"));
    }
    return nullptr;
  }
  const std::map<std::string, cluster::RegisteredMember> members = member_->registry().Members();
  const auto it = members.find(holder);
  if (origin.forwarded) {
    // The claims moved while the call travelled: the caller retries, and its member routes
    // again by what it sees then.
    return absl::UnavailableError(absl::StrCat("store ", tenant, "/", store, ": member '",
                                               origin.forwarded_by, "' forwarded it to member '",
                                               self_, "', which does not serve it; member '",
                                               holder, "' holds its shard now; retry"));
  }
  if (it == members.end()) {
    return absl::UnavailableError(absl::StrCat("store ", tenant, "/", store, ": member '", holder,
                                               "', which holds its shard, is not registered "
                                               "(a failover is under way); retry"));
  }
  if (it->second.record.state() == adapt::v1::ClusterMemberRecord::RESTARTING) {
    return absl::UnavailableError(absl::StrCat("store ", tenant, "/", store, ": member '", holder,
                                               "', which holds its shard, is restarting; retry"));
  }
  return Intern(holder, it->second.record.address());
}

std::vector<const cluster::Member*> EtcdCluster::Peers() const {
  std::vector<const cluster::Member*> peers;
  for (const auto& [name, registered] : member_->registry().Members()) {
    if (name != self_) peers.push_back(Intern(name, registered.record.address()));
  }
  return peers;
}

void EtcdCluster::Freeze() {
  if (serving_.load()) member_->claims().Freeze();
}

absl::Status EtcdCluster::HandOverForRestart() {
  if (!serving_.load()) return absl::OkStatus();  // nothing claimed yet
  return member_->registry().HandOverForRestart(restart_grace_, member_->claims().HeldKeys());
}

const cluster::Member* EtcdCluster::Intern(const std::string& name,
                                           const std::string& address) const {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<cluster::Member>& member = interned_[{name, address}];
  if (member == nullptr) member = std::make_unique<cluster::Member>(cluster::Member{name, address});
  return member.get();
}

}  // namespace adaptd
