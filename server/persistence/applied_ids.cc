#include "server/persistence/applied_ids.h"

namespace adaptd {

void AppliedIds::Add(const std::string& id) {
  if (capacity_ == 0 || id.empty() || !set_.insert(id).second) return;
  order_.push_back(id);
  while (order_.size() > capacity_) {
    set_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace adaptd
