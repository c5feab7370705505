// AppliedIds: the example ids a store applied most recently, so that a resent example is
// applied once. Bounded: past `capacity` ids the oldest is forgotten (a resend older than the
// last `capacity` ids is applied again). Memory: about 64 bytes plus the id's length per id.
// Not thread-safe (the journal guards it with the store's log lock).
#ifndef ADAPTD_SERVER_PERSISTENCE_APPLIED_IDS_H_
#define ADAPTD_SERVER_PERSISTENCE_APPLIED_IDS_H_

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace adaptd {

class AppliedIds {
 public:
  explicit AppliedIds(size_t capacity) : capacity_(capacity) {}

  bool Contains(const std::string& id) const { return set_.contains(id); }
  void Add(const std::string& id);
  // Oldest first.
  std::vector<std::string> List() const {
    return order_ ? std::vector<std::string>(order_->begin(), order_->end())
                  : std::vector<std::string>();
  }
  size_t size() const { return order_ ? order_->size() : 0; }
  // What the ids hold in memory, estimated: each is kept twice (in order and in the set),
  // with its heap bytes when longer than the inline buffer and the set's slot.
  size_t bytes() const { return bytes_; }

 private:
  static size_t BytesOf(const std::string& id);
  size_t capacity_;
  size_t bytes_ = 0;
  // Allocated with the first id: an empty std::deque holds most of a KiB, and most stores a
  // journal knows are cold, with no ids in memory.
  std::unique_ptr<std::deque<std::string>> order_;
  absl::flat_hash_set<std::string> set_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_APPLIED_IDS_H_
