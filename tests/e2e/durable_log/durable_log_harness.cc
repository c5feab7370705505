#include "tests/e2e/durable_log/durable_log_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "server/stores/snapshot_file.h"

extern char** environ;

namespace adaptd::durable_log_test {
namespace {

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

Call MakeCall(std::mt19937* rng, int dim, int n, const std::string& prefix, uint64_t* seq) {
  static const float kValues[] = {-2.f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 2.f};
  Call call;
  for (int e = 0; e < n; ++e) {
    adapt::v1::Example ex;
    auto* values = ex.mutable_input()->mutable_vector()->mutable_values();
    for (int i = 0; i < dim; ++i) values->Add(kValues[(*rng)() % 7]);
    ex.set_label("label" + std::to_string((*rng)() % 3));
    ex.set_id(prefix + "-" + std::to_string((*seq)++));
    call.examples.push_back(std::move(ex));
  }
  return call;
}

void FaastModel::Add(const Call& call) {
  for (const auto& ex : call.examples) {
    const auto& x = ex.input().vector().values();
    for (int i = 0; i < dim; ++i) {
      for (int j = 0; j < dim; ++j) g[i * dim + j] += double{x[i]} * double{x[j]};
    }
    std::vector<double>& column = c[ex.label()];
    column.resize(dim, 0.0);
    for (int i = 0; i < dim; ++i) column[i] += x[i];
  }
  examples += call.examples.size();
}

Adaptd::Adaptd(std::string binary, std::string data_dir, std::string log,
               std::vector<std::string> flags)
    : binary_(std::move(binary)),
      data_dir_(std::move(data_dir)),
      log_(std::move(log)),
      flags_(std::move(flags)) {}

void Adaptd::Start() {
  // A restart keeps the address (as a pod keeps its name), and the flags may name it.
  if (address_.empty()) address_ = "127.0.0.1:" + std::to_string(FreePort());
  std::vector<std::string> args;
  const std::string setpriv = "/usr/bin/setpriv";
  if (::access(setpriv.c_str(), X_OK) == 0) args = {setpriv, "--pdeathsig", "KILL"};
  for (const std::string& a :
       {binary_, std::string("--listen"), address_, std::string("--metrics-listen"),
        std::string("off"), std::string("--data-dir"), data_dir_, std::string("--workers"),
        std::string("2")}) {
    args.push_back(a);
  }
  for (const std::string& flag : flags_) args.push_back(flag == kAddressFlag ? address_ : flag);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  ASSERT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  // Reconnect quickly while the server starts (the default backoff starts at 1 s).
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  channel_args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  channel_args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  // Started again, it keeps its channel and stub (callers may hold the stub).
  if (stub_ == nullptr) {
    channel_ =
        grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), channel_args);
    stub_ = adapt::v1::Adaptation::NewStub(channel_);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    adapt::v1::ListStoresRequest request;
    request.set_tenant(kTenant);
    adapt::v1::ListStoresResponse response;
    if (stub_->ListStores(&ctx, request, &response).ok()) return;
    int status = 0;
    ASSERT_EQ(::waitpid(pid_, &status, WNOHANG), 0) << "adaptd exited at start; see " << log_;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "adaptd did not answer within 60 s; see " << log_;
}

int Adaptd::Kill(int signal) {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGCONT);  // a stopped process takes SIGTERM only once it runs
  ::kill(pid_, signal);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = 0;
  return status;
}

int Adaptd::WaitExit(std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (pid_ > 0) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      return status;
    }
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

void Adaptd::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::unique_ptr<grpc::ClientContext> Context(int seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

grpc::Status SendAdapt(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                       const Call& call, adapt::v1::AdaptResponse* response, bool one_message) {
  auto ctx = Context(20);
  auto writer = stub->Adapt(ctx.get(), response);
  const size_t n = call.examples.size();
  const size_t split = n > 2 && !one_message ? n / 2 : n;
  for (size_t start = 0; start < n; start = split) {
    adapt::v1::AdaptRequest request;
    if (start == 0) {
      request.set_tenant(kTenant);
      request.set_store(store);
    }
    const size_t end = start == 0 ? split : n;
    for (size_t i = start; i < end; ++i) *request.add_examples() = call.examples[i];
    if (!writer->Write(request) || end == n) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

void SendNew(adapt::v1::Adaptation::Stub* stub, const std::string& store, const Call& call,
             FaastModel* model, bool one_message) {
  adapt::v1::AdaptResponse response;
  const grpc::Status status = SendAdapt(stub, store, call, &response, one_message);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.accepted(), call.examples.size());
  EXPECT_EQ(response.duplicates(), 0u) << "examples of the call were applied before";
  model->Add(call);
}

void CreateFaastStore(adapt::v1::Adaptation::Stub* stub, const std::string& store, int dim) {
  adapt::v1::CreateStoreRequest request;
  request.set_tenant(kTenant);
  request.set_store(store);
  request.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  request.mutable_spec()->set_dim(dim);
  // Retried while UNAVAILABLE (in a cluster, while the store's shard has no holder yet); a
  // retry may find the store the previous try created.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (bool retry = false;; retry = true) {
    adapt::v1::StoreInfo info;
    const grpc::Status status = stub->CreateStore(Context(20).get(), request, &info);
    if (status.ok() || (retry && status.error_code() == grpc::StatusCode::ALREADY_EXISTS)) return;
    ASSERT_TRUE(status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                std::chrono::steady_clock::now() < deadline)
        << status.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

adapt::v1::StoreInfo Info(adapt::v1::Adaptation::Stub* stub, const std::string& store) {
  adapt::v1::GetStoreRequest get;
  get.set_tenant(kTenant);
  get.set_store(store);
  adapt::v1::StoreInfo info;
  const grpc::Status status = stub->GetStore(Context(20).get(), get, &info);
  EXPECT_TRUE(status.ok()) << store << ": " << status.error_message();
  return info;
}

void ExpectStatistics(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                      const FaastModel& model) {
  SCOPED_TRACE("store " + store);
  const adapt::v1::StoreInfo info = Info(stub, store);
  EXPECT_TRUE(info.failure().empty()) << info.failure();
  EXPECT_EQ(info.examples(), model.examples);
  adapt::v1::ExportStoreRequest request;
  request.set_tenant(kTenant);
  request.set_store(store);
  auto ctx = Context(30);
  auto reader = stub->ExportStore(ctx.get(), request);
  std::string file;
  adapt::v1::StoreChunk chunk;
  while (reader->Read(&chunk)) file += chunk.data();
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  absl::StatusOr<adapt::v1::StoreSnapshot> snapshot = DecodeSnapshotFile(file);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  const auto& state = snapshot->faast();
  ASSERT_EQ(state.examples(), model.examples);
  if (model.examples == 0) return;
  const int dim = model.dim;
  ASSERT_EQ(state.g_upper_size(), dim * (dim + 1) / 2);  // G's upper triangle, by rows
  int k = 0;
  int wrong = 0;
  for (int i = 0; i < dim; ++i) {
    for (int j = i; j < dim; ++j) {
      if (state.g_upper(k++) != model.g[i * dim + j] && wrong++ < 8) {
        ADD_FAILURE() << "G[" << i << "][" << j << "] " << state.g_upper(k - 1)
                      << " != " << model.g[i * dim + j];
      }
    }
  }
  ASSERT_EQ(static_cast<size_t>(state.labels_size()), model.c.size());
  for (int col = 0; col < state.labels_size(); ++col) {
    const std::vector<double>& expected = model.c.at(state.labels(col));
    for (int i = 0; i < dim; ++i) {
      EXPECT_EQ(state.c(i * state.columns() + col), expected[i]) << state.labels(col) << " " << i;
    }
  }
}

int ResendUnknown(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                  const std::vector<Call>& calls, FaastModel* model) {
  const uint64_t before = Info(stub, store).examples();
  const uint64_t acked = model->examples;
  uint64_t applied_examples = 0;
  int applied = 0;
  for (const Call& call : calls) {
    adapt::v1::AdaptResponse response;
    grpc::Status status;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    do {
      response.Clear();
      status = SendAdapt(stub, store, call, &response);
      if (!status.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (!status.ok() && std::chrono::steady_clock::now() < deadline);
    EXPECT_TRUE(status.ok()) << "a resend: " << status.error_message();
    if (!status.ok()) continue;
    const uint64_t n = call.examples.size();
    EXPECT_TRUE(response.duplicates() == 0 || response.duplicates() == n)
        << "a call was half-applied: " << response.duplicates() << " of " << n;
    EXPECT_EQ(response.accepted(), n);
    model->Add(call);
    if (response.duplicates() == n) {
      ++applied;
      applied_examples += n;
    }
  }
  EXPECT_EQ(before, acked + applied_examples)
      << "the examples before the resend are the acknowledged ones and those of the calls the "
         "server reports as applied";
  return applied;
}

Writers::Writers(adapt::v1::Adaptation::Stub* stub, std::string store, FaastModel* model,
                 int threads, uint32_t seed)
    : stub_(stub), store_(std::move(store)), model_(model) {
  for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t, seed] { Run(t, seed); });
}

void Writers::Run(int thread, uint32_t seed) {
  std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(thread));
  const std::string prefix = store_ + "-s" + std::to_string(seed) + "-w" + std::to_string(thread);
  uint64_t seq = 0;
  while (!stop_.load()) {
    Call call = MakeCall(&rng, model_->dim, 2 + static_cast<int>(rng() % 4), prefix, &seq);
    adapt::v1::AdaptResponse response;
    const grpc::Status status = SendAdapt(stub_, store_, call, &response);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status.ok()) {
        model_->Add(call);
        acked_.fetch_add(1);
        continue;
      }
      unknown_.push_back(std::move(call));
      ++codes_[status.error_code()];
      failed_.fetch_add(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // no busy loop while down
  }
}

bool Writers::WaitForAcks(uint64_t more, std::chrono::seconds limit) {
  const uint64_t target = acked_.load() + more;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (acked_.load() < target) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

void Writers::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace adaptd::durable_log_test
