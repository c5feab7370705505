// FailedStore: stands in the registry for a store whose durable state could not be recovered
// (a corrupt snapshot or log record). GetStore and ListStores show its spec (when known) and
// the reason in StoreInfo.failure; every read or write answers FailedPrecondition with the
// reason; DeleteStore removes it. Immutable, so thread-safe.
#ifndef ADAPTD_SERVER_PERSISTENCE_FAILED_STORE_H_
#define ADAPTD_SERVER_PERSISTENCE_FAILED_STORE_H_

#include <memory>
#include <string>

#include "server/stores/store.h"

namespace adaptd {

class FailedStore final : public Store {
 public:
  FailedStore(adapt::v1::StoreSpec spec, std::string reason)
      : spec_(std::move(spec)), reason_(std::move(reason)) {}

  const std::string& reason() const { return reason_; }
  absl::Status Refusal() const;

  adapt::v1::StoreSpec spec() const override { return spec_; }
  int64_t dim() const override { return spec_.dim(); }
  std::unique_ptr<Txn> Begin(TxnKind kind) override;
  absl::StatusOr<CommitResult> Commit(Txn& txn) override;
  absl::StatusOr<Predictions> Predict(const float* keys, int64_t rows, int64_t dim,
                                      int top_k) const override;
  absl::StatusOr<adapt::v1::CompileResponse> Compile(
      const adapt::v1::CompileRequest& request) override;
  void Describe(adapt::v1::StoreInfo* info) const override;
  absl::StatusOr<adapt::v1::StoreSnapshot> Snapshot() const override;

 private:
  const adapt::v1::StoreSpec spec_;
  const std::string reason_;
};

// The failure of `store` when it is a FailedStore; OK otherwise.
absl::Status StoreFailure(const Store& store);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_PERSISTENCE_FAILED_STORE_H_
