#include "server/persistence/failed_store.h"

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

class FailedTxn final : public Txn {
 public:
  FailedTxn(const Store* owner, absl::Status refusal) : Txn(owner), refusal_(std::move(refusal)) {}
  absl::Status Add(const ExampleBatch&) override { return refusal_; }
  uint64_t staged() const override { return 0; }

 private:
  absl::Status refusal_;
};

}  // namespace

absl::Status FailedStore::Refusal() const {
  return absl::FailedPreconditionError(
      absl::StrCat("the store failed to recover and serves nothing until deleted: ", reason_));
}

std::unique_ptr<Txn> FailedStore::Begin(TxnKind) {
  return std::make_unique<FailedTxn>(this, Refusal());
}

absl::StatusOr<CommitResult> FailedStore::Commit(Txn&) { return Refusal(); }

absl::StatusOr<Predictions> FailedStore::Predict(const float*, int64_t, int64_t, int) const {
  return Refusal();
}

absl::StatusOr<adapt::v1::CompileResponse> FailedStore::Compile(const adapt::v1::CompileRequest&) {
  return Refusal();
}

void FailedStore::Describe(adapt::v1::StoreInfo* info) const {
  *info->mutable_spec() = spec_;
  info->set_failure(reason_);
}

absl::StatusOr<adapt::v1::StoreSnapshot> FailedStore::Snapshot() const { return Refusal(); }

absl::Status StoreFailure(const Store& store) {
  const auto* failed = dynamic_cast<const FailedStore*>(&store);
  return failed == nullptr ? absl::OkStatus() : failed->Refusal();
}

}  // namespace adaptd
