#include "server/stores/store_factory.h"

namespace adaptd {

absl::StatusOr<std::unique_ptr<Store>> CreateStore(const adapt::v1::StoreSpec&,
                                                   kernels::Backend*) {
  return absl::UnimplementedError("no store kinds are built yet");
}

absl::StatusOr<std::unique_ptr<Store>> RestoreStore(const adapt::v1::StoreSnapshot&,
                                                    kernels::Backend*) {
  return absl::UnimplementedError("no store kinds are built yet");
}

}  // namespace adaptd
