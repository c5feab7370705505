// OnnxTextInput: the onnx encoder's text input (docs/ONNX.md, "Inputs"). Texts are tokenized
// with the WordPiece tokenizer of server/encoders/bert over the vocab.txt beside the model (any
// other tokenizer's files there are refused at start, named), truncated to max_tokens ([CLS]
// and [SEP] included), and fed as int64 [batch, tokens] tensors input_ids, attention_mask and,
// when the model has it, token_type_ids (zeros). A [batch, tokens, dim] float output is pooled
// to one row per text (mean over the attention mask, or the first token); a [batch, dim]
// output is taken as it is.
//
// Batches are sorted by token count and cut into sub-batches of at most max_batch texts whose
// padded size (texts × the longest) stays within twice their real tokens, so one long text
// never pads many short ones. A model whose sequence dimension is fixed gets every text padded
// to it. Immutable after Create; Encode is const and safe to call from many threads.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEXT_INPUT_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEXT_INPUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/base/stable_hash.h"
#include "server/encoders/bert/wordpiece.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {

class OnnxTextInput {
 public:
  // Binds `model`'s tensors and loads the tokenizer. A missing vocab.txt, another tokenizer's
  // files, a tensor of the wrong type or rank, or a model input other than the three is
  // FailedPrecondition naming the file or tensor; a bad setting is InvalidArgument naming
  // `field`.<setting>.
  static absl::StatusOr<std::unique_ptr<OnnxTextInput>> Create(
      const OrtModel& model, const adapt::v1::EncoderConfig& config, const std::string& field);

  int64_t dim() const { return dim_; }
  int max_tokens() const { return max_tokens_; }
  // 1 when the model's batch dimension is fixed at 1, else 0 (any).
  int64_t fixed_batch() const { return fixed_batch_; }
  const std::string& output_tensor() const { return output_; }
  // The settings and files that change a key: tensor names, max_tokens, pooling, casing and
  // the vocabulary's bytes.
  absl::Status AddToFingerprint(Fnv1a64* hash) const;

  // Token ids of one text, truncated to max_tokens; *truncated set when it was.
  std::vector<int32_t> Tokenize(std::string_view text, bool* truncated) const;

  // Encodes `texts` into `out` (texts.size() × dim(), row-major, in the order given), at most
  // `max_batch` texts per run. Returns the indices (ascending) of the texts truncated.
  absl::StatusOr<std::vector<int64_t>> Encode(const OrtModel& model,
                                              const std::vector<std::string_view>& texts,
                                              int64_t max_batch, float* out) const;

  // Sub-batches of `lengths` (token counts): index lists, each sorted by length, at most
  // `max_batch` long, padded size within twice the real tokens (docs/ONNX.md). Pure.
  static std::vector<std::vector<size_t>> SubBatches(const std::vector<size_t>& lengths,
                                                     int64_t max_batch);

 private:
  OnnxTextInput() = default;

  absl::Status BindTensors(const OrtModel& model, const adapt::v1::EncoderConfig& config,
                           const std::string& field);
  // BindTensors' second half: the output tensor, pooling and max_tokens.
  absl::Status BindOutput(const OrtModel& model, const adapt::v1::EncoderConfig& config,
                          const std::string& field, const std::string& context);
  absl::Status LoadTokenizer(const std::string& model_path);
  // Runs the texts `rows` (token ids) as one batch and writes their pooled rows to `out`
  // (rows.size() × dim_).
  absl::Status RunBatch(const OrtModel& model, const std::vector<const std::vector<int32_t>*>& rows,
                        float* out) const;

  std::unique_ptr<bert::WordPieceTokenizer> tokenizer_;
  std::string vocab_path_;
  bool lower_case_ = true;
  int32_t pad_id_ = 0;
  std::string input_ids_ = "input_ids";
  std::string attention_mask_ = "attention_mask";
  std::string token_type_ids_;  // empty when the model has none
  std::string output_;
  bool pooled_output_ = false;  // [batch, dim]: no pooling
  bool first_token_ = false;    // pooling "first" rather than "mean"
  int max_tokens_ = 0;
  int64_t fixed_tokens_ = 0;  // the model's fixed sequence dimension; 0: dynamic
  int64_t fixed_batch_ = 0;
  int64_t dim_ = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_TEXT_INPUT_H_
