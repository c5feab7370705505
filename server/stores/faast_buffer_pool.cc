#include "server/stores/faast_buffer_pool.h"

#include <utility>

namespace adaptd {

FaastBufferPool& FaastBufferPool::Shared() {
  static FaastBufferPool* const pool = new FaastBufferPool(kSharedMaxBytes);
  return *pool;
}

std::vector<double> FaastBufferPool::Take(size_t n) {
  {
    absl::MutexLock lock(&mu_);
    // Newest first: the one most likely still in cache.
    for (size_t i = idle_.size(); i-- > 0;) {
      if (idle_[i].size() != n) continue;
      std::vector<double> buffer = std::move(idle_[i]);
      idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
      idle_bytes_ -= buffer.capacity() * sizeof(double);
      return buffer;
    }
  }
  return std::vector<double>(n);
}

void FaastBufferPool::Give(std::vector<double> buffer) {
  const size_t bytes = buffer.capacity() * sizeof(double);
  if (bytes == 0 || bytes > max_bytes_) return;
  std::vector<std::vector<double>> dropped;  // freed after the lock is released
  absl::MutexLock lock(&mu_);
  size_t drop = 0;
  while (idle_bytes_ + bytes > max_bytes_) {
    idle_bytes_ -= idle_[drop].capacity() * sizeof(double);
    dropped.push_back(std::move(idle_[drop++]));
  }
  idle_.erase(idle_.begin(), idle_.begin() + static_cast<std::ptrdiff_t>(drop));
  idle_bytes_ += bytes;
  idle_.push_back(std::move(buffer));
}

size_t FaastBufferPool::idle_bytes() const {
  absl::MutexLock lock(&mu_);
  return idle_bytes_;
}

void FaastBufferPool::Clear() {
  std::vector<std::vector<double>> dropped;  // freed after the lock is released
  absl::MutexLock lock(&mu_);
  dropped.swap(idle_);
  idle_bytes_ = 0;
}

}  // namespace adaptd
