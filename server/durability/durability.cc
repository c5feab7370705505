#include "server/durability/durability.h"

#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace adaptd {
namespace {

// The payload's type URL; its presence is what marks the status.
constexpr char kOwnershipLost[] = "type.adaptd/durability.OwnershipLost";

}  // namespace

absl::Status OwnershipLostError(absl::string_view store, absl::string_view detail) {
  absl::Status status = absl::UnavailableError(
      absl::StrCat("store ", store, " is held by another server now (its fence is stale: ", detail,
                   "); retry the call, which the store's holder answers"));
  status.SetPayload(kOwnershipLost, absl::Cord(store));
  return status;
}

bool IsOwnershipLost(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         status.GetPayload(kOwnershipLost).has_value();
}

absl::StatusOr<CommitResult> CommitWrite(Durability& durability, const std::string& tenant,
                                         const std::string& name, const Store* store,
                                         adapt::v1::WalWrite write, const Fence& fence,
                                         Durability::Apply apply) {
  absl::Notification finished;
  std::optional<absl::StatusOr<CommitResult>> result;
  durability.AppendWrite(tenant, name, store, std::move(write), fence, std::move(apply),
                         [&](absl::StatusOr<CommitResult> done) {
                           result = std::move(done);
                           finished.Notify();
                         });
  finished.WaitForNotification();
  return *std::move(result);
}

}  // namespace adaptd
