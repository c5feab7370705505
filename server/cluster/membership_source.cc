#include "server/cluster/membership_source.h"

#include <utility>

namespace adaptd::cluster {

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    Cancel();
    cancel_ = std::exchange(other.cancel_, nullptr);
  }
  return *this;
}

void Subscription::Cancel() {
  if (cancel_ == nullptr) return;
  std::exchange(cancel_, nullptr)();
}

MembershipFeed::MembershipFeed(std::shared_ptr<const Membership> initial)
    : current_(std::move(initial)) {}

std::shared_ptr<const Membership> MembershipFeed::Current() const {
  absl::MutexLock lock(&state_mu_);
  return current_;
}

Subscription MembershipFeed::Watch(MembershipCallback changed) {
  absl::MutexLock lock(&deliver_mu_);
  const uint64_t id = next_id_++;
  changed(Current());
  subscribers_.emplace(id, std::move(changed));
  return Subscription([this, id] { Unsubscribe(id); });
}

void MembershipFeed::Unsubscribe(uint64_t id) {
  absl::MutexLock lock(&deliver_mu_);
  subscribers_.erase(id);
}

absl::Status MembershipFeed::Update(Next next) {
  absl::MutexLock lock(&deliver_mu_);
  absl::StatusOr<std::shared_ptr<const Membership>> computed = next(Current());
  if (!computed.ok()) return computed.status();
  if (*computed == nullptr) return absl::OkStatus();
  {
    absl::MutexLock state(&state_mu_);
    current_ = *computed;
  }
  for (const auto& [id, changed] : subscribers_) changed(*computed);
  return absl::OkStatus();
}

}  // namespace adaptd::cluster
