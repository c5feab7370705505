// adaptctl bench: a load generator. It creates and fills stores (compiling faast ones), drives
// Predict calls from concurrent clients for a duration (with --adapt-examples, Adapt calls
// next for as long), then the no-op Ping the same way as the transport's baseline, prints one JSON
// line and deletes the stores it created. With --store it queries existing stores instead and
// leaves them as they were (unless --adapt-examples adapts them). With --texts the stores use
// --encoder (a text encoder) and every example and predict input is a line of the file, so the
// figures include the encoder's work. With --via-client the Predict and Adapt load goes through
// adaptd::Client, which routes each store's calls to its holder in a cluster on etcd.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/adaptctl/bench_load.h"
#include "client/adaptctl/commands.h"
#include "client/adaptctl/settings.h"
#include "grpcpp/grpcpp.h"

namespace adaptctl {
namespace {

struct BenchOptions {
  int concurrency = 16;
  int tenants = 1;
  int stores = 10;
  std::string kind = "faast";
  std::vector<std::string> settings;  // --set KEY=VALUE for the stores' spec
  int dim = 64;
  std::string encoder = "identity";
  std::string texts_path;          // --texts: one text per line; inputs are then texts
  std::vector<std::string> texts;  // its non-empty lines
  int labels = 16;
  int inputs_per_request = 1;
  double duration = 10;
  int examples = 0;  // per store; 0: max(4 × labels, 64)
  // > 0: an Adapt phase after the predicts, each call one message of this many examples.
  int adapt_examples = 0;
  std::string address;
  // --store: existing stores to query; none are then created, filled or deleted.
  std::vector<std::string> existing;
  // --via-client: the Predict and Adapt load through adaptd::Client (which calls each store's
  // holder in a cluster unless --no-route) instead of raw stubs on the given address.
  bool via_client = false;
};

struct BenchStore {
  std::string tenant, store;
};

void RandomVector(std::mt19937& rng, int dim, adapt::v1::FloatVector* out) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int j = 0; j < dim; ++j) out->add_values(normal(rng));
}

// One input: a random vector of --dim, or with --texts a line of the file drawn at random.
void RandomInput(std::mt19937& rng, const BenchOptions& o, adapt::v1::Input* out) {
  if (o.texts.empty()) {
    RandomVector(rng, o.dim, out->mutable_vector());
  } else {
    out->set_text(o.texts[rng() % o.texts.size()]);
  }
}

// The non-empty lines of --texts (a trailing CR dropped).
absl::StatusOr<std::vector<std::string>> ReadTexts(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("--texts: cannot read ", path));
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(file, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) texts.push_back(std::move(line));
  }
  if (file.bad()) return absl::DataLossError(absl::StrCat("--texts: error reading ", path));
  if (texts.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--texts: ", path, " holds no texts"));
  }
  return texts;
}

// --encoder names one of the server's encoders, and --texts is given exactly when it takes
// texts.
absl::Status CheckEncoder(adaptd::Client& client, const BenchOptions& o) {
  absl::StatusOr<adapt::v1::ListEncodersResponse> listed = client.ListEncoders();
  if (!listed.ok()) return listed.status();
  std::vector<std::string> names;
  for (const adapt::v1::EncoderInfo& e : listed->encoders()) {
    if (e.name() != o.encoder) {
      names.push_back(e.name());
      continue;
    }
    const bool text = e.input_kind() == "text";
    if (text && o.texts_path.empty()) {
      return UsageError(absl::StrCat("--texts: encoder '", o.encoder,
                                     "' takes texts; give a file of texts, one per line"));
    }
    if (!text && !o.texts_path.empty()) {
      return UsageError(
          absl::StrCat("--texts: encoder '", o.encoder, "' takes vectors, not texts"));
    }
    return absl::OkStatus();
  }
  return UsageError(absl::StrCat("--encoder: the server has no encoder '", o.encoder,
                                 "' (it has: ", absl::StrJoin(names, ", "), ")"));
}

// Runs fn(i) for i in [0, n) on up to `threads` threads; the first error wins.
absl::Status ParallelFor(int n, int threads, const std::function<absl::Status(int)>& fn) {
  std::atomic<int> next{0};
  absl::Mutex mu;
  absl::Status first;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, std::min(threads, n)); ++t) {
    pool.emplace_back([&] {
      for (int i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
        absl::Status s = fn(i);
        if (!s.ok()) {
          absl::MutexLock lock(&mu);
          if (first.ok()) first = s;
          return;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  return first;
}

absl::Status FillStore(adaptd::Client& client, const BenchOptions& o, const BenchStore& s,
                       uint32_t seed) {
  adapt::v1::CreateStoreRequest create;
  create.set_tenant(s.tenant);
  create.set_store(s.store);
  absl::StatusOr<adapt::v1::StoreKind> kind = ParseStoreKind(o.kind);
  if (!kind.ok()) return UsageError(kind.status().message());
  create.mutable_spec()->set_kind(*kind);
  create.mutable_spec()->set_encoder(o.encoder);
  if (o.texts.empty()) create.mutable_spec()->set_dim(o.dim);  // a text encoder sets its own
  create.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  if (absl::Status s = ApplyStoreSettings(o.settings, *create.mutable_spec()); !s.ok()) {
    return UsageError(s.message());
  }
  if (auto info = client.CreateStore(create); !info.ok()) return info.status();
  std::mt19937 rng(seed);
  adapt::v1::AdaptRequest adapt;
  adapt.set_tenant(s.tenant);
  adapt.set_store(s.store);
  const int examples = o.examples > 0 ? o.examples : std::max(4 * o.labels, 64);
  for (int i = 0; i < examples; ++i) {
    adapt::v1::Example* e = adapt.add_examples();
    RandomInput(rng, o, e->mutable_input());
    e->set_label(absl::StrCat("label", i % o.labels));
  }
  if (auto r = client.Adapt({adapt}); !r.ok()) return r.status();
  // A kind with a compile step solves its weights or applies its pending examples; the
  // others answer FAILED_PRECONDITION and predict from their current state.
  adapt::v1::CompileRequest compile;
  compile.set_tenant(s.tenant);
  compile.set_store(s.store);
  if (auto r = client.Compile(compile);
      !r.ok() && r.status().code() != absl::StatusCode::kFailedPrecondition) {
    return r.status();
  }
  return absl::OkStatus();
}

// Channels of their own (separate connections), with the client's credentials, each connected
// before it is returned: a connection that fails to come up is an error of the bench, not a
// burst of failed calls inside the timed phase.
absl::StatusOr<std::vector<std::unique_ptr<adapt::v1::Adaptation::Stub>>> MakeStubs(
    const GlobalOptions& globals, int count, absl::Duration timeout) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!globals.tls_ca.empty()) {
    std::ifstream file(globals.tls_ca);
    std::stringstream pem;
    pem << file.rdbuf();
    if (!file) return absl::NotFoundError(absl::StrCat("--tls-ca: cannot read ", globals.tls_ca));
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
  }
  std::vector<std::unique_ptr<adapt::v1::Adaptation::Stub>> stubs;
  for (int i = 0; i < count; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(globals.addr, credentials, args);
    if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
      return absl::UnavailableError(absl::StrCat("bench: connection ", i + 1, " of ", count, " to ",
                                                 globals.addr, " did not come up within ",
                                                 absl::FormatDuration(timeout)));
    }
    stubs.push_back(adapt::v1::Adaptation::NewStub(channel));
  }
  return stubs;
}

absl::Status RunBench(BenchOptions o, GlobalOptions globals) {
  if (!o.address.empty()) globals.addr = o.address;
  if (absl::StatusOr<adapt::v1::StoreKind> kind = ParseStoreKind(o.kind); !kind.ok()) {
    return UsageError(kind.status().message());
  }
  if (!o.texts_path.empty()) {
    absl::StatusOr<std::vector<std::string>> texts = ReadTexts(o.texts_path);
    if (!texts.ok()) return UsageError(texts.status().message());
    o.texts = *std::move(texts);
  }
  absl::StatusOr<std::unique_ptr<adaptd::Client>> client = ConnectClient(globals);
  if (!client.ok()) return client.status();
  if (o.existing.empty()) {
    if (absl::Status s = CheckEncoder(**client, o); !s.ok()) return s;
  }
  const absl::Duration timeout =
      globals.timeout_seconds > 0 ? absl::Seconds(globals.timeout_seconds) : absl::Seconds(30);

  const bool own = o.existing.empty();
  std::vector<BenchStore> stores;
  if (own) {
    const std::string run = absl::StrCat(getpid(), "-", absl::ToUnixMicros(absl::Now()) % 1000000);
    for (int j = 0; j < o.stores; ++j) {
      stores.push_back({absl::StrCat("bench", j % o.tenants), absl::StrCat("s", j, "-", run)});
    }
  } else {
    for (const std::string& name : o.existing) {
      absl::StatusOr<StoreRef> ref = ParseStoreRef(name);
      if (!ref.ok()) return UsageError(absl::StrCat("--store: ", ref.status().message()));
      stores.push_back({ref->tenant, ref->store});
    }
  }
  const int store_count = static_cast<int>(stores.size());
  constexpr int setup_threads = 8;
  absl::Status setup =
      own ? ParallelFor(store_count, setup_threads,
                        [&](int j) { return FillStore(**client, o, stores[j], 1000 + j); })
          : absl::OkStatus();
  auto cleanup = [&] {
    if (!own) return absl::OkStatus();
    return ParallelFor(store_count, setup_threads, [&](int j) {
      absl::Status s = (*client)->DeleteStore(stores[j].tenant, stores[j].store);
      return s.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : s;
    });
  };
  if (!setup.ok()) {
    cleanup().IgnoreError();
    return setup;
  }

  const int channel_count = std::min(o.concurrency, 8);
  auto stubs = MakeStubs(globals, channel_count, timeout);
  if (!stubs.ok()) {
    cleanup().IgnoreError();
    return stubs.status();
  }
  std::vector<std::unique_ptr<adaptd::Client>> clients;
  for (int i = 0; o.via_client && i < channel_count; ++i) {
    absl::StatusOr<std::unique_ptr<adaptd::Client>> one = ConnectClient(globals);
    if (!one.ok()) {
      cleanup().IgnoreError();
      return one.status();
    }
    clients.push_back(*std::move(one));
  }
  // Each client cycles through a few prepared requests and through every store.
  constexpr int kPool = 8;
  std::vector<std::vector<adapt::v1::PredictRequest>> pools(o.concurrency);
  for (int t = 0; t < o.concurrency; ++t) {
    std::mt19937 rng(7 + t);
    for (int k = 0; k < kPool; ++k) {
      adapt::v1::PredictRequest r;
      r.set_top_k(1);
      for (int b = 0; b < o.inputs_per_request; ++b) RandomInput(rng, o, r.add_inputs());
      pools[t].push_back(std::move(r));
    }
  }
  // A call waits for its connection (within its deadline) rather than failing at once: should
  // a connection drop, the clients on it pause instead of spinning through failed calls that
  // take the CPU from the server being measured. Such calls still count as errors if their
  // deadline passes.
  auto prepare = [&](grpc::ClientContext& context) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    context.set_wait_for_ready(true);
    if (!globals.token.empty()) context.AddMetadata("authorization", "Bearer " + globals.token);
  };
  absl::Mutex error_mu;
  std::string first_error;
  auto note_status = [&](const absl::Status& status) {
    absl::MutexLock lock(&error_mu);
    if (first_error.empty()) {
      first_error = absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
    }
  };
  auto note = [&](const grpc::Status& status) { note_status(adaptd::FromGrpcStatus(status)); };
  const absl::Duration duration = absl::Seconds(o.duration);
  const LoadSummary predict = RunLoad(o.concurrency, duration, [&](int t, uint64_t n) {
    adapt::v1::PredictRequest& request = pools[t][n % kPool];
    const BenchStore& s = stores[(t + n * o.concurrency) % store_count];
    request.set_tenant(s.tenant);
    request.set_store(s.store);
    if (!clients.empty()) {
      absl::Status status = clients[t % channel_count]->Predict(request).status();
      if (!status.ok()) note_status(status);
      return status.ok();
    }
    grpc::ClientContext context;
    prepare(context);
    adapt::v1::PredictResponse response;
    const grpc::Status status = (*stubs)[t % channel_count]->Predict(&context, request, &response);
    if (!status.ok()) note(status);
    return status.ok();
  });
  // Adapt: each client streams one message of --adapt-examples examples per call, cycling
  // through the stores like the predicts (into --store's stores too when asked).
  LoadSummary adapt;
  if (o.adapt_examples > 0) {
    std::vector<std::vector<adapt::v1::AdaptRequest>> writes(o.concurrency);
    for (int t = 0; t < o.concurrency; ++t) {
      std::mt19937 rng(1007 + t);
      for (int k = 0; k < kPool; ++k) {
        adapt::v1::AdaptRequest r;
        for (int i = 0; i < o.adapt_examples; ++i) {
          adapt::v1::Example* e = r.add_examples();
          RandomInput(rng, o, e->mutable_input());
          e->set_label(absl::StrCat("label", (k + i) % o.labels));
        }
        writes[t].push_back(std::move(r));
      }
    }
    adapt = RunLoad(o.concurrency, duration, [&](int t, uint64_t n) {
      adapt::v1::AdaptRequest& request = writes[t][n % kPool];
      const BenchStore& s = stores[(t + n * o.concurrency) % store_count];
      request.set_tenant(s.tenant);
      request.set_store(s.store);
      if (!clients.empty()) {
        absl::Status status = clients[t % channel_count]->Adapt({request}).status();
        if (!status.ok()) note_status(status);
        return status.ok();
      }
      grpc::ClientContext context;
      prepare(context);
      adapt::v1::AdaptResponse response;
      auto writer = (*stubs)[t % channel_count]->Adapt(&context, &response);
      writer->Write(request);
      writer->WritesDone();
      const grpc::Status status = writer->Finish();
      if (!status.ok()) note(status);
      return status.ok();
    });
  }
  const LoadSummary ping = RunLoad(o.concurrency, duration, [&](int t, uint64_t) {
    grpc::ClientContext context;
    prepare(context);
    adapt::v1::PingRequest request;
    adapt::v1::PingResponse response;
    const grpc::Status status = (*stubs)[t % channel_count]->Ping(&context, request, &response);
    if (!status.ok()) note(status);
    return status.ok();
  });
  const absl::Status cleaned = cleanup();

  Json summary = {
      {"kind", o.kind},
      {"concurrency", o.concurrency},
      {"tenants", o.tenants},
      {"stores", store_count},
      {"dim", o.dim},
      {"encoder", o.encoder},
      {"inputs", o.texts.empty() ? "vector" : "text"},
      {"texts", static_cast<int>(o.texts.size())},
      {"labels", o.labels},
      {"inputs_per_request", o.inputs_per_request},
      {"duration_s", predict.seconds},
      {"calls", predict.calls},
      {"throughput", predict.throughput},
      {"p50_ms", predict.p50_ms},
      {"p90_ms", predict.p90_ms},
      {"p99_ms", predict.p99_ms},
      {"errors", predict.errors},
      {"noop_throughput", ping.throughput},
      {"noop_p50_ms", ping.p50_ms},
      {"noop_p99_ms", ping.p99_ms},
      {"noop_errors", ping.errors},
      {"ratio_to_noop", ping.throughput > 0 ? predict.throughput / ping.throughput : 0}};
  if (!clients.empty()) summary["via_client_routing"] = clients.front()->routing();
  if (o.adapt_examples > 0) {
    summary["adapt_examples"] = o.adapt_examples;
    summary["adapt_calls"] = adapt.calls;
    summary["adapt_throughput"] = adapt.throughput;
    summary["adapt_examples_per_s"] = adapt.throughput * o.adapt_examples;
    summary["adapt_p50_ms"] = adapt.p50_ms;
    summary["adapt_p99_ms"] = adapt.p99_ms;
    summary["adapt_errors"] = adapt.errors;
  }
  if (!first_error.empty()) summary["first_error"] = first_error;
  PrintSummary(summary);
  return cleaned;
}

}  // namespace

void AddBenchCommand(CLI::App& app, Action* action) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand(
      "bench",
      "Load generator: create and fill stores, drive Predict (then the no-op Ping) from "
      "concurrent clients, print one JSON line, delete the stores");
  bench->add_option("--concurrency", options->concurrency, "Concurrent clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  bench->add_option("--tenants", options->tenants, "Tenants the stores are spread over")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  bench->add_option("--stores", options->stores, "Stores created and queried")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  bench
      ->add_option("--kind", options->kind,
                   absl::StrCat("Store kind: ", absl::StrJoin(StoreKindNames(), ", ")))
      ->capture_default_str();
  bench
      ->add_option("--set", options->settings,
                   "KEY=VALUE for every store's spec, as in `store create` (e.g. variant=1 "
                   "for falcon); repeatable")
      ->type_name("KEY=VALUE");
  bench->add_option("--dim", options->dim, "Key dimension of the vectors sent (without --texts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  bench
      ->add_option("--encoder", options->encoder,
                   "The stores' encoder (one the server lists in `adaptctl encoders`); a text "
                   "encoder needs --texts")
      ->capture_default_str();
  bench
      ->add_option("--texts", options->texts_path,
                   "FILE of texts, one per line: examples and predict inputs are its lines, "
                   "drawn at random, through --encoder")
      ->type_name("FILE");
  bench->add_option("--labels", options->labels, "Labels per store")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  bench->add_option("--inputs-per-request", options->inputs_per_request, "Inputs in each Predict")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  bench
      ->add_option("--duration", options->duration,
                   "SECONDS of predict load, then as many of Ping load")
      ->capture_default_str()
      ->check(Positive(/*integer=*/false));
  bench
      ->add_option("--examples", options->examples,
                   "Examples adapted into each store [default max(4 × labels, 64)]")
      ->check(CLI::Range(1, 1000000));
  bench
      ->add_option("--adapt-examples", options->adapt_examples,
                   "N > 0: after the predicts, SECONDS of Adapt load too, each call one message "
                   "of N examples into the bench's stores, --store's too (adapt_* in the "
                   "summary)")
      ->check(CLI::Range(1, 100000));
  bench
      ->add_option("--store", options->existing,
                   "An existing store to query instead of creating any (repeatable): nothing "
                   "is created, filled or deleted; --dim must be the stores' dimension")
      ->type_name("TENANT/STORE");
  bench->add_flag("--via-client", options->via_client,
                  "Drive Predict and Adapt through the C++ client (adaptd::Client), which in a "
                  "cluster on etcd calls each store's holder (unless --no-route), instead of "
                  "raw stubs on the address");
  bench->add_option("--address", options->address, "Server address HOST:PORT (same as --addr)")
      ->type_name("HOST:PORT");
  bench->callback([options, action] {
    *action = [options](const GlobalOptions& globals) { return RunBench(*options, globals); };
  });
}

}  // namespace adaptctl
