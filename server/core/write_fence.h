// WriteFences: the per-store fence of a cluster hand-off (docs/CLUSTER.md, "Hand-off"). Every
// change of a store (a write's commit, a compile, a pin, a delete) enters the store's fence
// first and leaves it once done; Close refuses new changes and waits until those in flight
// have left, so the state read after Close holds every change that was acknowledged and none
// can follow. Open lifts the fence (a move that will not happen after all). Thread-safe.
#ifndef ADAPTD_SERVER_CORE_WRITE_FENCE_H_
#define ADAPTD_SERVER_CORE_WRITE_FENCE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace adaptd {

class WriteFences {
 public:
  // UNAVAILABLE (retryable) when `key`'s fence is closed; otherwise the change is in flight
  // until Leave(key).
  absl::Status Enter(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (closed_.contains(key)) {
      return absl::UnavailableError(absl::StrCat(
          "store ", key, " is being handed off to another member of the cluster; retry"));
    }
    ++in_flight_[key];
    return absl::OkStatus();
  }
  void Leave(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(key);
    if (it != in_flight_.end() && --it->second == 0) in_flight_.erase(it);
  }
  // Refuses `key`'s new changes and waits for those in flight.
  void Close(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_.insert(key);
    const auto idle = [this, &key]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !in_flight_.contains(key); };
    mu_.Await(absl::Condition(&idle));
  }
  void Open(const std::string& key) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    closed_.erase(key);
  }
  bool IsClosed(const std::string& key) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return closed_.contains(key);
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> closed_ ABSL_GUARDED_BY(mu_);
};

// Holds a change in `key`'s fence for its lifetime (when Enter succeeded).
class FenceHold {
 public:
  FenceHold() = default;
  FenceHold(WriteFences* fences, std::string key) : fences_(fences), key_(std::move(key)) {}
  FenceHold(FenceHold&& other) noexcept
      : fences_(std::exchange(other.fences_, nullptr)), key_(std::move(other.key_)) {}
  FenceHold& operator=(FenceHold&& other) noexcept {
    if (this != &other) {
      Release();
      fences_ = std::exchange(other.fences_, nullptr);
      key_ = std::move(other.key_);
    }
    return *this;
  }
  ~FenceHold() { Release(); }
  void Release() {
    if (fences_ != nullptr) fences_->Leave(key_);
    fences_ = nullptr;
  }

 private:
  WriteFences* fences_ = nullptr;
  std::string key_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_CORE_WRITE_FENCE_H_
