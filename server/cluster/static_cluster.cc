#include "server/cluster/static_cluster.h"

#include "server/base/status_macros.h"
#include "server/cluster/grpc_member_calls.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<StaticCluster>> StaticCluster::Create(
    const adapt::v1::ServerConfig& config, Engine* engine, const TokenAuthorizer* auth,
    Metrics* metrics) {
  std::unique_ptr<StaticCluster> c(new StaticCluster());
  ASSIGN_OR_RETURN(c->forwarder_, Forwarder::Create(config, metrics));
  std::string member_token;
  if (!config.cluster().member_token_file().empty()) {
    ASSIGN_OR_RETURN(member_token, ReadMemberToken(config.cluster().member_token_file()));
  }
  c->calls_ = std::make_unique<GrpcMemberCalls>(c->forwarder_.get(), std::move(member_token));
  ASSIGN_OR_RETURN(c->handoff_, HandOff::Create(config, c->forwarder_.get(), c->calls_.get(),
                                                engine, auth, metrics));
  const uint32_t interval_ms = config.cluster().handoff_interval_ms();
  c->base_locator_ = std::make_unique<HandOffBases>(c->handoff_.get());
  c->usage_peers_ = std::make_unique<MemberUsagePeers>(
      [locator = c->base_locator_.get()] { return locator->Others(); }, c->calls_.get());
  c->usage_ = std::make_unique<UsageExchange>(
      c->usage_peers_.get(), &engine->quotas(), [engine] { return engine->MemoryByTenant(); },
      absl::Milliseconds(interval_ms > 0 ? interval_ms : 1000));
  c->quotas_ = std::make_unique<ClusterQuotas>(c->handoff_.get(), engine, c->usage_.get());
  c->bases_ = std::make_unique<ClusterBases>(c->base_locator_.get(), c->calls_.get(), engine);
  engine->SetRemoteBases(c->bases_.get());
  return c;
}

void StaticCluster::Start() {
  handoff_->Start();
  usage_->Start();
}

void StaticCluster::Stop() {
  usage_->Stop();
  handoff_->Stop();
}

}  // namespace adaptd
