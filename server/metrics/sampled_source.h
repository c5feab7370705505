// SampledSource: a function a scrape samples, set and cleared by the component that owns it (a
// durability, a cluster member), which may go before the Metrics. Thread-safe: Clear waits out
// a Sample under way, and what it resets is set under the same lock, so no sample lands after.
#ifndef ADAPTD_SERVER_METRICS_SAMPLED_SOURCE_H_
#define ADAPTD_SERVER_METRICS_SAMPLED_SOURCE_H_

#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace adaptd {

template <typename T>
class SampledSource {
 public:
  // Replaces a source set before; `source` must stay valid until Clear(owner).
  void Set(const void* owner, std::function<T()> source) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    owner_ = owner;
    source_ = std::move(source);
  }
  // Stops sampling and runs `reset` if `owner` set the source; else does nothing.
  void Clear(const void* owner, const std::function<void()>& reset) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (owner == nullptr || owner != owner_) return;
    owner_ = nullptr;
    source_ = nullptr;
    reset();
  }
  // Runs `apply` on the source's value, when a source is set.
  void Sample(const std::function<void(const T&)>& apply) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (source_) apply(source_());
  }

 private:
  absl::Mutex mu_;
  const void* owner_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::function<T()> source_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_METRICS_SAMPLED_SOURCE_H_
