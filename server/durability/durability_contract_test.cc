// The durability contract (durability_contract.h) on both implementations: the local data
// directory (a fault-injecting Env fails a log sync, losing what it had not synced) and memory.
#include "server/durability/durability_contract.h"

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "server/durability/local_durability.h"
#include "server/durability/memory_durability.h"
#include "server/persistence/testing/fault_injection_env.h"

namespace adaptd {
namespace {

class LocalHarness {
 public:
  explicit LocalHarness(kernels::Backend* backend) : backend_(backend) {
    std::random_device rd;
    dir_ = ::testing::TempDir() + "/adaptd-durability-" + std::to_string(rd());
    std::filesystem::remove_all(dir_);
  }
  ~LocalHarness() { std::filesystem::remove_all(dir_); }

  absl::StatusOr<std::unique_ptr<Durability>> Open(std::vector<RecoveredStore>* recovered) {
    env_.ClearFaults();
    JournalOptions options;
    options.data_dir = dir_;
    options.env = &env_;
    options.snapshot_log_bytes = 0;  // checkpoints only when a test asks
    absl::StatusOr<std::unique_ptr<LocalDurability>> opened =
        LocalDurability::Open(options, backend_, recovered);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<Durability>(*std::move(opened));
  }
  // The log's next sync fails with EIO, and what it had not synced is lost.
  void FailNextAppend() { env_.Inject({FaultInjectionEnv::What::kSyncEio, "*.log"}); }

 private:
  kernels::Backend* const backend_;
  std::string dir_;
  FaultInjectionEnv env_;
};

class MemoryHarness {
 public:
  explicit MemoryHarness(kernels::Backend* backend) : backend_(backend) {}

  absl::StatusOr<std::unique_ptr<Durability>> Open(std::vector<RecoveredStore>* recovered) {
    absl::StatusOr<std::unique_ptr<MemoryDurability>> opened =
        MemoryDurability::Open(disk_, backend_, recovered);
    if (!opened.ok()) return opened.status();
    return std::unique_ptr<Durability>(*std::move(opened));
  }
  void FailNextAppend() { disk_->FailAppends(1); }

 private:
  kernels::Backend* const backend_;
  std::shared_ptr<MemoryDisk> disk_ = std::make_shared<MemoryDisk>();
};

INSTANTIATE_TYPED_TEST_SUITE_P(Local, DurabilityContract, LocalHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(Memory, DurabilityContract, MemoryHarness);

}  // namespace
}  // namespace adaptd
