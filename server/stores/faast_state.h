// The sufficient statistics of a faast store (G = Σ w x xᵀ, C = Σ w x yᵀ, N) and the delta a
// transaction stages, with the arithmetic that merges a delta into the statistics.
//
// Thread safety: plain values; FaastStore guards its copy with its mutex.
// Layout: row-major. G is dim × dim and only its upper triangle is kept (the strictly lower
// triangle stays zero); C is held transposed, `ct` = Cᵀ (columns × dim), so that a new label
// appends a row and a labelled example adds its key to one contiguous row.
#ifndef ADAPTD_SERVER_STORES_FAAST_STATE_H_
#define ADAPTD_SERVER_STORES_FAAST_STATE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace adaptd {

// Weighted (key, target) pairs kept for the few-shot solver while examples < dim.
struct FaastRawPairs {
  int64_t rows = 0;
  std::vector<double> keys;        // rows × dim
  std::vector<int32_t> label_ids;  // label stores: the target column of each row
  std::vector<double> targets;     // vector stores: rows × columns
  std::vector<double> weights;     // rows, all > 0

  void Clear();
  void ScaleWeights(double factor);
  // Appends row `row` of `other` (same dim and target layout), mapping its label id.
  void AppendRow(const FaastRawPairs& other, int64_t row, int64_t dim, int64_t columns,
                 int32_t label_id);
  void EraseRow(int64_t row, int64_t dim, int64_t columns);
  size_t bytes() const;
};

struct FaastStatistics {
  bool labels = true;            // one-hot label columns, else vector targets
  int64_t dim = 0;               // 0 until the first example fixes it
  int64_t columns = 0;           // labels so far, or the vector width M
  std::vector<double> g;         // dim × dim, upper triangle; empty until the first example
  std::vector<double> ct;        // columns × dim; empty until the first example
  double weighted_examples = 0;  // decayed count N
  uint64_t examples = 0;         // undecayed count
  bool raw_kept = true;          // false for good once dropped
  FaastRawPairs raw;
  // A store with a base (docs/BASE_STORES.md): the copied read-out S_base that the ridge solve
  // pulls towards, held transposed like C (columns × dim; a new label's row is zero).
  std::vector<double> prior_t;
  // The base's published version the copy was taken from (≥ 1); 0: no base.
  uint64_t prior_version = 0;
  bool has_prior() const { return prior_version > 0; }

  // Sizes g and ct for `dim` (fixing it) if they are not allocated yet.
  void Allocate(int64_t new_dim);
  // Appends `count` zero columns (new labels).
  void AddColumns(int64_t count);
  // Zeroes G, C, N and the raw pairs (the store holds no examples).
  void ZeroStatistics();
  size_t bytes() const;
};

// What a transaction stages before commit. Columns are the transaction's own (its labels in
// first-seen order, or M); FaastStore maps them to store columns at commit.
struct FaastDelta {
  int64_t dim = 0;  // 0 until the first batch
  int64_t columns = 0;
  std::vector<double> g;   // dim × dim, upper triangle (the lower one is not cleared)
  bool g_written = false;  // the first batch overwrites g (SYRK with beta 0)
  // Keys times √weight not yet in g (staged_rows × dim). While a transaction holds fewer rows
  // than dim, on a backend that runs on the host, it stages its keys here and the commit runs
  // their SYRK straight into the statistics: no d × d delta to fill and add.
  std::vector<double> staged;
  int64_t staged_rows = 0;
  std::vector<double> ct;  // columns × dim
  double weighted_examples = 0;
  uint64_t examples = 0;
  int64_t decayed = 0;       // examples adapted, k: the store's statistics scale by decay^k
  bool raw_complete = true;  // every staged example is in `raw`
  FaastRawPairs raw;         // label_ids are transaction columns
};

// G ← decay^k·G + D_G, C ← decay^k·C + D_C (through `store_column`, one entry per delta
// column), N likewise, counts added (D_G only where g_written; staged keys are the caller's); raw
// pairs kept only while examples < dim and the delta holds them all. `stats` must already be
// allocated with every mapped column.
void MergeAdapt(const FaastDelta& delta, const std::vector<int32_t>& store_column, double decay,
                FaastStatistics* stats);

// Subtracts the delta (no decay; D_G only where g_written, staged keys already subtracted by the
// caller). Each forgotten pair removes one stored raw pair with weight 1
// and the same key and target; if one has none, the raw pairs are dropped for good. When the
// count reaches zero the statistics are zeroed exactly.
void MergeForget(const FaastDelta& delta, const std::vector<int32_t>& store_column,
                 FaastStatistics* stats);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_STATE_H_
