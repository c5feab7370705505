#include "server/stores/faast_label_embedding.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/stores/faast_store.h"

namespace adaptd {
namespace {

// FailedPrecondition unless the store is a label-embedding faast store whose label embeddings
// have `label_encoder`'s width.
absl::Status CheckEmbeds(bool faast, const adapt::v1::StoreSpec& spec,
                         const Encoder& label_encoder) {
  if (!faast || spec.output().label_encoder().empty()) {
    return absl::FailedPreconditionError("the store does not embed its labels");
  }
  const int64_t p = spec.output().label_dim();
  if (label_encoder.dim() != p) {
    return absl::FailedPreconditionError(
        absl::StrCat("label encoder '", label_encoder.info().name(), "' has dimension ",
                     label_encoder.dim(), ", the store's label embeddings have ", p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EmbedLabelTargets(const Encoder& label_encoder, const Store& store,
                               ExampleBatch* batch) {
  const auto* faast = dynamic_cast<const FaastStore*>(&store);
  const adapt::v1::StoreSpec spec = store.spec();
  RETURN_IF_ERROR(CheckEmbeds(faast != nullptr, spec, label_encoder));
  const int64_t p = spec.output().label_dim();
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

absl::Status SeedDeclaredLabels(const Encoder& label_encoder, Store* store) {
  const adapt::v1::StoreSpec spec = store->spec();
  if (spec.output().labels_size() == 0) return absl::OkStatus();
  auto* faast = dynamic_cast<FaastStore*>(store);
  RETURN_IF_ERROR(CheckEmbeds(faast != nullptr, spec, label_encoder));
  const int64_t p = spec.output().label_dim();
  const std::vector<std::string> names(spec.output().labels().begin(),
                                       spec.output().labels().end());
  std::vector<adapt::v1::Input> texts(names.size());
  std::vector<const adapt::v1::Input*> inputs;
  for (size_t i = 0; i < names.size(); ++i) {
    texts[i].set_text(names[i]);
    inputs.push_back(&texts[i]);
  }
  auto encoded = label_encoder.Encode(
      inputs, p, p, [](size_t i) { return absl::StrCat("spec.output.labels[", i, "]"); });
  if (!encoded.ok()) return encoded.status();
  return faast->SeedDeclaredLabels(names, encoded->keys);
}

}  // namespace adaptd
