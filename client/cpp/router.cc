#include "client/cpp/router.h"

#include <utility>

namespace adaptd {
namespace {

// The hint of an answer: in its initial metadata, or in its trailers (an error answered
// without a message carries its headers there).
std::optional<std::string> HintOf(const grpc::ClientContext& context) {
  for (const auto* metadata :
       {&context.GetServerInitialMetadata(), &context.GetServerTrailingMetadata()}) {
    auto found = metadata->find(kHolderHeader);
    if (found != metadata->end()) return std::string(found->second.data(), found->second.size());
  }
  return std::nullopt;
}

}  // namespace

Router::Router(std::string given, Fetch fetch, Dial dial, Clock clock)
    : given_(std::move(given)),
      fetch_(std::move(fetch)),
      dial_(std::move(dial)),
      clock_(std::move(clock)) {}

bool Router::enabled() const {
  absl::MutexLock lock(&mu_);
  return enabled_;
}

std::optional<int64_t> Router::revision() const {
  absl::MutexLock lock(&mu_);
  if (!table_.has_value()) return std::nullopt;
  return table_->revision();
}

adapt::v1::Adaptation::Stub* Router::StubOf(const std::string& address) {
  Member& member = members_[address];
  if (member.channel == nullptr) {
    member.channel = dial_(address);
    member.stub = adapt::v1::Adaptation::NewStub(member.channel);
  }
  // Asking starts a connection of an idle channel; one that failed to connect is not used
  // until gRPC's reconnection brings it back.
  const grpc_connectivity_state state = member.channel->GetState(/*try_to_connect=*/true);
  if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) return nullptr;
  return member.stub.get();
}

Router::Route Router::Pick(absl::string_view tenant, absl::string_view store) {
  bool due = false;
  {
    absl::MutexLock lock(&mu_);
    if (!enabled_) return Route{};
    due = !table_.has_value() && stale_;
  }
  if (due) Refresh();
  absl::MutexLock lock(&mu_);
  if (!enabled_ || !table_.has_value()) return Route{};
  const std::string& address = table_->HolderAddress(StoreShard(tenant, store, table_->shards()));
  if (address.empty() || address == given_) return Route{};
  adapt::v1::Adaptation::Stub* stub = StubOf(address);
  if (stub == nullptr) return Route{};
  return Route{stub, address};
}

void Router::Observe(const grpc::ClientContext& context, grpc::StatusCode code,
                     const Route& route) {
  const std::optional<std::string> header = HintOf(context);
  bool due = false;
  {
    absl::MutexLock lock(&mu_);
    if (!enabled_) return;
    if (header.has_value() && table_.has_value()) {
      absl::StatusOr<HolderHint> hint = ParseHolderHint(*header, table_->shards());
      if (hint.ok() && table_->Apply(*hint)) stale_ = true;
    }
    if (route.stub != nullptr && code == grpc::StatusCode::UNAVAILABLE) {
      stale_ = true;
    }
    due = stale_;
  }
  if (due) Refresh();
}

void Router::Refresh() {
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_();
    if (!enabled_ || fetching_ || now - last_fetch_ < absl::Seconds(1)) return;
    fetching_ = true;
    last_fetch_ = now;
  }
  absl::StatusOr<adapt::v1::ClusterRoutesResponse> routes = fetch_();
  absl::StatusOr<RouteTable> table =
      routes.ok() ? RouteTable::Parse(*routes) : absl::StatusOr<RouteTable>(routes.status());
  absl::MutexLock lock(&mu_);
  fetching_ = false;
  if (table.ok()) {
    table_ = *std::move(table);
    stale_ = false;
  } else if (table.status().code() == absl::StatusCode::kUnimplemented) {
    enabled_ = false;  // a single server: its one channel serves every store
    table_.reset();
  }
  // Any other failure keeps the table it had (or none) and stays due.
}

}  // namespace adaptd
