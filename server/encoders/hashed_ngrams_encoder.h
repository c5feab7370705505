// hashed_ngrams: a text encoder with no model. A text is lower-cased (unicode.h) and split into
// words (maximal runs of word characters); its features are the words, the word n-grams up
// to `word_ngrams` (words joined by one space), and the character n-grams of lengths
// [char_ngram_min, char_ngram_max] (in code points) of each word wrapped in '<' and '>'.
// Each feature string, prefixed by its kind ("w:", "b:", "c:"), is hashed with
// h = fmix64(FNV-1a 64(UTF-8 bytes)); it adds sign·(1 + ln tf) to bucket h mod dim, with sign
// + when bit 63 of h is 0 and - otherwise, tf being the feature's count in the text. The
// vector is then L2-normalised. docs/ENCODERS.md has the exact rules.
//
// Thread safety: immutable after construction.
#ifndef ADAPTD_SERVER_ENCODERS_HASHED_NGRAMS_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_HASHED_NGRAMS_ENCODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/encoders/text_encoder.h"

namespace adaptd {

class HashedNgramsEncoder final : public TextEncoder {
 public:
  static constexpr uint32_t kDefaultDim = 4096;

  // InvalidArgument naming `field` (e.g. "encoders[2]") for parameters out of range.
  static absl::StatusOr<std::unique_ptr<HashedNgramsEncoder>> Create(
      const adapt::v1::EncoderConfig& config, const std::string& field);

  const adapt::v1::EncoderInfo& info() const override { return info_; }
  absl::Status EncodeTexts(const std::vector<std::string_view>& texts, float* out) const override;

 private:
  HashedNgramsEncoder() = default;
  void EncodeOne(std::string_view text, float* out) const;

  adapt::v1::EncoderInfo info_;
  uint32_t char_min_ = 3, char_max_ = 5, word_ngrams_ = 2;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_HASHED_NGRAMS_ENCODER_H_
