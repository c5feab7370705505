#include "server/stores/faast_label_embedding.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/stores/faast_store.h"

namespace adaptd {

absl::Status EmbedLabelTargets(const Encoder& label_encoder, const Store& store,
                               ExampleBatch* batch) {
  const auto* faast = dynamic_cast<const FaastStore*>(&store);
  const adapt::v1::StoreSpec spec = store.spec();
  if (faast == nullptr || spec.output().label_encoder().empty()) {
    return absl::FailedPreconditionError("the store does not embed its labels");
  }
  const int64_t p = spec.output().label_dim();
  if (label_encoder.dim() != p) {
    return absl::FailedPreconditionError(
        absl::StrCat("label encoder '", label_encoder.info().name(), "' has dimension ",
                     label_encoder.dim(), ", the store's label embeddings have ", p));
  }
  // Distinct labels in first-seen order, with the first row that names each.
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<std::string> distinct;
  std::vector<int64_t> first_row;
  std::vector<size_t> row_label(batch->rows);
  for (int64_t r = 0; r < batch->rows; ++r) {
    auto [it, inserted] = index.try_emplace(batch->labels[r], distinct.size());
    if (inserted) {
      distinct.push_back(batch->labels[r]);
      first_row.push_back(r);
    }
    row_label[r] = it->second;
  }
  std::vector<std::vector<float>> vectors = faast->LabelVectors(distinct);
  std::vector<adapt::v1::Input> texts;
  std::vector<size_t> missing;
  for (size_t i = 0; i < distinct.size(); ++i) {
    if (!vectors[i].empty()) continue;
    missing.push_back(i);
    texts.emplace_back().set_text(distinct[i]);
  }
  if (!missing.empty()) {
    std::vector<const adapt::v1::Input*> inputs;
    for (const auto& t : texts) inputs.push_back(&t);
    auto encoded = label_encoder.Encode(inputs, p, p, [&](size_t i) {
      return absl::StrCat("examples[", first_row[missing[i]], "].label");
    });
    if (!encoded.ok()) return encoded.status();
    for (size_t k = 0; k < missing.size(); ++k) {
      vectors[missing[k]].assign(encoded->keys.begin() + k * p,
                                 encoded->keys.begin() + (k + 1) * p);
    }
  }
  batch->targets.resize(static_cast<size_t>(batch->rows * p));
  for (int64_t r = 0; r < batch->rows; ++r) {
    const std::vector<float>& v = vectors[row_label[r]];
    std::copy(v.begin(), v.end(), batch->targets.begin() + r * p);
  }
  return absl::OkStatus();
}

}  // namespace adaptd
