#include "server/cluster/etcd_cluster.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "adapt/v1/cluster.pb.h"
#include "server/base/grpc_status.h"
#include "server/base/status_macros.h"
#include "server/cluster/grpc_member_calls.h"
#include "server/cluster/member_token.h"
#include "server/config/defaults.h"
#include "server/durability/etcd_durability.h"

namespace adaptd {
namespace {

// The reasons' label values (adaptd_cluster_claims_total, adaptd_cluster_releases_total), in
// the order of cluster::ClaimReason and cluster::ReleaseReason.
constexpr const char* kClaimReasons[] = {"new", "restart", "failover", "move"};
constexpr const char* kReleaseReasons[] = {"move", "drain", "lost"};

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdCluster>> EtcdCluster::Register(
    const adapt::v1::ServerConfig& config, Metrics* metrics, std::function<void()> on_lease_lost) {
  const adapt::v1::ClusterConfig& c = config.cluster();
  const adapt::v1::DurableLogConfig& log = config.durable_log();
  std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
  cluster->self_ = c.self();
  cluster->restart_grace_ = absl::Seconds(
      c.restart_grace_seconds() > 0 ? c.restart_grace_seconds() : defaults::kRestartGraceSeconds);
  cluster->usage_interval_ = absl::Milliseconds(
      c.usage_interval_ms() > 0 ? c.usage_interval_ms() : defaults::kUsageIntervalMs);
  ASSIGN_OR_RETURN(cluster->forwarder_, Forwarder::Create(config, metrics));
  std::string member_token;
  if (!c.member_token_file().empty()) {
    ASSIGN_OR_RETURN(member_token, ReadMemberToken(c.member_token_file()));
  }
  cluster->calls_ =
      std::make_unique<GrpcMemberCalls>(cluster->forwarder_.get(), std::move(member_token));
  ASSIGN_OR_RETURN(cluster->client_, ConnectConfiguredEtcd(log));

  cluster::ClusterMember::Options options;
  options.registry.prefix = log.etcd_prefix().empty() ? defaults::kEtcdPrefix : log.etcd_prefix();
  options.registry.self = c.self();
  options.registry.address = c.advertise_address();
  options.registry.lease_ttl = absl::Seconds(
      log.lease_ttl_seconds() > 0 ? log.lease_ttl_seconds() : defaults::kEtcdLeaseTtlSeconds);
  cluster->lease_ttl_ = options.registry.lease_ttl;
  options.registry.settle =
      c.settle_seconds() > 0 ? absl::Seconds(c.settle_seconds()) : 2 * options.registry.lease_ttl;
  // A member restarted after a SIGKILL waits out its previous lease; longer is another process.
  options.registry.register_wait = 3 * options.registry.lease_ttl;
  options.on_lease_lost = std::move(on_lease_lost);
  if (metrics != nullptr) {
    options.on_claim = [metrics](cluster::ClaimReason reason) {
      metrics->RecordClusterClaim(kClaimReasons[static_cast<int>(reason)]);
    };
    options.on_release = [metrics](cluster::ReleaseReason reason) {
      metrics->RecordClusterRelease(kReleaseReasons[static_cast<int>(reason)]);
    };
    options.on_restore = [metrics](double seconds) { metrics->RecordClusterRestore(seconds); };
  }
  absl::StatusOr<std::unique_ptr<cluster::ClusterMember>> member =
      cluster::ClusterMember::Register(cluster->client_.get(), std::move(options));
  if (!member.ok()) {
    return absl::Status(member.status().code(),
                        absl::StrCat("cluster (etcd): registering member '", c.self(),
                                     "': ", member.status().message()));
  }
  cluster->member_ = *std::move(member);
  if (metrics != nullptr) {
    cluster->metrics_ = metrics;
    metrics->SetClusterSource(cluster.get(), [c = cluster.get()] { return c->Sample(); });
  }
  return cluster;
}

EtcdCluster::~EtcdCluster() {
  if (metrics_ != nullptr) metrics_->ClearClusterSource(this);
  stopping_.store(true);
  if (usage_ != nullptr) usage_->Stop();
  admin_.Close();
  member_.reset();
}

void EtcdCluster::Attach(Engine* engine) {
  bases_ = std::make_unique<ClusterBases>(this, calls_.get(), engine);
  engine->SetRemoteBases(bases_.get());
  usage_peers_ = std::make_unique<MemberUsagePeers>([this] { return Peers(); }, calls_.get());
  usage_ = std::make_unique<UsageExchange>(
      usage_peers_.get(), &engine->quotas(), [engine] { return engine->MemoryByTenant(); },
      usage_interval_);
}

absl::Status EtcdCluster::Serve(Engine* engine) {
  absl::Status served = member_->Serve(engine);
  serving_.store(true);
  if (served.ok() && usage_ != nullptr) usage_->Start();
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

absl::StatusOr<const cluster::Member*> EtcdCluster::HolderOf(const std::string& tenant,
                                                             const std::string& store) const {
  absl::StatusOr<const cluster::Member*> holder = Route(cluster::CallOrigin(), tenant, store);
  if (holder.ok()) return holder;
  return absl::UnavailableError(
      absl::StrCat("spec.base: the base ", tenant, "/", store, ": ", holder.status().message()));
}

absl::Status EtcdCluster::Absent(const std::string& tenant, const std::string& store) const {
  absl::StatusOr<const cluster::Member*> holder = Route(cluster::CallOrigin(), tenant, store);
  if (holder.ok() && *holder == nullptr) return absl::OkStatus();  // held here: it is absent
  return absl::UnavailableError(absl::StrCat("spec.base: the base ", tenant, "/", store,
                                             " is not held by member '", self_,
                                             "' now (its shard moved); retry"));
}

std::vector<const cluster::Member*> EtcdCluster::Peers() const {
  std::vector<const cluster::Member*> peers;
  for (const auto& [name, registered] : member_->registry().Members()) {
    if (name != self_) peers.push_back(Intern(name, registered.record.address()));
  }
  return peers;
}

absl::StatusOr<adapt::v1::ClusterRoutesResponse> EtcdCluster::Routes() const {
  if (!serving_.load()) {
    return absl::UnavailableError(
        absl::StrCat("ClusterRoutes: member '", self_, "' is starting (no claims yet); retry"));
  }
  const cluster::ShardClaims::Table table = member_->claims().Holders();
  const std::map<std::string, cluster::RegisteredMember> members = member_->registry().Members();
  adapt::v1::ClusterRoutesResponse routes;
  routes.set_revision(table.revision);
  std::map<std::string, int> index;  // member name -> its place in routes.members
  routes.mutable_holders()->Reserve(static_cast<int>(table.holders.size()));
  for (const std::optional<cluster::ShardHolder>& holder : table.holders) {
    const auto registered = holder.has_value() ? members.find(holder->member) : members.end();
    if (registered == members.end()) {
      routes.add_holders(-1);  // nobody, or a holder whose registration lapsed
      continue;
    }
    auto [at, added] = index.try_emplace(holder->member, routes.members_size());
    if (added) {
      adapt::v1::RouteMember* member = routes.add_members();
      member->set_name(holder->member);
      member->set_address(registered->second.record.address());
    }
    routes.add_holders(at->second);
  }
  return routes;
}

std::string EtcdCluster::HolderHint(const std::string& tenant, const std::string& store,
                                    const cluster::Member& holder) const {
  if (!serving_.load()) return "";
  const int shard = cluster::ShardOf(tenant, store, member_->claims().shards());
  const std::optional<cluster::ShardHolder> claim = member_->claims().HolderOf(shard);
  if (!claim.has_value() || claim->member != holder.name) return "";
  return absl::StrCat(cluster::ShardName(shard), " ", holder.name, " ", holder.address, " ",
                      claim->fence);
}

void EtcdCluster::Freeze() {
  stopping_.store(true);
  if (usage_ != nullptr) usage_->Stop();  // the engine shuts down after this
  if (serving_.load()) member_->claims().Freeze();
}

Metrics::ClusterSample EtcdCluster::Sample() const {
  Metrics::ClusterSample sample;
  if (serving_.load()) {
    sample.shards_held = static_cast<double>(member_->claims().Held().size());
    sample.shards_adopted = static_cast<double>(member_->Adopted().size());
    sample.shards_without_holder = ShardsWithoutHolder();
  }
  sample.restores_in_flight = member_->restores_in_flight();
  sample.lease_age_seconds = absl::ToDoubleSeconds(member_->LeaseAge());
  sample.lease_ttl_seconds = absl::ToDoubleSeconds(lease_ttl_);
  return sample;
}

// --- Operating it ---------------------------------------------------------------------------

int EtcdCluster::ShardsWithoutHolder() const {
  const cluster::ShardClaims& claims = member_->claims();
  int unheld = 0;
  for (int shard = 0; shard < claims.shards(); ++shard) {
    if (!claims.HolderOf(shard).has_value()) ++unheld;
  }
  return unheld;
}

int EtcdCluster::ShardsHeldBy(const std::string& name) const {
  if (!serving_.load()) return 0;
  const cluster::ShardClaims& claims = member_->claims();
  int held = 0;
  for (int shard = 0; shard < claims.shards(); ++shard) {
    const std::optional<cluster::ShardHolder> holder = claims.HolderOf(shard);
    if (holder.has_value() && holder->member == name) ++held;
  }
  return held;
}

adapt::v1::MemberStatus EtcdCluster::LocalStatus() const {
  adapt::v1::MemberStatus status;
  status.set_name(self_);
  status.set_address(forwarder_->membership().self().address);
  const std::map<std::string, cluster::RegisteredMember> members = member_->registry().Members();
  if (const auto it = members.find(self_); it != members.end()) {
    status.set_state(adapt::v1::ClusterMemberRecord::State_Name(it->second.record.state()));
  }
  status.set_shards(ShardsHeldBy(self_));
  status.set_lease_remaining_seconds(
      std::max(0.0, absl::ToDoubleSeconds(member_->registry().ValidUntil() - absl::Now())));
  status.set_restores_in_flight(member_->restores_in_flight());
  return status;
}

adapt::v1::ClusterStatusResponse EtcdCluster::Gather(
    absl::Time deadline, const std::optional<std::string>& authorization) const {
  adapt::v1::ClusterStatusResponse out;
  const std::map<std::string, cluster::RegisteredMember> members = member_->registry().Members();
  std::vector<std::pair<std::string, std::string>> metadata;
  if (authorization.has_value()) metadata.emplace_back("authorization", *authorization);
  adapt::v1::ClusterStatusRequest local;
  local.set_local(true);
  const std::string request = local.SerializeAsString();
  // Each other member answers for itself; their calls run at once.
  struct Asked {
    std::string name, reply;
    grpc::Status status;
    absl::Notification done;
  };
  std::vector<std::unique_ptr<Asked>> asked;
  for (const auto& [name, registered] : members) {
    if (name == self_) continue;
    asked.push_back(std::make_unique<Asked>());
    Asked* a = asked.back().get();
    a->name = name;
    forwarder_->UnaryMessage(*Intern(name, registered.record.address()), "ClusterStatus", request,
                             deadline, metadata, &a->reply, [a](const grpc::Status& status) {
                               a->status = status;
                               a->done.Notify();
                             });
  }
  *out.add_members() = LocalStatus();
  for (const std::unique_ptr<Asked>& a : asked) {
    a->done.WaitForNotification();
    const cluster::RegisteredMember& registered = members.at(a->name);
    adapt::v1::ClusterStatusResponse answer;
    adapt::v1::MemberStatus* status = out.add_members();
    if (a->status.ok() && answer.ParseFromString(a->reply) && answer.members_size() == 1) {
      *status = answer.members(0);
      continue;
    }
    status->set_name(a->name);
    status->set_address(registered.record.address());
    status->set_state(adapt::v1::ClusterMemberRecord::State_Name(registered.record.state()));
    status->set_shards(ShardsHeldBy(a->name));
    status->set_error(a->status.ok() ? "its answer could not be read"
                                     : absl::StrCat(CodeName(a->status.error_code()), ": ",
                                                    a->status.error_message()));
  }
  std::sort(out.mutable_members()->begin(), out.mutable_members()->end(),
            [](const adapt::v1::MemberStatus& a, const adapt::v1::MemberStatus& b) {
              return a.name() < b.name();
            });
  if (serving_.load()) {
    out.set_shards_without_holder(ShardsWithoutHolder());
    out.set_settled(member_->claims().Settled());
  }
  return out;
}

absl::Status EtcdCluster::Drain(const std::string& name, bool undo) {
  const adapt::v1::ClusterMemberRecord::State state =
      undo ? adapt::v1::ClusterMemberRecord::READY : adapt::v1::ClusterMemberRecord::DRAINING;
  cluster::ClusterRegistry& registry = member_->registry();
  // Another member's record may change meanwhile (its state, a restart): read and try again.
  absl::Status set;
  for (int attempt = 0; attempt < 10; ++attempt) {
    set = name == self_ ? registry.SetState(state) : registry.SetStateOf(name, state);
    if (set.code() != absl::StatusCode::kAborted) break;
  }
  if (absl::IsNotFound(set)) {
    return absl::NotFoundError(
        absl::StrCat("member: '", name, "' is not a registered member of this cluster"));
  }
  return set;
}

bool EtcdCluster::RunAdmin(std::function<void()> fn) {
  return !stopping_.load() && admin_.Run(std::move(fn));
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
