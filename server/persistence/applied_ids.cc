#include "server/persistence/applied_ids.h"

namespace adaptd {

size_t AppliedIds::BytesOf(const std::string& id) {
  // std::string keeps up to 15 bytes inline; the set's slot adds a control byte and padding.
  const size_t heap = id.size() > 15 ? id.size() + 1 : 0;
  return 2 * (sizeof(std::string) + heap) + 8;
}

void AppliedIds::Add(const std::string& id) {
  if (capacity_ == 0 || id.empty() || !set_.insert(id).second) return;
  if (order_ == nullptr) order_ = std::make_unique<std::deque<std::string>>();
  order_->push_back(id);
  bytes_ += BytesOf(id);
  while (order_->size() > capacity_) {
    bytes_ -= BytesOf(order_->front());
    set_.erase(order_->front());
    order_->pop_front();
  }
}

}  // namespace adaptd
