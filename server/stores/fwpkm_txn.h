// A fwpkm transaction: validates each batch against the store, projects its keys to queries,
// evaluates it prequentially against the current state, and stages it without touching the
// store. FwpkmStore::Commit queues the staged batches and applies the full chunks.
//
// Thread safety: one thread at a time (Txn contract); it reads the store through the store's
// lock. New labels get transaction columns in first-seen order; Commit maps them to store
// columns. `next` batches stage every item's query and its encoder output; Commit pairs them.
// Layout: staged queries items × key_dim; staged targets items × width (row-major).
#ifndef ADAPTD_SERVER_STORES_FWPKM_TXN_H_
#define ADAPTD_SERVER_STORES_FWPKM_TXN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "server/stores/fwpkm_keys.h"
#include "server/stores/fwpkm_store.h"
#include "server/stores/store.h"

namespace adaptd {

class FwpkmTxn final : public Txn {
 public:
  FwpkmTxn(FwpkmStore* store, TxnKind kind);  // fwpkm_txn.cc, where FwpkmStore is complete

  absl::Status Add(const ExampleBatch& batch) override;
  uint64_t staged() const override { return staged_; }
  // The figures Add counted against the state as it staged (adapts); replay hands them back so
  // that Add evaluates nothing and the commit counts exactly the logged call's.
  std::optional<PrequentialStats> StagedPrequential() const override;
  bool TakeRecordedPrequential(const PrequentialStats& recorded) override;

 private:
  friend class FwpkmStore;

  // One staged batch, fed `passes` times at commit. Labels hold transaction columns; `next`
  // batches hold the items' encoder outputs as targets (items × dim).
  struct Segment {
    FwpkmQueue items;
    int passes = 1;
    bool restart_sequence = false;  // next stores: the carried item is dropped first
  };

  absl::Status CheckShape(const ExampleBatch& batch) const;

  FwpkmStore* const store_;
  const TxnKind kind_;
  std::vector<Segment> segments_;
  int64_t dim_ = 0;
  std::shared_ptr<const FwpkmProjection> projection_;
  std::vector<std::string> labels_;  // transaction columns (label stores)
  absl::flat_hash_map<std::string, int32_t> column_of_;
  uint64_t staged_ = 0;
  PrequentialStats prequential_;
  bool recorded_ = false;  // prequential_ is the logged call's (replay): Add evaluates nothing
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FWPKM_TXN_H_
