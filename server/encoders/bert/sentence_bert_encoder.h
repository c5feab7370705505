// The `sentence_bert` encoder: texts to sentence embeddings with a BERT-family model in the
// sentence-transformers layout (config.json, vocab.txt, model.safetensors, optionally
// tokenizer_config.json, sentence_bert_config.json and 1_Pooling/config.json), e.g.
// all-MiniLM-L6-v2. WordPiece tokenisation, the transformer on the compute backend, mean
// pooling, L2 normalisation. docs/SENTENCE_BERT.md describes it.
//
// Thread safety: immutable after creation; Encode may run on many threads.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_SENTENCE_BERT_ENCODER_H_
#define ADAPTD_SERVER_ENCODERS_BERT_SENTENCE_BERT_ENCODER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "kernels/backend.h"
#include "server/encoders/encoder.h"

namespace adaptd {

// Loads the model in `config.model_path`. Errors start with `field` (e.g. "encoders[2]") and
// name the file and what is wrong (missing file, bad header, missing tensor, shape mismatch);
// `backend` must be non-null and outlive the encoder.
absl::StatusOr<std::unique_ptr<Encoder>> MakeSentenceBertEncoder(
    const adapt::v1::EncoderConfig& config, const std::string& field, kernels::Backend* backend);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_BERT_SENTENCE_BERT_ENCODER_H_
