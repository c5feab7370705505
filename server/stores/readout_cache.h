// ReadoutCache: the float LinearReadout (store.h) of a store's current published version,
// built once per version and shared by every grouped predict until the next one.
// Thread-safe; Get may be called concurrently (two callers may both build a new version's
// read-out; either result is kept).
#ifndef ADAPTD_SERVER_STORES_READOUT_CACHE_H_
#define ADAPTD_SERVER_STORES_READOUT_CACHE_H_

#include <cstddef>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/stores/store.h"

namespace adaptd {

class ReadoutCache {
 public:
  // The read-out of `version` (the published object it is built from), made by `make` when
  // the cached one belongs to another version.
  template <typename Make>
  std::shared_ptr<const LinearReadout> Get(const std::shared_ptr<const void>& version, Make make) {
    {
      absl::MutexLock lock(&mu_);
      if (readout_ != nullptr && source_.lock() == version) return readout_;
    }
    std::shared_ptr<const LinearReadout> built = make();
    absl::MutexLock lock(&mu_);
    source_ = version;
    readout_ = built;
    return built;
  }

  // Bytes of the cached read-out's weights (0 when none is cached).
  size_t bytes() const {
    absl::MutexLock lock(&mu_);
    return readout_ == nullptr ? 0 : readout_->weights.capacity() * sizeof(float);
  }

 private:
  mutable absl::Mutex mu_;
  std::weak_ptr<const void> source_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const LinearReadout> readout_ ABSL_GUARDED_BY(mu_);
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_READOUT_CACHE_H_
