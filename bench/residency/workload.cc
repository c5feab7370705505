#include "bench/residency/workload.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace adaptd::bench {
namespace {

void RandomRow(std::mt19937_64& rng, int dim, adapt::v1::FloatVector* out) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int j = 0; j < dim; ++j) out->add_values(normal(rng));
}

absl::Status FillOne(adaptd::Client& client, const Workload& workload, const StoreName& name,
                     uint64_t seed) {
  const WorkloadOptions& o = workload.options();
  adapt::v1::CreateStoreRequest create;
  create.set_tenant(name.tenant);
  create.set_store(name.store);
  // The defaults a user gets: automatic compiles on (1024 examples or 200 ms idle), few-shot.
  adapt::v1::StoreSpec& spec = *create.mutable_spec();
  spec.set_kind(adapt::v1::STORE_KIND_FAAST);
  spec.set_encoder("identity");
  spec.set_dim(o.dim);
  spec.mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  if (auto info = client.CreateStore(create); !info.ok()) return info.status();
  if (auto r = client.Adapt({workload.AdaptRequestFor(name, seed)}); !r.ok()) return r.status();
  // Predict is FAILED_PRECONDITION until the first publish; the idle auto-compile would publish
  // 200 ms later, but a user who predicts right away compiles (README's quick start does).
  adapt::v1::CompileRequest compile;
  compile.set_tenant(name.tenant);
  compile.set_store(name.store);
  if (auto r = client.Compile(compile); !r.ok()) return r.status();
  return absl::OkStatus();
}

}  // namespace

Workload::Workload(const WorkloadOptions& options) : options_(options) {
  stores_.reserve(options.stores);
  for (int64_t j = 0; j < options.stores; ++j) {
    stores_.push_back({absl::StrCat("t", j % options.tenants), absl::StrCat("s", j)});
  }
}

adapt::v1::AdaptRequest Workload::AdaptRequestFor(const StoreName& name, uint64_t seed) const {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> label(0, options_.labels - 1);
  adapt::v1::AdaptRequest r;
  r.set_tenant(name.tenant);
  r.set_store(name.store);
  for (int i = 0; i < options_.examples; ++i) {
    adapt::v1::Example* e = r.add_examples();
    RandomRow(rng, options_.dim, e->mutable_input()->mutable_vector());
    e->set_label(absl::StrCat("label_", i < options_.labels ? i : label(rng)));
  }
  return r;
}

adapt::v1::PredictRequest Workload::PredictRequestFor(const StoreName& name,
                                                      std::mt19937_64& rng) const {
  adapt::v1::PredictRequest r;
  r.set_tenant(name.tenant);
  r.set_store(name.store);
  r.set_top_k(1);
  RandomRow(rng, options_.dim, r.add_inputs()->mutable_vector());
  return r;
}

absl::Status FillStores(adaptd::Client& client, const Workload& workload, int threads) {
  const std::vector<StoreName>& stores = workload.stores();
  std::atomic<size_t> next{0};
  std::mutex mu;
  absl::Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < stores.size(); i = next++) {
        absl::Status s = FillOne(client, workload, stores[i], workload.options().seed * 7919 + i);
        if (s.ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) {
          first = absl::Status(s.code(), absl::StrCat("filling ", stores[i].tenant, "/",
                                                      stores[i].store, ": ", s.message()));
        }
        next = stores.size();  // the others stop at their next store
        return;
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return first;
}

std::string TierName(adapt::v1::Tier tier) {
  std::string name = adapt::v1::Tier_Name(tier);
  if (name.rfind("TIER_", 0) == 0) name = name.substr(5);
  return absl::AsciiStrToLower(name);
}

Latency Summarize(std::vector<double> ms) {
  Latency l;
  l.count = static_cast<int64_t>(ms.size());
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * ms.size()));
    return ms[std::clamp<size_t>(k, 1, ms.size()) - 1];
  };
  l.p50_ms = rank(0.50);
  l.p99_ms = rank(0.99);
  l.max_ms = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  l.mean_ms = sum / ms.size();
  return l;
}

nlohmann::json LatencyJson(const Latency& l) {
  return {{"count", l.count},
          {"p50_ms", l.p50_ms},
          {"p99_ms", l.p99_ms},
          {"max_ms", l.max_ms},
          {"mean_ms", l.mean_ms}};
}

absl::StatusOr<adapt::v1::StoreInfo> GetStore(adapt::v1::Adaptation::Stub& stub,
                                              const StoreName& name, double* ms) {
  adapt::v1::GetStoreRequest request;
  request.set_tenant(name.tenant);
  request.set_store(name.store);
  adapt::v1::StoreInfo info;
  absl::StatusOr<double> took = TimeCall("GetStore", name, 30, [&](grpc::ClientContext& c) {
    return stub.GetStore(&c, request, &info);
  });
  if (!took.ok()) return took.status();
  if (ms != nullptr) *ms = *took;
  return info;
}

absl::StatusOr<std::string> TierOf(adapt::v1::Adaptation::Stub& stub, const StoreName& name,
                                   double* ms) {
  absl::StatusOr<adapt::v1::StoreInfo> info = GetStore(stub, name, ms);
  if (!info.ok()) return info.status();
  return TierName(info->tier());
}

absl::StatusOr<double> TimeCall(const char* what, const StoreName& name, double timeout_s,
                                const std::function<grpc::Status(grpc::ClientContext&)>& call) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(timeout_s)));
  const absl::Time start = absl::Now();
  const grpc::Status status = call(context);
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  if (!status.ok()) {
    const absl::Status s = adaptd::FromGrpcStatus(status);
    return absl::Status(s.code(),
                        absl::StrCat(what, " ", name.tenant, "/", name.store, ": ", s.message()));
  }
  return ms;
}

}  // namespace adaptd::bench
