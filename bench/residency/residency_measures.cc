// The latency and memory measurements of a ResidencyRun (its start, stop and setup are in
// residency_run.cc). Every timed call is classified by the tier GetStore reported just before
// it (hot, warm or cold), so a tier that does not occur at that point simply has no record.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/residency/probes.h"
#include "bench/residency/residency_run.h"
#include "server/base/status_macros.h"

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
  std::vector<std::pair<StoreName, std::string>> found;  // each sampled store, its tier before
  for (const StoreName& name : Sample(others, options_.cold_sample, rng_)) {
    ASSIGN_OR_RETURN(std::string tier, TierOf(*stub_, name));
    ASSIGN_OR_RETURN(double ms, Predict(name));
    latency[tier].push_back(ms);
    found.emplace_back(name, tier);
  }
  ASSIGN_OR_RETURN(nlohmann::json done, Footprint());
  // What the reads left the stores as: a read of a cold store loads only its warm form, where
  // the kind has one.
  std::map<std::string, std::map<std::string, int>> became;
  for (const auto& [name, before_tier] : found) {
    ASSIGN_OR_RETURN(std::string tier, TierOf(*stub_, name));
    ++became[before_tier][tier];
  }
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
    record["tiers_after"] = became[tier];  // those stores' tiers once the sample was read
    emit_(record);
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> ResidencyRun::TouchAll(
    const Mode& mode, const std::string& state,
    const std::function<absl::Status(const StoreName&)>& touch, size_t count) {
  const absl::Time start = absl::Now();
  for (const StoreName& name : Sample(workload_.stores(), count, rng_)) {
    RETURN_IF_ERROR(touch(name));
  }
  const double touch_s = absl::ToDoubleSeconds(absl::Now() - start);
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
  record["state"] = state;
  record["touched"] = std::min(count, workload_.stores().size());
  record["touch_s"] = touch_s;
  record["settle_s"] = absl::ToDoubleSeconds(absl::Now() - settle);
  if (mode.budget_bytes > 0) {
    record["within_budget"] = footprint["resident_bytes"].get<double>() <= mode.budget_bytes;
  }
  emit_(record);
  return record;
}

absl::Status ResidencyRun::ReadAll(const Mode& mode) {
  ASSIGN_OR_RETURN(nlohmann::json before, Footprint());
  ASSIGN_OR_RETURN(nlohmann::json after, TouchAll(mode, "read", [&](const StoreName& name) {
                     return Predict(name).status();
                   }));
  // What each tier holds by the stores' own account (ListStores, which never loads).
  ASSIGN_OR_RETURN(std::vector<adapt::v1::StoreInfo> infos, AllInfos());
  std::map<std::string, double> count, held;
  std::vector<StoreName> warm;
  for (const adapt::v1::StoreInfo& info : infos) {
    const std::string tier = TierName(info.tier());
    count[tier] += 1;
    held[tier] += info.memory_bytes();
    if (tier == "warm") warm.push_back({info.tenant(), info.store()});
  }
  // And what GetStore says of a sample of the warm ones.
  std::vector<double> reported;
  for (const StoreName& name : Sample(warm, 20, rng_)) {
    ASSIGN_OR_RETURN(adapt::v1::StoreInfo info, GetStore(*stub_, name));
    if (TierName(info.tier()) == "warm") reported.push_back(info.memory_bytes());
  }
  nlohmann::json record = Record(mode, "warm");
  for (const char* tier : {"hot", "warm", "cold"}) {
    record[absl::StrCat("stores_", tier)] = count[tier];
    record[absl::StrCat("held_", tier, "_bytes")] = held[tier];
  }
  for (const char* key : {"rss_bytes", "rss_anon_bytes", "rss_file_bytes", "memory_bytes"}) {
    record[key] = after[key];
  }
  record["before_anon_bytes"] = before["rss_anon_bytes"];
  record["before_stores_warm"] = before["stores_warm"];
  // Heap per warm store three ways: all of it over the stores; all of it less what the hot
  // stores hold, over the warm ones (base and cold catalog entries included, so an upper
  // figure); and the growth while the read made stores warm, over the stores it made warm.
  const double anon = after["rss_anon_bytes"].get<double>();
  const double made_warm = count["warm"] - before["stores_warm"].get<double>();
  record["anon_per_store_bytes"] = anon / workload_.options().stores;
  record["anon_less_hot_per_warm_bytes"] =
      count["warm"] > 0 ? (anon - held["hot"]) / count["warm"] : 0;
  record["anon_growth_per_warm_bytes"] =
      made_warm > 0 ? (anon - before["rss_anon_bytes"].get<double>()) / made_warm : 0;
  if (!reported.empty()) {
    const auto [least, most] = std::minmax_element(reported.begin(), reported.end());
    double sum = 0;
    for (double b : reported) sum += b;
    record["warm_memory_bytes"] = {{"sampled", reported.size()},
                                   {"mean", sum / reported.size()},
                                   {"min", *least},
                                   {"max", *most}};
  }
  emit_(record);
  return absl::OkStatus();
}

absl::Status ResidencyRun::LoadWhole(const Mode& mode) {
  auto export_store = [&](const StoreName& name) {
    const absl::Status s = client_->ExportStore(name.tenant, name.store,
                                                [](absl::string_view) { return absl::OkStatus(); });
    if (s.ok()) return s;
    return absl::Status(
        s.code(), absl::StrCat("ExportStore ", name.tenant, "/", name.store, ": ", s.message()));
  };
  const size_t count = options_.budget_only ? static_cast<size_t>(options_.whole_sample) : SIZE_MAX;
  ASSIGN_OR_RETURN(nlohmann::json record, TouchAll(mode, "whole", export_store, count));
  // Loading every store must evict some; a sample may fit beside the rest.
  if (!options_.budget_only && mode.budget_bytes > 0 &&
      record["evictions_total"].get<double>() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the budget of ", mode.budget_bytes,
                     " bytes evicted nothing while every store was loaded: lower --budget-bytes"));
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

absl::Status ResidencyRun::AdaptByTier(const Mode& mode, const std::string& when) {
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
    record["when"] = when;
    record["tier"] = tier;
    record.update(LatencyJson(Summarize(ms)));
    emit_(record);
  }
  return absl::OkStatus();
}

}  // namespace adaptd::bench
