// TextEncoder: the common front of encoders whose input is text. Encode checks every input
// (a text, non-empty, valid UTF-8, at most kMaxTextBytes) before any work, so a bad input
// fails the whole batch with InvalidArgument naming it (e.g. "examples[3].input.text: not
// valid UTF-8"), then hands the batch to EncodeTexts in one call.
//
// Thread safety: as Encoder (EncodeTexts is const and must be safe to call concurrently).
// Layout: EncodeTexts writes texts.size() × dim() floats, row-major.
#ifndef ADAPTD_SERVER_ENCODERS_TEXT_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_TEXT_ENCODER_H_

#include <string_view>
#include <vector>

#include "server/encoders/encoder.h"

namespace adaptd {

inline constexpr size_t kMaxTextBytes = 1 << 20;

class TextEncoder : public Encoder {
 public:
  absl::StatusOr<EncodedBatch> Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                      int64_t expected_dim, int64_t max_dim,
                                      const FieldNamer& field) const final;

  // Encodes already-checked texts into `out` (texts.size() × dim(), zero-filled).
  virtual absl::Status EncodeTexts(const std::vector<std::string_view>& texts,
                                   float* out) const = 0;
};

// Checks one text: InvalidArgument "<field>: empty" / "not valid UTF-8" / too long.
absl::Status CheckText(std::string_view text, const std::string& field);

// L2-normalises each of `rows` rows of `dim` floats in place (rows of zeros stay zero).
void NormalizeRows(float* data, int64_t rows, int64_t dim);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_TEXT_ENCODER_H_
