// A faast transaction: validates each batch against the store, evaluates adapt examples
// prequentially against the published weights (unless replay handed it the logged call's
// figures), and stages them in a FaastDelta (decayed per
// batch) without touching the store. FaastStore::Commit merges the delta.
//
// Thread safety: one thread at a time (Txn contract); it reads the store through the store's
// own locks. New labels get transaction columns in first-seen order; the store maps them to
// its columns at commit.
// Layout: the staged delta is laid out like the store's statistics (faast_state.h).
#ifndef ADAPTD_SERVER_STORES_FAAST_TXN_H_
#define ADAPTD_SERVER_STORES_FAAST_TXN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "server/stores/faast_state.h"
#include "server/stores/store.h"

namespace adaptd {

class FaastStore;

class FaastTxn final : public Txn {
 public:
  FaastTxn(FaastStore* store, TxnKind kind);  // faast_txn.cc, where FaastStore is complete
  ~FaastTxn() override;                       // gives the delta's buffer back to the pool

  absl::Status Add(const ExampleBatch& batch) override;
  uint64_t staged() const override { return delta_.examples; }
  // An adapt counts as it stages; a forget evaluates nothing and reports nothing.
  std::optional<PrequentialStats> StagedPrequential() const override;
  bool TakeRecordedPrequential(const PrequentialStats& recorded) override;

 private:
  friend class FaastStore;

  // The batch's rows mapped to transaction columns, with the labels new to this transaction.
  struct ColumnPlan {
    std::vector<int32_t> row_column;
    std::vector<std::string> fresh;
  };

  absl::Status CheckShape(const ExampleBatch& batch) const;
  ColumnPlan PlanColumns(const ExampleBatch& batch) const;
  void Evaluate(const ExampleBatch& batch, const std::vector<double>& keys,
                PrequentialStats* stats) const;
  // `keys` may be taken (moved from) by the staged rows.
  absl::Status Stage(const ExampleBatch& batch, std::vector<double>& keys, const ColumnPlan& plan,
                     bool keep_raw);
  // The steps of Stage. AddColumns: the delta's shape, the plan's new labels (with their
  // embeddings) and, one-hot, their columns. DecayForBatch: decays what is staged by γ^rows and
  // gives each row its weight and the keys times √weight. StageTargets: adds the weighted
  // targets times the keys to the delta's Cᵀ. StageRaw: keeps the raw pairs (few-shot).
  void AddColumns(const ExampleBatch& batch, const ColumnPlan& plan);
  void DecayForBatch(const ExampleBatch& batch, const std::vector<double>& keys,
                     std::vector<double>* weights, std::vector<double>* weighted_keys);
  absl::Status StageTargets(const ExampleBatch& batch, const std::vector<double>& keys,
                            const ColumnPlan& plan, const std::vector<double>& weights);
  void StageRaw(const ExampleBatch& batch, const std::vector<double>& keys, const ColumnPlan& plan,
                const std::vector<double>& weights);
  // Adds the Gram of `rows` keys (times √weight) to the delta: staged for the commit while the
  // transaction holds at most dim rows on a host backend (the first batch's buffer taken, not
  // copied), else by SYRK into the d × d delta.
  absl::Status StageGram(std::vector<double>& gram_keys, int64_t rows);

  FaastStore* const store_;
  const TxnKind kind_;
  FaastDelta delta_;
  std::vector<std::string> labels_;  // transaction columns (label stores)
  // Label-embedding stores: the embedding of each of labels_ (labels_ × out_dim), taken from
  // the target of the label's first example.
  std::vector<float> label_vectors_;
  absl::flat_hash_map<std::string, int32_t> column_of_;
  // Transaction labels the store did not know at the last look (labels are never removed).
  std::vector<std::string> maybe_new_;
  PrequentialStats prequential_;
  bool recorded_ = false;  // prequential_ is the logged call's (replay): Add evaluates nothing
  bool broken_ = false;    // a backend call failed mid-stage; the delta is unusable
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_TXN_H_
