// Test support: a tiny random BERT in the sentence-transformers layout, written to disk, and a
// float64 reference forward pass to check the float implementation against.
#ifndef ADAPTD_SERVER_ENCODERS_BERT_TEST_MODEL_H_
#define ADAPTD_SERVER_ENCODERS_BERT_TEST_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "server/encoders/bert/bert_model.h"

namespace adaptd::bert::testing {

struct RawTensor {
  std::string dtype = "F32";
  std::vector<int64_t> shape;
  std::vector<float> values;  // F32 data; other dtypes get zero bytes of the right size
};

using TensorMap = std::map<std::string, RawTensor>;

// A safetensors file holding `tensors` (in name order).
std::string SerializeSafetensors(const TensorMap& tensors);

// Random weights (uniform, scaled like an initialised BERT) for `config`, with an I64
// position_ids tensor as real checkpoints have.
TensorMap RandomWeights(const BertConfig& config, uint32_t seed);

BertConfig TinyConfig();
// config.json text for `config`.
std::string ConfigJson(const BertConfig& config);
// A vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK], then `words`.
std::vector<std::string> Vocab(const std::vector<std::string>& words);

// Writes config.json, vocab.txt, model.safetensors (and the sentence-transformers extras when
// `extras`) into `dir`, which is created.
void WriteModelDir(const std::string& dir, const BertConfig& config, const TensorMap& weights,
                   const std::vector<std::string>& vocab, bool extras = true);

// The float64 forward pass: mean-pooled, L2-normalised embedding of `ids`.
std::vector<double> ReferenceEmbed(const BertConfig& config, const TensorMap& weights,
                                   const std::vector<int32_t>& ids);

// A fresh directory under the test's temporary directory.
std::string TempDir(const std::string& name);

}  // namespace adaptd::bert::testing

#endif  // ADAPTD_SERVER_ENCODERS_BERT_TEST_MODEL_H_
