// Crash test: the real adaptd binary, killed with SIGKILL at random moments while several
// clients stream Adapt calls, must come back with every acknowledged example applied once and
// no call half-applied.
//
// Each round starts adaptd on a fresh port over the same data directory, resends the calls
// whose outcome the kill left unknown (same example ids: the server must report all or none
// of each as duplicates, and its example counts before the resend must be the acknowledged
// ones plus exactly those calls), checks its state against a model of the acknowledged and
// resent calls, then streams from three faast writers and one falcon writer until a SIGKILL at
// a random moment. The faast model is G = Σ x xᵀ and C = Σ x yᵀ in float64 over keys with
// exactly representable sums, so the exported statistics must match exactly; the falcon model
// is an in-process store fed the same calls in the same order, compared through Predict.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "adapt/v1/adapt.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/etcd/testing/etcd_cluster.h"
#include "server/objstore/s3_object_store.h"
#include "server/objstore/testing/seaweedfs.h"
#include "server/stores/snapshot_file.h"
#include "server/stores/store_factory.h"

extern char** environ;

namespace adaptd {
namespace {

namespace fs = std::filesystem;
using adapt::v1::Adaptation;

constexpr int kDim = 4;
constexpr int kFaastWriters = 3;
constexpr char kTenant[] = "crash";

int Rounds() {
  const char* env = std::getenv("ADAPTD_CRASH_ROUNDS");
  return env != nullptr ? std::atoi(env) : 50;
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// One Adapt call: its examples (keys of kDim floats; a label or a 2-vector target, and an id).
struct Call {
  std::vector<adapt::v1::Example> examples;
};

class Server {
 public:
  // `budget`: --memory-budget-bytes (0: none).
  // `extra`: more flags (the durable log's).
  Server(std::string binary, std::string data_dir, std::string log, uint64_t budget = 0,
         std::vector<std::string> extra = {})
      : binary_(std::move(binary)),
        data_dir_(std::move(data_dir)),
        log_(std::move(log)),
        budget_(budget),
        extra_(std::move(extra)) {}
  ~Server() { Kill(SIGKILL); }

  void Start() {
    address_ = "127.0.0.1:" + std::to_string(FreePort());
    std::vector<std::string> args;
    const char* setpriv = "/usr/bin/setpriv";
    if (::access(setpriv, X_OK) == 0) args = {setpriv, "--pdeathsig", "KILL"};
    for (const char* a : {"--listen"}) args.push_back(a);
    args.push_back(address_);
    for (const std::string& a :
         {std::string("--metrics-listen"), std::string("off"), std::string("--data-dir"), data_dir_,
          std::string("--snapshot-log-bytes"), std::string("16384"), std::string("--workers"),
          std::string("2")}) {
      args.push_back(a);
    }
    if (budget_ > 0) {
      args.push_back("--memory-budget-bytes");
      args.push_back(std::to_string(budget_));
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    args.insert(args.begin() + (args[0] == setpriv ? 3 : 0), binary_);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    ASSERT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    // Reconnect quickly while the server starts (the default backoff starts at 1 s).
    grpc::ChannelArguments channel_args;
    channel_args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
    channel_args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
    channel_args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
    channel_ =
        grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), channel_args);
    stub_ = Adaptation::NewStub(channel_);
    // Bounded wait until it answers.
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

  // Sends `signal` and reaps the process; returns its wait status.
  int Kill(int signal) {
    if (pid_ <= 0) return 0;
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    return status;
  }

  // Sends `signal` to one thread of the server other than its main one (the first started:
  // OpenBLAS's pool, where it has one) and waits up to `limit` for the exit. The exit status,
  // or -1 when it had not exited (it is killed then).
  int SignalThread(int signal, std::chrono::seconds limit) {
    pid_t thread = 0;
    for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid_) + "/task")) {
      const pid_t tid = std::stoi(task.path().filename().string());
      if (tid != pid_ && (thread == 0 || tid < thread)) thread = tid;
    }
    if (thread == 0 || ::syscall(SYS_tgkill, pid_, thread, signal) != 0) return -1;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Kill(SIGKILL);
    return -1;
  }

  Adaptation::Stub* stub() { return stub_.get(); }

 private:
  std::string binary_, data_dir_, log_, address_;
  uint64_t budget_ = 0;
  std::vector<std::string> extra_;
  pid_t pid_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Adaptation::Stub> stub_;
};

template <typename T>
std::unique_ptr<grpc::ClientContext> Context(T seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

grpc::Status SendAdapt(Adaptation::Stub* stub, const std::string& store, const Call& call,
                       adapt::v1::AdaptResponse* response) {
  auto ctx = Context(20);
  auto writer = stub->Adapt(ctx.get(), response);
  // Two messages per call when it has more than two examples: a call spans messages.
  const size_t split = call.examples.size() > 2 ? call.examples.size() / 2 : call.examples.size();
  for (size_t start = 0; start < call.examples.size(); start = split) {
    adapt::v1::AdaptRequest request;
    if (start == 0) {
      request.set_tenant(kTenant);
      request.set_store(store);
    }
    const size_t end = start == 0 ? split : call.examples.size();
    for (size_t i = start; i < end; ++i) *request.add_examples() = call.examples[i];
    if (!writer->Write(request)) break;
    if (end == call.examples.size()) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

// The acknowledged history and its float64 model, plus the calls whose outcome is unknown.
struct Ledger {
  std::mutex mu;
  std::vector<Call> unknown;  // in flight when the server died
  // faast: G (kDim × kDim) and C by label; falcon: the calls in their applied order.
  std::vector<double> g = std::vector<double>(kDim * kDim, 0.0);
  std::map<std::string, std::vector<double>> c;
  uint64_t faast_examples = 0;
  std::vector<Call> falcon_calls;
  uint64_t falcon_examples = 0;

  void AddFaast(const Call& call) {
    for (const auto& ex : call.examples) {
      const auto& x = ex.input().vector().values();
      for (int i = 0; i < kDim; ++i) {
        for (int j = 0; j < kDim; ++j) g[i * kDim + j] += double{x[i]} * double{x[j]};
      }
      auto& column = c[ex.label()];
      column.resize(kDim, 0.0);
      for (int i = 0; i < kDim; ++i) column[i] += x[i];
    }
    faast_examples += call.examples.size();
  }
};

Call MakeCall(std::mt19937* rng, const std::string& prefix, uint64_t* seq, bool falcon) {
  static const float kValues[] = {-2.f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 2.f};
  Call call;
  const int n = 2 + static_cast<int>((*rng)() % 4);
  for (int e = 0; e < n; ++e) {
    adapt::v1::Example ex;
    auto* values = ex.mutable_input()->mutable_vector()->mutable_values();
    for (int i = 0; i < kDim; ++i) values->Add(kValues[(*rng)() % 7]);
    if (falcon) {
      auto* target = ex.mutable_vector()->mutable_values();
      target->Add(values->Get(0) - values->Get(2));
      target->Add(0.5f * values->Get(1));
    } else {
      ex.set_label(std::string("label") + std::to_string((*rng)() % 3));
    }
    ex.set_id(prefix + "-" + std::to_string((*seq)++));
    call.examples.push_back(std::move(ex));
  }
  return call;
}

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("ADAPTD_BIN");
    ASSERT_NE(bin, nullptr) << "ADAPTD_BIN must name the adaptd binary";
    binary_ = bin;
    std::random_device rd;
    root_ = ::testing::TempDir() + "/adaptd-crash-" + std::to_string(rd());
    fs::create_directories(root_);
    backend_ = kernels::MakeCpuBackend();
  }
  void KillRounds(int rounds, const std::string& data, const std::string& log,
                  const std::vector<std::string>& extra, bool lose_disk);
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  void CreateStores(Adaptation::Stub* stub) {
    adapt::v1::CreateStoreRequest faast;
    faast.set_tenant(kTenant);
    faast.set_store("fa");
    faast.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
    faast.mutable_spec()->set_dim(kDim);
    adapt::v1::StoreInfo info;
    ASSERT_TRUE(stub->CreateStore(Context(20).get(), faast, &info).ok());
    adapt::v1::CreateStoreRequest falcon;
    falcon.set_tenant(kTenant);
    falcon.set_store("fl");
    falcon.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FALCON);
    falcon.mutable_spec()->set_dim(kDim);
    falcon.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    falcon.mutable_spec()->mutable_output()->set_dim(2);
    falcon.mutable_spec()->mutable_falcon()->set_variant(adapt::v1::FalconParams::VARIANT_1);
    auto status = stub->CreateStore(Context(20).get(), falcon, &info);
    ASSERT_TRUE(status.ok()) << status.error_message();
    auto reference = CreateStore(info.spec(), backend_.get());
    ASSERT_TRUE(reference.ok()) << reference.status();
    falcon_reference_ = *std::move(reference);
  }

  void ApplyToReference(const Call& call) {
    ExampleBatch batch;
    batch.rows = static_cast<int64_t>(call.examples.size());
    batch.dim = kDim;
    for (const auto& ex : call.examples) {
      for (float v : ex.input().vector().values()) batch.keys.push_back(v);
      for (float v : ex.vector().values()) batch.targets.push_back(v);
    }
    // The server stages a call's messages as separate batches of one transaction.
    const size_t split = call.examples.size() > 2 ? call.examples.size() / 2 : call.examples.size();
    auto txn = falcon_reference_->Begin(TxnKind::kAdapt);
    ExampleBatch first, second;
    for (ExampleBatch* part : {&first, &second}) part->dim = kDim;
    first.rows = static_cast<int64_t>(split);
    second.rows = batch.rows - first.rows;
    first.keys.assign(batch.keys.begin(), batch.keys.begin() + split * kDim);
    second.keys.assign(batch.keys.begin() + split * kDim, batch.keys.end());
    first.targets.assign(batch.targets.begin(), batch.targets.begin() + split * 2);
    second.targets.assign(batch.targets.begin() + split * 2, batch.targets.end());
    ASSERT_TRUE(txn->Add(first).ok());
    if (second.rows > 0) {
      ASSERT_TRUE(txn->Add(second).ok());
    }
    ASSERT_TRUE(falcon_reference_->Commit(*txn).ok());
  }

  adapt::v1::StoreInfo Info(Adaptation::Stub* stub, const std::string& store) {
    adapt::v1::GetStoreRequest get;
    get.set_tenant(kTenant);
    get.set_store(store);
    adapt::v1::StoreInfo info;
    EXPECT_TRUE(stub->GetStore(Context(20).get(), get, &info).ok());
    return info;
  }
  uint64_t Examples(Adaptation::Stub* stub, const std::string& store) {
    return Info(stub, store).examples();
  }

  // Resends the calls the last kill left unknown: each must be applied entirely or not at all,
  // and the examples the server held before the resend must be the acknowledged ones plus the
  // calls it reports as applied already.
  void ResendUnknown(Adaptation::Stub* stub) {
    const uint64_t faast_before = Examples(stub, "fa");
    const uint64_t falcon_before = Examples(stub, "fl");
    const uint64_t faast_acked = ledger_.faast_examples;
    const uint64_t falcon_acked = ledger_.falcon_examples;
    uint64_t faast_applied = 0, falcon_applied = 0;
    for (const auto& [store, call] : unknown_) {
      adapt::v1::AdaptResponse response;
      const grpc::Status status = SendAdapt(stub, store, call, &response);
      ASSERT_TRUE(status.ok()) << status.error_message();
      const uint64_t n = call.examples.size();
      ASSERT_TRUE(response.duplicates() == 0 || response.duplicates() == n)
          << "a call was half-applied: " << response.duplicates() << " of " << n;
      EXPECT_EQ(response.accepted(), n);
      if (store == "fa") {
        ledger_.AddFaast(call);
      } else {
        ledger_.falcon_calls.push_back(call);
        ledger_.falcon_examples += n;
        ApplyToReference(call);
      }
      ++resent_;
      if (response.duplicates() == n) {
        ++resent_applied_;
        (store == "fa" ? faast_applied : falcon_applied) += n;
      }
    }
    unknown_.clear();
    EXPECT_EQ(faast_before, faast_acked + faast_applied);
    EXPECT_EQ(falcon_before, falcon_acked + falcon_applied);
  }

  void CheckState(Adaptation::Stub* stub, int round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // faast: the exported statistics equal the model exactly.
    adapt::v1::ExportStoreRequest request;
    request.set_tenant(kTenant);
    request.set_store("fa");
    auto ctx = Context(20);
    auto reader = stub->ExportStore(ctx.get(), request);
    std::string file;
    adapt::v1::StoreChunk chunk;
    while (reader->Read(&chunk)) file += chunk.data();
    ASSERT_TRUE(reader->Finish().ok());
    auto snapshot = DecodeSnapshotFile(file);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    const auto& state = snapshot->faast();
    EXPECT_EQ(state.examples(), ledger_.faast_examples);
    if (ledger_.faast_examples > 0) {
      ASSERT_EQ(state.g_upper_size(), kDim * (kDim + 1) / 2);  // G's upper triangle, by rows
      int k = 0;
      for (int i = 0; i < kDim; ++i) {
        for (int j = i; j < kDim; ++j) {
          EXPECT_EQ(state.g_upper(k++), ledger_.g[i * kDim + j]) << "G[" << i << "][" << j << "]";
        }
      }
      ASSERT_EQ(static_cast<size_t>(state.labels_size()), ledger_.c.size());
      for (int col = 0; col < state.labels_size(); ++col) {
        const auto& expected = ledger_.c[state.labels(col)];
        for (int i = 0; i < kDim; ++i) {
          EXPECT_EQ(state.c(i * state.columns() + col), expected[i]) << state.labels(col);
        }
      }
    }
    // falcon: the version's step count and its predictions equal the reference's.
    adapt::v1::GetStoreRequest get;
    get.set_tenant(kTenant);
    get.set_store("fl");
    adapt::v1::StoreInfo info;
    ASSERT_TRUE(stub->GetStore(Context(20).get(), get, &info).ok());
    EXPECT_TRUE(info.failure().empty()) << info.failure();
    EXPECT_EQ(info.examples(), ledger_.falcon_examples);
    if (ledger_.falcon_examples == 0) return;
    adapt::v1::PredictRequest predict;
    predict.set_tenant(kTenant);
    predict.set_store("fl");
    std::vector<float> probes;
    for (int p = 0; p < 3; ++p) {
      auto* values = predict.add_inputs()->mutable_vector()->mutable_values();
      for (int i = 0; i < kDim; ++i) {
        values->Add(0.25f * static_cast<float>((p + 1) * (i % 2 ? -1 : 1) + i));
        probes.push_back(values->Get(i));
      }
    }
    adapt::v1::PredictResponse got;
    ASSERT_TRUE(stub->Predict(Context(20).get(), predict, &got).ok());
    auto expected = falcon_reference_->Predict(probes.data(), 3, kDim, 1);
    ASSERT_TRUE(expected.ok());
    ASSERT_EQ(got.predictions_size(), 3);
    for (int p = 0; p < 3; ++p) {
      ASSERT_EQ(got.predictions(p).vector_size(), 2);
      for (int j = 0; j < 2; ++j) {
        EXPECT_NEAR(got.predictions(p).vector(j), expected->vectors[p * 2 + j], 1e-5);
      }
    }
  }

  // Streams until `stop`; acknowledged calls go into the ledger, the call that failed into
  // the unknown list.
  void Writer(Adaptation::Stub* stub, const std::string& store, int writer,
              std::atomic<bool>* stop) {
    std::mt19937 rng(static_cast<uint32_t>(writer * 7919 + round_ * 104729));
    while (!stop->load()) {
      Call call =
          MakeCall(&rng, store + "-w" + std::to_string(writer), &seq_[writer], store == "fl");
      adapt::v1::AdaptResponse response;
      const grpc::Status status = SendAdapt(stub, store, call, &response);
      std::lock_guard<std::mutex> lock(ledger_.mu);
      if (!status.ok()) {
        unknown_.emplace_back(store, std::move(call));
        return;
      }
      ++acked_;
      if (store == "fa") {
        ledger_.AddFaast(call);
      } else {
        ledger_.falcon_calls.push_back(call);
        ledger_.falcon_examples += call.examples.size();
        ApplyToReference(call);
      }
    }
  }

  std::string binary_, root_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<Store> falcon_reference_;
  Ledger ledger_;
  std::vector<std::pair<std::string, Call>> unknown_;
  uint64_t seq_[kFaastWriters + 1] = {};
  int round_ = 0;
  uint64_t acked_ = 0, resent_ = 0, resent_applied_ = 0;
};

// Rounds of start, check, stream and SIGKILL over `data` (emptied before each start when
// `lose_disk`), with `extra` flags.
void CrashTest::KillRounds(int rounds, const std::string& data, const std::string& log,
                           const std::vector<std::string>& extra, bool lose_disk) {
  std::mt19937 rng(20261129);
  // From the third round on, the server runs under a memory budget that holds either store but
  // not both, so stores are evicted (written to the state database first) and loaded again
  // while the kills land. The budget is measured in the second round, once both stores have
  // seen their labels: it leaves the larger store three quarters of the smaller one to grow.
  uint64_t budget = 0;
  for (round_ = 0; round_ < rounds; ++round_) {
    if (lose_disk) fs::remove_all(data);
    Server server(binary_, data, log, budget, extra);
    ASSERT_NO_FATAL_FAILURE(server.Start());
    if (round_ == 0) {
      ASSERT_NO_FATAL_FAILURE(CreateStores(server.stub()));
    }
    if (round_ == 1) {
      const uint64_t fa = Info(server.stub(), "fa").memory_bytes();
      const uint64_t fl = Info(server.stub(), "fl").memory_bytes();
      budget = fa + fl - std::min(fa, fl) / 4;
    }
    ASSERT_NO_FATAL_FAILURE(ResendUnknown(server.stub()));
    ASSERT_NO_FATAL_FAILURE(CheckState(server.stub(), round_));
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 0; w < kFaastWriters; ++w) {
      writers.emplace_back([&, w] { Writer(server.stub(), "fa", w, &stop); });
    }
    writers.emplace_back([&] { Writer(server.stub(), "fl", kFaastWriters, &stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + rng() % 400));
    server.Kill(SIGKILL);
    stop = true;
    for (auto& t : writers) t.join();
  }
}

// A stop signal is process-directed: the kernel hands it to any thread that does not block
// it, and threads started before main (OpenBLAS's pool) block nothing. Taken by a thread other
// than the main one, SIGTERM still stops adaptd in order (exit 0).
TEST_F(CrashTest, AStopSignalTakenByAnyThreadStopsInOrder) {
  Server server(binary_, root_ + "/data", root_ + "/adaptd.log");
  ASSERT_NO_FATAL_FAILURE(server.Start());
  const int status = server.SignalThread(SIGTERM, std::chrono::seconds(30));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST_F(CrashTest, AcknowledgedExamplesSurviveSigkill) {
  const std::string data = root_ + "/data";
  const std::string log = root_ + "/adaptd.log";
  const int rounds = Rounds();
  ASSERT_NO_FATAL_FAILURE(KillRounds(rounds, data, log, {}, /*lose_disk=*/false));
  // A last start checks the final kill, then a graceful stop flushes snapshots and the log.
  Server server(binary_, data, log);
  ASSERT_NO_FATAL_FAILURE(server.Start());
  ASSERT_NO_FATAL_FAILURE(ResendUnknown(server.stub()));
  ASSERT_NO_FATAL_FAILURE(CheckState(server.stub(), rounds));
  const int status = server.Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  for (const auto& segment : fs::directory_iterator(data + "/wal")) {
    EXPECT_EQ(fs::file_size(segment.path()), 0u) << segment.path() << " after a graceful stop";
  }
  Server again(binary_, data, log);
  ASSERT_NO_FATAL_FAILURE(again.Start());
  ASSERT_NO_FATAL_FAILURE(CheckState(again.stub(), rounds + 1));
  EXPECT_GT(acked_, uint64_t(rounds));  // the rounds did stream
  std::printf(
      "rounds %d, acknowledged calls %llu, unknown calls resent %llu (applied before "
      "the kill: %llu)\n",
      rounds, static_cast<unsigned long long>(acked_), static_cast<unsigned long long>(resent_),
      static_cast<unsigned long long>(resent_applied_));
}

// The same with the durable log in etcd (3 members) and states in object storage (SeaweedFS),
// and the disk lost at every kill: each round starts on an empty data directory, so every
// acknowledged example comes back from etcd and the bucket alone (docs/DURABLE_LOG.md).
TEST_F(CrashTest, AcknowledgedExamplesSurviveSigkillAndALostDiskOnEtcd) {
  absl::StatusOr<std::unique_ptr<etcd::testing::EtcdCluster>> cluster =
      etcd::testing::EtcdCluster::Start(etcd::testing::EtcdClusterOptions());
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<testing_util::SeaweedFs>> s3 = testing_util::SeaweedFs::Create();
  ASSERT_TRUE(s3.ok()) << s3.status();
  setenv("AWS_ACCESS_KEY_ID", (*s3)->access_key().c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", (*s3)->secret_key().c_str(), 1);
  S3Options bucket;
  bucket.url = "s3://adaptd-crash";
  bucket.endpoint = (*s3)->endpoint();
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> objects = S3ObjectStore::OpenUnchecked(bucket);
  ASSERT_TRUE(objects.ok()) << objects.status();
  ASSERT_TRUE((*objects)->CreateBucket().ok());
  std::string endpoints;
  for (const std::string& e : (*cluster)->endpoints()) {
    endpoints += (endpoints.empty() ? "" : ",") + e;
  }
  const std::vector<std::string> extra = {
      "--etcd-endpoints",        endpoints,       "--etcd-lease-ttl", "1", "--snapshot-store",
      "s3://adaptd-crash/crash", "--s3-endpoint", (*s3)->endpoint()};
  const std::string data = root_ + "/cache";
  const std::string log = root_ + "/adaptd-etcd.log";
  const char* env = std::getenv("ADAPTD_CRASH_ETCD_ROUNDS");
  const int rounds = env != nullptr ? std::atoi(env) : 8;
  ASSERT_NO_FATAL_FAILURE(KillRounds(rounds, data, log, extra, /*lose_disk=*/true));
  // A last start on an empty disk checks the final kill; a graceful stop, and another.
  fs::remove_all(data);
  Server server(binary_, data, log, 0, extra);
  ASSERT_NO_FATAL_FAILURE(server.Start());
  ASSERT_NO_FATAL_FAILURE(ResendUnknown(server.stub()));
  ASSERT_NO_FATAL_FAILURE(CheckState(server.stub(), rounds));
  const int status = server.Kill(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  fs::remove_all(data);
  Server again(binary_, data, log, 0, extra);
  ASSERT_NO_FATAL_FAILURE(again.Start());
  ASSERT_NO_FATAL_FAILURE(CheckState(again.stub(), rounds + 1));
  EXPECT_GT(acked_, uint64_t(rounds));
  std::printf("etcd: rounds %d, acknowledged calls %llu, unknown calls resent %llu\n", rounds,
              static_cast<unsigned long long>(acked_), static_cast<unsigned long long>(resent_));
}

}  // namespace
}  // namespace adaptd
