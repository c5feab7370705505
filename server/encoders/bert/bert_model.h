// A BERT encoder stack (embeddings, N post-LayerNorm transformer layers) with mean pooling and
// L2 normalisation: the forward pass of a sentence-transformers model such as all-MiniLM-L6-v2.
// Every dense product runs as a float GEMM on a kernels::Backend; the element-wise parts
// (bias, GELU, LayerNorm, softmax) run on the host.
//
// Sequences are packed: a batch's tokens are stacked without padding (T rows in all), so the
// dense layers do no work on padding and each sequence attends only to its own rows, which is
// what a padding mask achieves.
//
// Layout: activations are row-major, one token per row. Dense weights are stored as the
// checkpoint has them, [out × in], and applied as X·Wᵀ. On a host backend with AVX2 or
// AVX-512 they are also packed once (kernels/cpu/packed_gemm.h) and the dense products of a
// few rows run on the packed copy: BLAS would repack the weights on every call, which for the
// rows of a short text costs more than the product itself. Longer chunks, and other backends,
// get the backend's Gemm.
//
// Thread safety: immutable after Create; Embed may run on many threads at once (scratch
// buffers belong to the call).
#ifndef ADAPTD_SERVER_ENCODERS_BERT_BERT_MODEL_H_
#define ADAPTD_SERVER_ENCODERS_BERT_BERT_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/cpu/packed_gemm.h"
#include "server/encoders/bert/safetensors.h"

namespace adaptd::bert {

struct BertConfig {
  int64_t vocab_size = 0;
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t intermediate = 0;
  int64_t max_positions = 0;
  int64_t type_vocab_size = 0;
  double layer_norm_eps = 1e-12;
};

// Parses a Hugging Face config.json (BertModel). Only hidden_act "gelu" (the exact erf form)
// and absolute position embeddings are supported. Errors name `path` and the field.
absl::StatusOr<BertConfig> ParseBertConfig(const std::string& json, const std::string& path);

class BertModel {
 public:
  // Takes the weights (names as Hugging Face's BertModel saves them, with or without a
  // "bert." prefix) out of `weights`, checking each tensor's presence and shape.
  static absl::StatusOr<std::unique_ptr<BertModel>> Create(const BertConfig& config,
                                                           const SafetensorsFile& weights);

  // Embeds each token sequence (ids < vocab_size, 1..max_positions long): `out` receives
  // sequences.size() × hidden floats, mean-pooled over each sequence and L2-normalised.
  absl::Status Embed(const std::vector<std::vector<int32_t>>& sequences, kernels::Backend& backend,
                     float* out) const;

  const BertConfig& config() const { return config_; }

 private:
  struct Layer {
    std::vector<float> qkv_w, qkv_b;  // [3H × H], [3H]: query, key, value stacked
    std::vector<float> out_w, out_b;  // [H × H], [H]
    std::vector<float> ln1_g, ln1_b;
    std::vector<float> inter_w, inter_b;  // [I × H], [I]
    std::vector<float> ffn_w, ffn_b;      // [H × I], [H]
    std::vector<float> ln2_g, ln2_b;
    // The four dense weights packed for the host (none where the CPU has neither AVX2 nor
    // AVX-512).
    std::optional<kernels::cpu::PackedWeights> qkv_p, out_p, inter_p, ffn_p;
  };

  // C (tokens × out) = X·Wᵀ + C: on the packed copy when `backend` runs on the host, one
  // exists and it pays for this many tokens (PackedWeights::Pays), else the backend's Gemm.
  static absl::Status Dense(kernels::Backend& backend, const std::vector<float>& w,
                            const std::optional<kernels::cpu::PackedWeights>& packed,
                            int64_t tokens, int64_t out, int64_t in, const float* x, float* c);

  explicit BertModel(const BertConfig& config) : config_(config) {}

  // Runs one packed chunk: `offsets` (n + 1 entries) delimit the sequences in `ids`.
  absl::Status EmbedPacked(const std::vector<int32_t>& ids, const std::vector<int64_t>& offsets,
                           kernels::Backend& backend, float* out) const;

  // A chunk's sequence offsets and activation buffers (bert_model.cc).
  struct Chunk;
  // The steps of EmbedPacked: the embeddings of each token into chunk.x, LayerNormed; one
  // transformer layer, chunk.x in and out.
  void EmbedTokens(const std::vector<int32_t>& ids, const Chunk& chunk) const;
  absl::Status RunLayer(const Layer& layer, kernels::Backend& backend, const Chunk& chunk) const;

  BertConfig config_;
  std::vector<float> word_, position_, token_type_, emb_ln_g_, emb_ln_b_;
  std::vector<Layer> layers_;
};

}  // namespace adaptd::bert

#endif  // ADAPTD_SERVER_ENCODERS_BERT_BERT_MODEL_H_
