// fasttext: a fastText model (.bin, or a quantized .ftz) read with libfasttext; a text is
// encoded as the model's sentence vector, exactly as `fasttext print-sentence-vectors` prints
// it for the same text on one line (FastText::getSentenceVector: for a supervised model the
// mean of the input vectors of the line's words, subwords, word n-grams and end-of-line
// token; otherwise the mean of the unit-normalised word vectors). Line breaks in a text are
// read as spaces. With `normalize` the result is also L2-normalised.
//
// Thread safety: the model is read-only after loading; Encode may run concurrently.
#ifndef ADAPTD_SERVER_ENCODERS_FASTTEXT_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_FASTTEXT_ENCODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/encoders/text_encoder.h"

namespace fasttext {
class FastText;
}

namespace adaptd {

class FastTextEncoder final : public TextEncoder {
 public:
  // Loads config.model_path. A missing or unreadable model is FailedPrecondition whose
  // message names `field`, the encoder and the path.
  static absl::StatusOr<std::unique_ptr<FastTextEncoder>> Create(
      const adapt::v1::EncoderConfig& config, const std::string& field);
  ~FastTextEncoder() override;

  const adapt::v1::EncoderInfo& info() const override { return info_; }
  absl::Status EncodeTexts(const std::vector<std::string_view>& texts, float* out) const override;

 private:
  FastTextEncoder();

  adapt::v1::EncoderInfo info_;
  std::unique_ptr<fasttext::FastText> model_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_FASTTEXT_ENCODER_H_
