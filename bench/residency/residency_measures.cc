// The latency and memory measurements of a ResidencyRun (its start, stop and setup are in
// residency_run.cc). Every timed call is classified by the tier GetStore reported just before
// it, so a tier the server does not have yet (warm) simply never appears.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/residency/probes.h"
#include "bench/residency/residency_run.h"
#include "server/core/status_macros.h"

namespace adaptd::bench {
namespace {

// `count` distinct entries of `from`, in random order.
template <typename T>
std::vector<T> Sample(std::vector<T> from, size_t count, std::mt19937_64& rng) {
  std::shuffle(from.begin(), from.end(), rng);
  from.resize(std::min(count, from.size()));
  return from;
}

}  // namespace

absl::Status ResidencyRun::ColdFirstPredict(const Mode& mode, const std::string& after) {
  std::vector<StoreName> others;
  for (size_t i = 0; i < workload_.stores().size(); ++i) {
    if (static_cast<int>(i) != first_store_) others.push_back(workload_.stores()[i]);
  }
  ASSIGN_OR_RETURN(nlohmann::json before, Footprint());
  LatencyByTier latency;
  for (const StoreName& name : Sample(others, options_.cold_sample, rng_)) {
    ASSIGN_OR_RETURN(std::string tier, TierOf(*stub_, name));
    ASSIGN_OR_RETURN(double ms, Predict(name));
    latency[tier].push_back(ms);
  }
  ASSIGN_OR_RETURN(nlohmann::json done, Footprint());
  const double loads = done["loads_total"].get<double>() - before["loads_total"].get<double>();
  const double load_s =
      done["load_seconds_sum"].get<double>() - before["load_seconds_sum"].get<double>();
  for (const auto& [tier, ms] : latency) {
    nlohmann::json record = Record(mode, "first_predict");
    record["after"] = after;
    record["tier"] = tier;
    record.update(LatencyJson(Summarize(ms)));
    record["loads"] = loads;  // over the whole sample, every tier
    record["server_load_mean_ms"] = loads > 0 ? 1000 * load_s / loads : 0;
    emit_(record);
  }
  return absl::OkStatus();
}

absl::Status ResidencyRun::LoadAll(const Mode& mode) {
  const absl::Time start = absl::Now();
  for (const StoreName& name : Sample(workload_.stores(), workload_.stores().size(), rng_)) {
    RETURN_IF_ERROR(Predict(name).status());
  }
  const double load_all_s = absl::ToDoubleSeconds(absl::Now() - start);
  // The budget is kept after the fact by a background thread: give it time to catch up.
  const absl::Time settle = absl::Now();
  ASSIGN_OR_RETURN(nlohmann::json footprint, Footprint());
  while (mode.budget_bytes > 0 && footprint["resident_bytes"].get<double>() > mode.budget_bytes &&
         absl::Now() - settle < absl::Seconds(60)) {
    absl::SleepFor(absl::Milliseconds(50));
    ASSIGN_OR_RETURN(footprint, Footprint());
  }
  nlohmann::json record = Record(mode, "memory");
  record.update(footprint);
  record["load_all_s"] = load_all_s;
  record["settle_s"] = absl::ToDoubleSeconds(absl::Now() - settle);
  if (mode.budget_bytes > 0) {
    record["within_budget"] = footprint["resident_bytes"].get<double>() <= mode.budget_bytes;
  }
  emit_(record);
  if (mode.budget_bytes > 0 && footprint["evictions_total"].get<double>() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the budget of ", mode.budget_bytes,
                     " bytes evicted nothing while every store was read: lower --budget-bytes"));
  }
  return absl::OkStatus();
}

absl::Status ResidencyRun::PredictLatency(const Mode& mode) {
  ASSIGN_OR_RETURN(std::vector<StoreName> loaded, StoresIn("hot"));
  if (loaded.empty()) return absl::FailedPreconditionError("no store is hot after reading all");
  // Per call: GetStore (its tier, and the catalog-only RPC's latency), Predict, then the no-op
  // Ping, interleaved so that drift on a shared machine hits all three alike.
  LatencyByTier predict;
  std::vector<double> get_store, ping;
  auto one_round = [&](const StoreName& name) -> absl::Status {
    double get_ms = 0;
    ASSIGN_OR_RETURN(std::string tier, TierOf(*stub_, name, &get_ms));
    get_store.push_back(get_ms);
    ASSIGN_OR_RETURN(double ms, Predict(name));
    predict[tier].push_back(ms);
    adapt::v1::PingResponse pong;
    ASSIGN_OR_RETURN(double ping_ms, TimeCall("Ping", name, 30, [&](grpc::ClientContext& c) {
                       return stub_->Ping(&c, adapt::v1::PingRequest(), &pong);
                     }));
    ping.push_back(ping_ms);
    return absl::OkStatus();
  };
  auto emit_all = [&](const std::string& selection, size_t pool) {
    const Latency anchor = Summarize(ping);
    for (const auto& [rpc, ms] : {std::pair{"Ping", &ping}, std::pair{"GetStore", &get_store}}) {
      nlohmann::json record = Record(mode, "noop");
      record["selection"] = selection;
      record["rpc"] = rpc;
      record.update(LatencyJson(Summarize(*ms)));
      emit_(record);
    }
    for (const auto& [tier, ms] : predict) {
      const Latency l = Summarize(ms);
      nlohmann::json record = Record(mode, "predict");
      record["selection"] = selection;
      record["pool"] = pool;
      record["tier"] = tier;
      record.update(LatencyJson(l));
      record["p50_to_ping"] = anchor.p50_ms > 0 ? l.p50_ms / anchor.p50_ms : 0;
      record["p99_to_ping"] = anchor.p99_ms > 0 ? l.p99_ms / anchor.p99_ms : 0;
      emit_(record);
    }
  };
  // Stores that were loaded when the measurement began.
  std::uniform_int_distribution<size_t> pick_loaded(0, loaded.size() - 1);
  for (int k = 0; k < options_.calls; ++k) RETURN_IF_ERROR(one_round(loaded[pick_loaded(rng_)]));
  emit_all("loaded", loaded.size());
  // Any store: under a budget, a mix of tiers, each call classified by the tier it met.
  predict.clear();
  get_store.clear();
  ping.clear();
  const std::vector<StoreName>& all = workload_.stores();
  std::uniform_int_distribution<size_t> pick_any(0, all.size() - 1);
  for (int k = 0; k < options_.calls; ++k) RETURN_IF_ERROR(one_round(all[pick_any(rng_)]));
  emit_all("any", all.size());
  return absl::OkStatus();
}

absl::Status ResidencyRun::AdaptByTier(const Mode& mode) {
  // Up to adapt_sample targets from each tier, alternated so that neither runs on a quieter
  // machine; each classified by the tier found right before its Adapt.
  std::vector<std::vector<StoreName>> by_tier;
  for (const char* tier : {"hot", "warm", "cold"}) {
    ASSIGN_OR_RETURN(std::vector<StoreName> in, StoresIn(tier));
    by_tier.push_back(Sample(std::move(in), options_.adapt_sample, rng_));
  }
  LatencyByTier latency;
  uint64_t seed = 1'000'003;
  for (size_t i = 0; i < static_cast<size_t>(options_.adapt_sample); ++i) {
    for (const std::vector<StoreName>& targets : by_tier) {
      if (i >= targets.size()) continue;
      const StoreName& name = targets[i];
      ASSIGN_OR_RETURN(std::string tier, TierOf(*stub_, name));
      const adapt::v1::AdaptRequest request = workload_.AdaptRequestFor(name, seed++);
      const absl::Time start = absl::Now();
      if (auto r = client_->Adapt({request}); !r.ok()) {
        return absl::Status(r.status().code(), absl::StrCat("Adapt ", name.tenant, "/", name.store,
                                                            ": ", r.status().message()));
      }
      latency[tier].push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
    }
  }
  for (const auto& [tier, ms] : latency) {
    nlohmann::json record = Record(mode, "adapt");
    record["tier"] = tier;
    record.update(LatencyJson(Summarize(ms)));
    emit_(record);
  }
  return absl::OkStatus();
}

}  // namespace adaptd::bench
