// What the durable log's fault tests share (docs/DURABLE_LOG.md): adaptd as a child process on
// the durable log in etcd and object storage; Adapt calls whose examples carry ids and keys
// with exactly representable float64 sums; the model of a faast store's acknowledged examples
// (G = Σ x xᵀ and C = Σ x by label, in float64) that its exported statistics must equal
// exactly; and writer threads that record which calls were acknowledged and which were not.
// An Adaptd and a Writers are driven by one test thread; a FaastModel is not thread-safe (the
// writers lock around it).
#ifndef ADAPTD_TESTS_E2E_DURABLE_LOG_DURABLE_LOG_HARNESS_H_
#define ADAPTD_TESTS_E2E_DURABLE_LOG_DURABLE_LOG_HARNESS_H_

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adapt/v1/adapt.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace adaptd::durable_log_test {

inline constexpr char kTenant[] = "faults";

// One Adapt call: its examples, each with a key of the store's dim, a label and an id.
struct Call {
  std::vector<adapt::v1::Example> examples;
};

// `n` examples of `dim` values from {-2, -1, -0.5, 0, 0.5, 1, 2}, labelled label0..2, with ids
// PREFIX-SEQ (`*seq` advances).
Call MakeCall(std::mt19937* rng, int dim, int n, const std::string& prefix, uint64_t* seq);

// A faast store's acknowledged examples in float64.
struct FaastModel {
  explicit FaastModel(int dim) : dim(dim), g(static_cast<size_t>(dim) * dim, 0.0) {}
  void Add(const Call& call);

  int dim;
  std::vector<double> g;                         // dim × dim
  std::map<std::string, std::vector<double>> c;  // Σ x by label
  uint64_t examples = 0;
};

// In an Adaptd's flags, the address it listens at.
inline constexpr char kAddressFlag[] = "{address}";

// adaptd on a free loopback port (the same one again when started again) with `flags` after
// the common ones, kAddressFlag replaced by its address; its output appended to `log`. The
// destructor kills it (SIGKILL).
class Adaptd {
 public:
  Adaptd(std::string binary, std::string data_dir, std::string log, std::vector<std::string> flags);
  ~Adaptd() { Kill(SIGKILL); }
  Adaptd(const Adaptd&) = delete;
  Adaptd& operator=(const Adaptd&) = delete;

  // Starts it and waits (60 s at most) until it answers ListStores; gtest failures otherwise.
  void Start();
  // Sends `signal` and reaps the process; its wait status.
  int Kill(int signal);
  // Waits (at most `limit`) for the process to exit on its own; its wait status, or -1.
  int WaitExit(std::chrono::seconds limit);
  // Sends `signal` (SIGSTOP, SIGCONT) without waiting.
  void Signal(int signal);
  adapt::v1::Adaptation::Stub* stub() { return stub_.get(); }
  const std::string& address() const { return address_; }
  const std::string& data_dir() const { return data_dir_; }

 private:
  std::string binary_, data_dir_, log_, address_;
  std::vector<std::string> flags_;
  pid_t pid_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<adapt::v1::Adaptation::Stub> stub_;
};

std::unique_ptr<grpc::ClientContext> Context(int seconds);

// One Adapt call to kTenant/`store`; more than two examples go as two messages (a call spans
// messages) unless `one_message`.
grpc::Status SendAdapt(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                       const Call& call, adapt::v1::AdaptResponse* response,
                       bool one_message = false);

// Sends `call` (ids the store has not seen): it must be acknowledged with none of its examples
// applied before; then it joins `model`. gtest failures otherwise.
void SendNew(adapt::v1::Adaptation::Stub* stub, const std::string& store, const Call& call,
             FaastModel* model, bool one_message = false);

// Creates kTenant/`store`, a faast store of `dim` (retried while UNAVAILABLE, 60 s at most);
// gtest failures otherwise.
void CreateFaastStore(adapt::v1::Adaptation::Stub* stub, const std::string& store, int dim);
adapt::v1::StoreInfo Info(adapt::v1::Adaptation::Stub* stub, const std::string& store);

// Checks the store's exported statistics against `model`, exactly.
void ExpectStatistics(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                      const FaastModel& model);

// Sends `calls` again (each retried until answered, 60 s at most): each must be applied entirely
// or not at all, and is added to `model`. Before the first, the store's examples must be the
// model's plus those of the calls the server reports as applied already (so, run with no
// other writer). Returns how many calls were applied already.
int ResendUnknown(adapt::v1::Adaptation::Stub* stub, const std::string& store,
                  const std::vector<Call>& calls, FaastModel* model);

// Threads that stream Adapt calls of small examples to one store until Stop(): an acknowledged
// call goes into the model, one that failed into the unknown list (its outcome is whatever the
// server did; resend it with the same ids).
class Writers {
 public:
  Writers(adapt::v1::Adaptation::Stub* stub, std::string store, FaastModel* model, int threads,
          uint32_t seed);
  ~Writers() { Stop(); }

  // Waits (at most `limit`) until `more` calls beyond those acknowledged now are acknowledged.
  bool WaitForAcks(uint64_t more, std::chrono::seconds limit);
  void Stop();

  uint64_t acked() const { return acked_.load(); }
  uint64_t failed() const { return failed_.load(); }
  // The calls that failed, and the codes they failed with (both once stopped).
  std::vector<Call> unknown() const { return unknown_; }
  std::map<grpc::StatusCode, uint64_t> codes() const { return codes_; }

 private:
  void Run(int thread, uint32_t seed);

  adapt::v1::Adaptation::Stub* const stub_;
  const std::string store_;
  FaastModel* const model_;
  std::mutex mu_;
  std::vector<Call> unknown_;
  std::map<grpc::StatusCode, uint64_t> codes_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> acked_{0}, failed_{0};
  std::vector<std::thread> threads_;
};

}  // namespace adaptd::durable_log_test

#endif  // ADAPTD_TESTS_E2E_DURABLE_LOG_DURABLE_LOG_HARNESS_H_
