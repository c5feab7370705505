// The BERT uncased tokenizer: text clean-up (control characters dropped, whitespace made a
// space), CJK ideographs split into their own words, lower-casing with accents stripped (NFD,
// then non-spacing marks dropped), splitting on whitespace and punctuation, then greedy
// longest-match-first WordPiece with "##" continuations. A word longer than 100 characters or
// one the vocabulary cannot cover becomes [UNK]. Matches Hugging Face's BertTokenizer(Fast)
// with do_lower_case=true.
//
// Thread safety: immutable after Load; Encode may run on many threads.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_WORDPIECE_H_
#define ADAPTD_SERVER_ENCODERS_BERT_WORDPIECE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace adaptd::bert {

class WordPieceTokenizer {
 public:
  // Reads vocab.txt (one token per line, the line number is its id). It must hold [CLS],
  // [SEP] and [UNK]. Errors name the path.
  static absl::StatusOr<WordPieceTokenizer> Load(const std::string& vocab_path,
                                                 bool lower_case = true);
  // Builds from tokens in id order (tests).
  static absl::StatusOr<WordPieceTokenizer> FromTokens(std::vector<std::string> tokens,
                                                       bool lower_case = true,
                                                       const std::string& source = "vocab");

  // [CLS] pieces... [SEP], truncated so the whole fits `max_tokens` (>= 2). Invalid UTF-8
  // bytes are treated as U+FFFD and dropped as BERT drops that character.
  std::vector<int32_t> Encode(std::string_view text, int max_tokens) const;

  // The words after clean-up, lower-casing and splitting (before WordPiece), as UTF-8.
  std::vector<std::string> BasicTokenize(std::string_view text) const;

  int64_t vocab_size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::string& token(int32_t id) const { return tokens_[id]; }

 private:
  // Appends the WordPiece ids of one basic word (UTF-8, `chars` code points).
  void AppendWord(const std::string& word, size_t chars, std::vector<int32_t>& out) const;

  std::vector<std::string> tokens_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  bool lower_case_ = true;
  int32_t cls_ = 0, sep_ = 0, unk_ = 0;
};

}  // namespace adaptd::bert

#endif  // ADAPTD_SERVER_ENCODERS_BERT_WORDPIECE_H_
