#include "server/encoders/hashed_ngrams_encoder.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/encoders/fingerprint.h"
#include "server/encoders/unicode.h"

namespace adaptd {
namespace {

constexpr uint32_t kMaxDim = 1u << 22;
constexpr uint32_t kMaxCharNgram = 16;
constexpr uint32_t kMaxWordNgrams = 5;

// The hash state after a kind prefix such as "w:".
uint64_t PrefixState(const char* prefix) {
  Fnv1a64 h;
  h.Add(prefix);
  return h.value();
}

inline uint64_t Feed(uint64_t state, absl::string_view bytes) {
  for (unsigned char b : bytes) state = (state ^ b) * kFnv1a64Prime;
  return state;
}

// The text's words as UTF-8 of their lower-cased code points, and for each word the byte
// offset of each code point plus the end.
void SplitLowercaseWords(std::string_view text, std::vector<std::string>* words,
                         std::vector<std::vector<uint32_t>>* offsets) {
  std::u32string cps;
  cps.reserve(text.size());
  // Checked by TextEncoder::Encode; a failure here would only shorten the text.
  DecodeUtf8(absl::string_view(text.data(), text.size()), &cps);
  std::string word;
  std::vector<uint32_t> word_offsets;
  auto flush = [&] {
    if (word.empty()) return;
    word_offsets.push_back(static_cast<uint32_t>(word.size()));
    words->push_back(std::move(word));
    offsets->push_back(std::move(word_offsets));
    word.clear();
    word_offsets.clear();
  };
  for (char32_t c : cps) {
    const char32_t lower = ToLower(c);
    if (!IsWordChar(lower)) {
      flush();
      continue;
    }
    word_offsets.push_back(static_cast<uint32_t>(word.size()));
    AppendUtf8(lower, &word);
  }
  flush();
}

// Appends the hash of every feature occurrence: each word, the word n-grams of 2..word_ngrams
// words, and the character n-grams of char_min..char_max code points of each "<word>".
void AppendFeatureHashes(const std::vector<std::string>& words,
                         const std::vector<std::vector<uint32_t>>& offsets, uint32_t word_ngrams,
                         uint32_t char_min, uint32_t char_max, std::vector<uint64_t>* hashes) {
  static const uint64_t kWord = PrefixState("w:");
  static const uint64_t kNgram = PrefixState("b:");
  static const uint64_t kChar = PrefixState("c:");
  for (size_t w = 0; w < words.size(); ++w) {
    if (word_ngrams >= 1) hashes->push_back(Fmix64(Feed(kWord, words[w])));
    // Word n-grams of 2..word_ngrams words starting here.
    uint64_t state = Feed(kNgram, words[w]);
    for (uint32_t n = 2; n <= word_ngrams && w + n - 1 < words.size(); ++n) {
      state = Feed(state, " ");
      state = Feed(state, words[w + n - 1]);
      hashes->push_back(Fmix64(state));
    }
    if (char_max == 0) continue;
    // "<word>": code point i of the wrapped word is '<' (i = 0), the word's (1..len) or '>'.
    const std::string& bytes = words[w];
    const std::vector<uint32_t>& at = offsets[w];
    const size_t len = at.size() - 1;  // code points in the word
    const size_t wrapped = len + 2;
    auto piece = [&](size_t i) -> absl::string_view {
      if (i == 0) return "<";
      if (i == wrapped - 1) return ">";
      return absl::string_view(bytes.data() + at[i - 1], at[i] - at[i - 1]);
    };
    for (size_t start = 0; start < wrapped; ++start) {
      uint64_t s = kChar;
      for (size_t n = 1; n <= char_max && start + n <= wrapped; ++n) {
        s = Feed(s, piece(start + n - 1));
        if (n >= char_min) hashes->push_back(Fmix64(s));
      }
    }
  }
}

// Writes the L2-normalized sum of the features into their buckets of out (d floats); sorts
// hashes. Sorted, equal hashes are one feature's count (a 64-bit collision of two distinct features
// is not worth a string comparison). Summing in hash order keeps the result the same bit for bit on
// every run.
void WriteNormalizedFeatures(std::vector<uint64_t>& hashes, uint64_t d, float* out) {
  std::sort(hashes.begin(), hashes.end());
  // (bucket, hash, value) of each distinct feature, then summed per bucket in (bucket, hash)
  // order: sparse, and the same sums in the same order on every run.
  struct Term {
    uint64_t bucket, hash;
    double value;
  };
  std::vector<Term> terms;
  terms.reserve(hashes.size());
  for (size_t i = 0; i < hashes.size();) {
    const uint64_t h = hashes[i];
    size_t j = i + 1;
    while (j < hashes.size() && hashes[j] == h) ++j;
    const double value = 1.0 + std::log(static_cast<double>(j - i));
    terms.push_back({h % d, h, (h >> 63) ? -value : value});
    i = j;
  }
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return a.bucket < b.bucket || (a.bucket == b.bucket && a.hash < b.hash);
  });
  std::vector<std::pair<uint64_t, double>> sums;
  sums.reserve(terms.size());
  double norm2 = 0;
  for (size_t i = 0; i < terms.size();) {
    double sum = 0;
    size_t j = i;
    for (; j < terms.size() && terms[j].bucket == terms[i].bucket; ++j) sum += terms[j].value;
    sums.emplace_back(terms[i].bucket, sum);
    norm2 += sum * sum;
    i = j;
  }
  const double scale = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 0.0;
  for (const auto& [bucket, sum] : sums) out[bucket] = static_cast<float>(sum * scale);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HashedNgramsEncoder>> HashedNgramsEncoder::Create(
    const adapt::v1::EncoderConfig& config, const std::string& field) {
  auto encoder = std::unique_ptr<HashedNgramsEncoder>(new HashedNgramsEncoder());
  const uint32_t dim = config.dim() == 0 ? kDefaultDim : config.dim();
  if (dim > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dim: at most ", kMaxDim, " for hashed_ngrams, got ", dim));
  }
  if (config.has_char_ngram_min()) encoder->char_min_ = config.char_ngram_min();
  if (config.has_char_ngram_max()) encoder->char_max_ = config.char_ngram_max();
  if (config.has_word_ngrams()) encoder->word_ngrams_ = config.word_ngrams();
  if (encoder->char_max_ > kMaxCharNgram ||
      (encoder->char_max_ > 0 &&
       (encoder->char_min_ < 1 || encoder->char_min_ > encoder->char_max_))) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".char_ngram_min/char_ngram_max: need 1 <= min <= max <= ", kMaxCharNgram,
        " (or max 0 for no character n-grams), got ", encoder->char_min_, " and ",
        encoder->char_max_));
  }
  if (encoder->word_ngrams_ > kMaxWordNgrams ||
      (encoder->word_ngrams_ == 0 && encoder->char_max_ == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".word_ngrams: must be in [0, ", kMaxWordNgrams,
                     "], and not 0 when character n-grams are off; got ", encoder->word_ngrams_));
  }
  if (encoder->char_max_ == 0) encoder->char_min_ = 0;
  adapt::v1::EncoderInfo& info = encoder->info_;
  info.set_name(config.name());
  info.set_type("hashed_ngrams");
  info.set_input_kind("text");
  info.set_dim(dim);
  info.set_normalize(true);
  Fnv1a64 hash;
  hash.Add(absl::StrCat("hashed_ngrams/v1\ndim=", dim, "\nchar_ngram_min=", encoder->char_min_,
                        "\nchar_ngram_max=", encoder->char_max_,
                        "\nword_ngrams=", encoder->word_ngrams_, "\n"));
  info.set_fingerprint(FormatFingerprint("hashed_ngrams", hash.value()));
  return encoder;
}

absl::Status HashedNgramsEncoder::EncodeTexts(const std::vector<std::string_view>& texts,
                                              float* out) const {
  const int64_t d = info_.dim();
  for (size_t i = 0; i < texts.size(); ++i) EncodeOne(texts[i], out + i * d);
  return absl::OkStatus();
}

void HashedNgramsEncoder::EncodeOne(std::string_view text, float* out) const {
  std::vector<std::string> words;
  std::vector<std::vector<uint32_t>> offsets;
  SplitLowercaseWords(text, &words, &offsets);
  std::vector<uint64_t> hashes;
  hashes.reserve(words.size() * 16);
  AppendFeatureHashes(words, offsets, word_ngrams_, char_min_, char_max_, &hashes);
  WriteNormalizedFeatures(hashes, static_cast<uint64_t>(info_.dim()), out);
}

}  // namespace adaptd
