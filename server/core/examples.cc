#include "server/core/examples.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace adaptd {

absl::Status CheckLabel(const std::string& label, absl::string_view field) {
  if (label.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (label.size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", label.size(), " bytes, at most ", kMaxLabelBytes));
  }
  if (!IsValidUtf8(label)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": not valid UTF-8"));
  }
  return absl::OkStatus();
}

absl::Status CheckTargetVector(const google::protobuf::RepeatedField<float>& values, int64_t m,
                               absl::string_view field) {
  if (values.size() != m) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", values.size(), " values, expected ", m));
  }
  for (int j = 0; j < values.size(); ++j) {
    if (!std::isfinite(values[j])) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".values[", j, "]: not a finite number"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ExampleBatch> EncodeExamples(
    const google::protobuf::RepeatedPtrField<adapt::v1::Example>& examples,
    const adapt::v1::OutputSpec& output, const Encoder& encoder, int64_t expected_dim,
    int64_t max_dim) {
  ExampleBatch batch;
  const bool labels = output.kind() == adapt::v1::OutputSpec::KIND_LABELS;
  const int64_t m = output.dim();
  std::vector<const adapt::v1::Input*> inputs;
  inputs.reserve(examples.size());
  for (int i = 0; i < examples.size(); ++i) {
    const adapt::v1::Example& example = examples[i];
    if (!example.has_input()) {
      return absl::InvalidArgumentError(absl::StrCat("examples[", i, "].input: required"));
    }
    inputs.push_back(&example.input());
    if (labels) {
      if (example.target_case() != adapt::v1::Example::kLabel) {
        return absl::InvalidArgumentError(
            absl::StrCat("examples[", i, "].label: required by a label store"));
      }
      absl::Status checked = CheckLabel(example.label(), absl::StrCat("examples[", i, "].label"));
      if (!checked.ok()) return checked;
    } else {
      if (example.target_case() != adapt::v1::Example::kVector) {
        return absl::InvalidArgumentError(
            absl::StrCat("examples[", i, "].vector: required by a vector:", m, " store"));
      }
      absl::Status checked =
          CheckTargetVector(example.vector().values(), m, absl::StrCat("examples[", i, "].vector"));
      if (!checked.ok()) return checked;
    }
  }
  auto encoded = encoder.Encode(inputs, expected_dim, max_dim,
                                [](size_t i) { return absl::StrCat("examples[", i, "].input"); });
  if (!encoded.ok()) return encoded.status();
  batch.rows = encoded->rows;
  batch.dim = encoded->dim;
  batch.keys = std::move(encoded->keys);
  batch.truncated_texts = encoded->truncated.size();
  if (labels) {
    batch.labels.reserve(examples.size());
    for (const auto& example : examples) batch.labels.push_back(example.label());
  } else {
    batch.targets.reserve(static_cast<size_t>(m) * examples.size());
    for (const auto& example : examples) {
      batch.targets.insert(batch.targets.end(), example.vector().values().begin(),
                           example.vector().values().end());
    }
  }
  return batch;
}

absl::StatusOr<ExampleBatch> EncodeSequence(
    const google::protobuf::RepeatedPtrField<adapt::v1::Input>& sequence, const Encoder& encoder,
    int64_t expected_dim, int64_t max_dim) {
  std::vector<const adapt::v1::Input*> inputs;
  inputs.reserve(sequence.size());
  for (const auto& input : sequence) inputs.push_back(&input);
  auto encoded = encoder.Encode(inputs, expected_dim, max_dim,
                                [](size_t i) { return absl::StrCat("sequence[", i, "]"); });
  if (!encoded.ok()) return encoded.status();
  ExampleBatch batch;
  batch.rows = encoded->rows;
  batch.dim = encoded->dim;
  batch.keys = std::move(encoded->keys);
  batch.truncated_texts = encoded->truncated.size();
  batch.sequence = true;
  return batch;
}

}  // namespace adaptd
