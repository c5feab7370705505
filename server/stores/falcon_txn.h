// A falcon transaction: validates each batch and buffers it, in order, without touching the
// store. FalconStore::Commit applies the buffer under the store's write lock, evaluating each
// example prequentially against the state as it is when that example is applied, so commits
// from concurrent streams form one total order.
//
// Thread safety: one thread at a time (Txn contract); it reads the store's published version.
// Layout: keys rows × dim (raw floats, as encoded), targets rows × M for vector stores.
#ifndef ADAPTD_SERVER_STORES_FALCON_TXN_H_
#define ADAPTD_SERVER_STORES_FALCON_TXN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/stores/store.h"

namespace adaptd {

class FalconStore;

class FalconTxn final : public Txn {
 public:
  FalconTxn(FalconStore* store, TxnKind kind);  // falcon_txn.cc, where FalconStore is complete

  absl::Status Add(const ExampleBatch& batch) override;
  uint64_t staged() const override { return static_cast<uint64_t>(rows_); }

 private:
  friend class FalconStore;

  absl::Status CheckShape(const ExampleBatch& batch) const;

  FalconStore* const store_;
  const TxnKind kind_;
  int64_t rows_ = 0;
  int64_t dim_ = 0;
  std::vector<float> keys_;
  std::vector<std::string> labels_;
  std::vector<float> targets_;
  // next stores: the rows at which a batch restarted the sequence, ascending.
  std::vector<int64_t> restarts_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FALCON_TXN_H_
