#include "server/stores/stored_readout.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "adapt/v1/snapshot.pb.h"
#include "server/stores/store_kind.h"

namespace adaptd {

std::string EncodeReadout(const LinearReadout& readout) {
  adapt::v1::StoredReadout record;
  record.set_version(readout.version);
  record.set_dim(static_cast<uint32_t>(readout.dim));
  record.set_columns(static_cast<uint32_t>(readout.columns));
  record.set_labels(readout.labels);
  if (readout.labels && readout.label_names != nullptr) {
    for (const std::string& name : *readout.label_names) record.add_label_names(name);
  }
  record.mutable_weights()->Add(readout.weights.begin(), readout.weights.end());
  return record.SerializeAsString();
}

absl::StatusOr<std::shared_ptr<const LinearReadout>> DecodeReadout(absl::string_view record,
                                                                   const adapt::v1::StoreSpec& spec,
                                                                   absl::string_view where) {
  const auto damaged = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(where, ": ", why));
  };
  adapt::v1::StoredReadout stored;
  if (!stored.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
    return damaged("the stored read-out does not parse");
  }
  const uint64_t cells = uint64_t{stored.dim()} * stored.columns();
  if (stored.dim() == 0 || stored.columns() == 0 ||
      static_cast<uint64_t>(stored.weights_size()) != cells) {
    return damaged(absl::StrCat("the stored read-out holds ", stored.weights_size(),
                                " weights for ", stored.dim(), " × ", stored.columns()));
  }
  if (stored.labels() && static_cast<uint32_t>(stored.label_names_size()) < stored.columns()) {
    return damaged(absl::StrCat("the stored read-out names ", stored.label_names_size(),
                                " labels for ", stored.columns(), " columns"));
  }
  auto readout = std::make_shared<LinearReadout>();
  readout->version = stored.version();
  readout->dim = stored.dim();
  readout->columns = stored.columns();
  readout->labels = stored.labels();
  readout->weights.assign(stored.weights().begin(), stored.weights().end());
  if (stored.labels()) {
    auto names = std::make_shared<std::vector<std::string>>();
    names->reserve(stored.label_names_size());
    for (std::string& name : *stored.mutable_label_names()) names->push_back(std::move(name));
    readout->label_names = std::move(names);
  }
  const StoreKind* kind = StoreKinds::Global().Find(spec.kind());
  if (kind != nullptr && kind->readout_prepare) {
    readout->prepare = kind->readout_prepare(spec, readout->dim);
  }
  return std::shared_ptr<const LinearReadout>(std::move(readout));
}

}  // namespace adaptd
