// A published faast version: the float64 weights S and the label names they were compiled
// with, plus the scoring shared by Predict and prequential evaluation. Predict scores with a
// float32 copy of S (FaastStore's read-out) where S fits float32's range (float_scoring), and
// falls back to float64 for the rows float32 cannot score (docs/ALGORITHMS.md §1.4, "Predict
// precision").
//
// Thread safety: immutable once published (held as shared_ptr<const FaastWeights>); the free
// functions are thread-safe.
// Layout: row-major; S is dim × columns, keys rows × dim, outputs rows × columns.
#ifndef ADAPTD_SERVER_STORES_FAAST_WEIGHTS_H_
#define ADAPTD_SERVER_STORES_FAAST_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "server/stores/store.h"

namespace adaptd {

struct FaastWeights {
  uint64_t version = 0;
  bool labels = true;
  int64_t dim = 0;
  int64_t columns = 0;
  std::vector<double> s;  // dim × columns
  // Label stores: the names of the columns (size == columns); in label-embedding mode the
  // names of the labels (any count), whose unit-length embeddings are `label_vectors`
  // (labels × columns): an output row decodes to the labels of highest cosine.
  std::shared_ptr<const std::vector<std::string>> label_names;
  std::shared_ptr<const std::vector<double>> label_vectors;
  // Whether S may be scored in float32 (FitsFloat(s)); set when the weights are published.
  bool float_scoring = false;

  // S and the label embeddings (label_names is usually the store's own list, counted there).
  size_t bytes() const {
    return sizeof(*this) + s.capacity() * sizeof(double) +
           (label_vectors == nullptr ? 0 : label_vectors->capacity() * sizeof(double));
  }
};

// outputs (rows × columns) = keys · S, keys already in float64 (rows × dim).
absl::StatusOr<std::vector<double>> FaastOutputs(const FaastWeights& weights, const double* keys,
                                                 int64_t rows, kernels::Backend* backend);

// Whether float32 scores S without losing its range: every entry is finite in float32 and the
// largest magnitude is at least kFloatScoringFloor (or S is zero).
inline constexpr double kFloatScoringFloor = 1e-30;
bool FitsFloat(const std::vector<double>& s);

// Rows of float32 outputs (rows × columns) that float32 could not score faithfully: a value
// that is not finite, or a row whose largest magnitude is below kFloatScoringFloor (underflow
// or a zero key; float64 rescoring decides its ranking).
std::vector<int64_t> RowsToRescore(const float* outputs, int64_t rows, int64_t columns);

// Fills `out` with the predictions of `outputs` (label stores: top-k ids and scores, k clamped
// to [1, labels]; vector stores: the rows as floats). Label-embedding weights score each
// label by the cosine between the output row and the label's embedding (0 for a zero row).
void FaastFillPredictions(const FaastWeights& weights, const std::vector<double>& outputs,
                          int64_t rows, int top_k, Predictions* out);
// The same from float32 outputs (no label embeddings: weights.label_vectors is null).
void FaastFillPredictions(const FaastWeights& weights, const std::vector<float>& outputs,
                          int64_t rows, int top_k, Predictions* out);

// The best label of one output row (columns values): the largest column, or in label-embedding
// mode the label of highest cosine; -1 when there is none.
int64_t FaastBestLabel(const FaastWeights& weights, const double* row);

// Unit-length copies of `count` rows of `width` floats (zero rows stay zero).
std::vector<double> UnitRows(const float* rows, int64_t count, int64_t width);

// float keys → float64.
std::vector<double> ToDouble(const float* values, int64_t count);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_FAAST_WEIGHTS_H_
