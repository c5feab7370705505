// FaastBufferPool: the float64 buffers faast transactions stage their d × d delta in, shared by
// every faast store of the process and bounded in bytes. A store keeps no buffer between
// transactions (an idle store holds only its state); a transaction takes one here, so that
// back-to-back transactions neither allocate nor fault in 8·d² bytes each time, and gives it
// back at commit or when it is dropped.
//
// Thread safety: every method may be called concurrently.
#ifndef ADAPTD_SERVER_STORES_FAAST_BUFFER_POOL_H_
#define ADAPTD_SERVER_STORES_FAAST_BUFFER_POOL_H_

#include <cstddef>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace adaptd {

class FaastBufferPool {
 public:
  // Holds at most `max_bytes` of idle buffers.
  explicit FaastBufferPool(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The process's pool (kSharedMaxBytes): 64 MiB holds two d = 2048 buffers, or 128 at d = 256.
  static constexpr size_t kSharedMaxBytes = size_t{64} << 20;
  static FaastBufferPool& Shared();

  // A buffer of exactly n doubles with unspecified contents.
  std::vector<double> Take(size_t n) ABSL_LOCKS_EXCLUDED(mu_);
  // Keeps `buffer` for a later Take while the pool stays within its bound (the oldest idle
  // buffers make room; one larger than the bound is freed).
  void Give(std::vector<double> buffer) ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes held by idle buffers now (memory of the process no store counts).
  size_t idle_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Frees every idle buffer (under memory pressure: the next Takes allocate).
  void Clear() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t max_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<double>> idle_ ABSL_GUARDED_BY(mu_);  // oldest first
  size_t idle_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_BUFFER_POOL_H_
