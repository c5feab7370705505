// routing_client_driver: one adaptd::Client (routing to holders unless --no-route) running
// calls without pause, for routing_clients_e2e_test.py. It creates --stores stores of tenant
// "route" through --addr, then --threads threads call them in turn: Predict and, every fourth
// call, Adapt of one example with an id of its own. A call the client answers UNAVAILABLE
// (past its own retries, as while a killed member's shards fail over) is resent by the driver,
// the Adapt with the same id (as docs/CLIENTS.md tells applications to), up to 10 times within
// 20 s; such resends are counted apart from failures. Each line "report" on stdin prints one JSON
// line of counts on stdout
// ({"calls", "predicts", "adapts", "resent", "failed", "routing", "errors"}: the first few
// failures); end of input stops the calls and prints the last report.
#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/cpp/client.h"

namespace {

constexpr int kDim = 4;
const char* const kLabels[] = {"north", "south", "east"};

struct Counts {
  std::atomic<uint64_t> calls{0}, predicts{0}, adapts{0}, resent{0}, failed{0};
  absl::Mutex mu;
  std::vector<std::string> errors;  // the first few failures

  void Fail(const std::string& what, const absl::Status& status) {
    failed.fetch_add(1);
    absl::MutexLock lock(&mu);
    if (errors.size() < 5) errors.push_back(absl::StrCat(what, ": ", status.ToString()));
  }
};

// A JSON string literal of `text` (the errors hold quotes).
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return out + "\"";
}

void Report(Counts& counts, const adaptd::Client& client) {
  std::vector<std::string> errors;
  {
    absl::MutexLock lock(&counts.mu);
    for (const std::string& e : counts.errors) errors.push_back(Quoted(e));
  }
  std::cout << "{\"calls\": " << counts.calls.load() << ", \"predicts\": " << counts.predicts.load()
            << ", \"adapts\": " << counts.adapts.load() << ", \"resent\": " << counts.resent.load()
            << ", \"failed\": " << counts.failed.load()
            << ", \"routing\": " << (client.routing() ? "true" : "false") << ", \"errors\": ["
            << absl::StrJoin(errors, ", ") << "]}" << std::endl;
}

adapt::v1::Example MakeExample(int i, const std::string& id) {
  adapt::v1::Example example;
  const int label = i % 3;
  for (int d = 0; d < kDim; ++d) {
    example.mutable_input()->mutable_vector()->add_values(d == label ? 3.0f : 0.1f * (i % 7));
  }
  example.set_label(kLabels[label]);
  if (!id.empty()) example.set_id(id);
  return example;
}

absl::Status CreateStores(adaptd::Client& client, int stores) {
  for (int s = 0; s < stores; ++s) {
    adapt::v1::CreateStoreRequest create;
    create.set_tenant("route");
    create.set_store(absl::StrCat("s", s));
    create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    create.mutable_spec()->set_dim(kDim);
    create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    absl::StatusOr<adapt::v1::StoreInfo> created = client.CreateStore(create);
    if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
      return created.status();
    }
    std::vector<adapt::v1::Example> examples;
    for (int i = 0; i < 12; ++i)
      examples.push_back(MakeExample(i, absl::StrCat("init-", s, "-", i)));
    if (auto adapted = client.AdaptExamples("route", create.store(), examples); !adapted.ok()) {
      return adapted.status();
    }
    adapt::v1::CompileRequest compile;
    compile.set_tenant("route");
    compile.set_store(create.store());
    if (auto compiled = client.Compile(compile);
        !compiled.ok() && compiled.status().code() != absl::StatusCode::kFailedPrecondition) {
      return compiled.status();
    }
  }
  return absl::OkStatus();
}

// `call` until it is not UNAVAILABLE, at most 10 times within 20 s.
template <typename Call>
absl::Status Resending(Counts& counts, Call call) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  absl::Status status;
  for (int attempt = 0; attempt < 10; ++attempt) {
    if (attempt > 0) {
      counts.resent.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(250 * attempt));
    }
    status = call();
    if (status.code() != absl::StatusCode::kUnavailable || absl::Now() > give_up) break;
  }
  return status;
}

void Run(adaptd::Client& client, Counts& counts, int thread, int threads, int stores,
         const std::atomic<bool>& stop) {
  for (uint64_t n = 0; !stop.load(); ++n) {
    const std::string store = absl::StrCat("s", (thread + n * threads) % stores);
    counts.calls.fetch_add(1);
    if (n % 4 == 3) {
      const std::vector<adapt::v1::Example> examples = {
          MakeExample(static_cast<int>(n), absl::StrCat("run-", thread, "-", n))};
      absl::Status status = Resending(
          counts, [&] { return client.AdaptExamples("route", store, examples).status(); });
      counts.adapts.fetch_add(1);
      if (!status.ok()) counts.Fail(absl::StrCat("Adapt route/", store), status);
      continue;
    }
    adapt::v1::PredictRequest predict;
    predict.set_tenant("route");
    predict.set_store(store);
    *predict.add_inputs() = MakeExample(static_cast<int>(n), "").input();
    absl::Status status = Resending(counts, [&] { return client.Predict(predict).status(); });
    counts.predicts.fetch_add(1);
    if (!status.ok()) counts.Fail(absl::StrCat("Predict route/", store), status);
  }
}

}  // namespace

int main(int argc, char** argv) {
  adaptd::ClientOptions options;
  options.unary_timeout = absl::Seconds(20);
  options.stream_timeout = absl::Seconds(20);
  int stores = 24, threads = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--no-route") {
      options.route_to_holders = false;
    } else if (arg == "--addr" && i + 1 < argc) {
      options.address = value;
      ++i;
    } else if (arg == "--stores" && absl::SimpleAtoi(value, &stores) && stores > 0) {
      ++i;
    } else if (arg == "--threads" && absl::SimpleAtoi(value, &threads) && threads > 0) {
      ++i;
    } else {
      std::cerr << "usage: routing_client_driver --addr HOST:PORT [--stores N] [--threads N] "
                   "[--no-route]; bad argument: "
                << arg << "\n";
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = adaptd::Client::Connect(options);
  if (!client.ok()) {
    std::cerr << "connect: " << client.status() << "\n";
    return 1;
  }
  if (absl::Status created = CreateStores(**client, stores); !created.ok()) {
    std::cerr << "creating the stores: " << created << "\n";
    return 1;
  }
  Counts counts;
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { Run(**client, counts, t, threads, stores, stop); });
  }
  Report(counts, **client);  // the stores exist: the calls run
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "report") Report(counts, **client);
  }
  stop.store(true);
  for (std::thread& t : pool) t.join();
  Report(counts, **client);
  return 0;
}
