// CallInfo: what the service layer knows of a call, whatever transport carried it. A front end
// fills one per call from its own form (gRPC metadata and deadline, HTTP headers, ...).
#ifndef ADAPTD_SERVER_SERVICE_CALL_INFO_H_
#define ADAPTD_SERVER_SERVICE_CALL_INFO_H_

#include <functional>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/cluster/routing.h"

namespace adaptd {

struct CallInfo {
  // The caller's credential (`authorization: Bearer ...`), if sent; valid for the call.
  std::optional<absl::string_view> authorization;
  // Whether another member passed the call on, and which, and whether it is marked as a
  // hand-off (docs/CLUSTER.md, "Calls"); the service decides `origin.move`.
  cluster::CallOrigin origin;
  absl::Time deadline = absl::InfiniteFuture();
  // True once the caller gave up; may be empty (never).
  std::function<bool()> cancelled;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_SERVICE_CALL_INFO_H_
