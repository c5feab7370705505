#include "server/encoders/text_encoder.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/encoders/unicode.h"

namespace adaptd {

absl::Status CheckText(std::string_view text, const std::string& field) {
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (text.size() > kMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", text.size(), " bytes, at most ", kMaxTextBytes));
  }
  std::u32string scratch;
  scratch.reserve(text.size());
  if (!DecodeUtf8(absl::string_view(text.data(), text.size()), &scratch)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": not valid UTF-8"));
  }
  return absl::OkStatus();
}

void NormalizeRows(float* data, int64_t rows, int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = data + r * dim;
    double norm2 = 0;
    for (int64_t j = 0; j < dim; ++j) norm2 += static_cast<double>(row[j]) * row[j];
    if (norm2 <= 0) continue;
    const double scale = 1.0 / std::sqrt(norm2);
    for (int64_t j = 0; j < dim; ++j) row[j] = static_cast<float>(row[j] * scale);
  }
}

absl::StatusOr<EncodedBatch> TextEncoder::Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                                 int64_t expected_dim, int64_t /*max_dim*/,
                                                 const FieldNamer& field) const {
  const int64_t d = dim();
  if (expected_dim > 0 && expected_dim != d) {
    return absl::FailedPreconditionError(absl::StrCat("the store's dimension ", expected_dim,
                                                      " differs from encoder '", info().name(),
                                                      "' dimension ", d));
  }
  std::vector<std::string_view> texts;
  texts.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const adapt::v1::Input& input = *inputs[i];
    if (input.value_case() == adapt::v1::Input::kVector) {
      return absl::InvalidArgumentError(absl::StrCat(field(i), ".vector: encoder '", info().name(),
                                                     "' takes text, not a vector"));
    }
    if (input.value_case() == adapt::v1::Input::kImage) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".image: encoder '", info().name(), "' takes text, not an image"));
    }
    if (input.value_case() != adapt::v1::Input::kText) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".text: required by text encoder '", info().name(), "'"));
    }
    if (absl::Status s = CheckText(input.text(), field(i) + ".text"); !s.ok()) return s;
    texts.push_back(input.text());
  }
  EncodedBatch out;
  out.rows = static_cast<int64_t>(inputs.size());
  out.dim = d;
  out.keys.assign(static_cast<size_t>(out.rows * d), 0.0f);
  if (absl::Status s = EncodeTexts(texts, out.keys.data()); !s.ok()) return s;
  return out;
}

}  // namespace adaptd
