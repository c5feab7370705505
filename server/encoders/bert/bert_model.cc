#include "server/encoders/bert/bert_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/bert_ops.h"

namespace adaptd::bert {
namespace {

using kernels::Trans;

// Bounds the scratch memory of one Embed call: sequences are packed into chunks of about
// this many tokens (a chunk's FFN activations take tokens × intermediate floats).
constexpr int64_t kChunkTokens = 2048;

// Activations of one chunk, kept per thread so repeated calls reuse their pages.
struct Scratch {
  std::vector<float> x, qkv, ctx, y, ffn, scores;
};

void Fit(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
}

// Self-attention per sequence and head, softmax(Q Kᵀ / √d) V, from qkv (T × 3H: query, key,
// value) into ctx (T × H); scores holds the longest sequence's L × L scores.
absl::Status Attend(kernels::Backend& backend, const float* qkv,
                    const std::vector<int64_t>& offsets, int64_t h, int64_t heads, float* scores,
                    float* ctx) {
  const int64_t d = h / heads;
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t s = 0; s < n; ++s) {
    const int64_t len = offsets[s + 1] - offsets[s];
    const float* base = qkv + offsets[s] * 3 * h;
    for (int64_t hd = 0; hd < heads; ++hd) {
      const float* q = base + hd * d;
      const float* k = base + h + hd * d;
      const float* v = base + 2 * h + hd * d;
      if (auto st = backend.Gemm(Trans::kNo, Trans::kYes, len, len, d, scale, q, 3 * h, k, 3 * h,
                                 0.0f, scores, len);
          !st.ok()) {
        return st;
      }
      SoftmaxRows(len, len, scores);
      if (auto st = backend.Gemm(Trans::kNo, Trans::kNo, len, d, len, 1.0f, scores, len, v, 3 * h,
                                 0.0f, ctx + offsets[s] * h + hd * d, h);
          !st.ok()) {
        return st;
      }
    }
  }
  return absl::OkStatus();
}

// Mean pooling over each sequence's rows of x (T × H), then L2 normalisation, into out (n × H).
void MeanPoolAndNormalize(const float* x, const std::vector<int64_t>& offsets, int64_t h,
                          float* out) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t len = offsets[s + 1] - offsets[s];
    std::vector<double> sum(h, 0.0);
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      const float* row = x + t * h;
      for (int64_t c = 0; c < h; ++c) sum[c] += row[c];
    }
    double norm2 = 0;
    for (int64_t c = 0; c < h; ++c) {
      sum[c] /= static_cast<double>(len);
      norm2 += sum[c] * sum[c];
    }
    // sentence-transformers' Normalize divides by max(‖v‖, 1e-12).
    const double inv = 1.0 / std::max(std::sqrt(norm2), 1e-12);
    for (int64_t c = 0; c < h; ++c) out[s * h + c] = static_cast<float>(sum[c] * inv);
  }
}

absl::StatusOr<int64_t> PositiveInt(const nlohmann::json& config, const char* key,
                                    const std::string& path) {
  if (!config.contains(key)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": missing field '", key, "'"));
  }
  const auto& v = config[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (1 << 24)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field '", key, "' must be a positive integer"));
  }
  return v.get<int64_t>();
}

// The tensor `name` with an optional "bert." prefix, as Float32 demands.
absl::StatusOr<std::vector<float>> Tensor(const SafetensorsFile& f, const std::string& name,
                                          const std::vector<int64_t>& shape) {
  if (!f.tensors().contains(name) && f.tensors().contains("bert." + name)) {
    return f.Float32("bert." + name, shape);
  }
  return f.Float32(name, shape);
}

}  // namespace

absl::StatusOr<BertConfig> ParseBertConfig(const std::string& json, const std::string& path) {
  nlohmann::json c = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (c.is_discarded() || !c.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  BertConfig config;
  struct Field {
    const char* key;
    int64_t* out;
  };
  for (const Field& f :
       {Field{"vocab_size", &config.vocab_size}, Field{"hidden_size", &config.hidden},
        Field{"num_hidden_layers", &config.layers}, Field{"num_attention_heads", &config.heads},
        Field{"intermediate_size", &config.intermediate},
        Field{"max_position_embeddings", &config.max_positions}}) {
    auto v = PositiveInt(c, f.key, path);
    if (!v.ok()) return v.status();
    *f.out = *v;
  }
  config.type_vocab_size = 2;
  if (c.contains("type_vocab_size")) {
    auto v = PositiveInt(c, "type_vocab_size", path);
    if (!v.ok()) return v.status();
    config.type_vocab_size = *v;
  }
  if (c.contains("layer_norm_eps")) {
    if (!c["layer_norm_eps"].is_number() || !(c["layer_norm_eps"].get<double>() > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": field 'layer_norm_eps' must be a positive number"));
    }
    config.layer_norm_eps = c["layer_norm_eps"].get<double>();
  }
  const std::string act = c.contains("hidden_act") && c["hidden_act"].is_string()
                              ? c["hidden_act"].get<std::string>()
                              : "gelu";
  if (act != "gelu") {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field 'hidden_act' is '", act,
                     "'; only 'gelu' (the exact erf form) is supported"));
  }
  if (c.contains("position_embedding_type") &&
      c["position_embedding_type"] != nlohmann::json("absolute")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field 'position_embedding_type' must be 'absolute'"));
  }
  if (config.hidden % config.heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": hidden_size ", config.hidden,
                                                   " is not a multiple of num_attention_heads ",
                                                   config.heads));
  }
  return config;
}

absl::StatusOr<std::unique_ptr<BertModel>> BertModel::Create(const BertConfig& config,
                                                             const SafetensorsFile& weights) {
  std::unique_ptr<BertModel> m(new BertModel(config));
  const int64_t h = config.hidden, inter = config.intermediate;
  absl::Status status;
  auto take = [&](std::vector<float>& dst, const std::string& name, std::vector<int64_t> shape) {
    if (!status.ok()) return;
    auto t = Tensor(weights, name, shape);
    if (!t.ok()) {
      status = t.status();
      return;
    }
    dst = std::move(*t);
  };
  take(m->word_, "embeddings.word_embeddings.weight", {config.vocab_size, h});
  take(m->position_, "embeddings.position_embeddings.weight", {config.max_positions, h});
  take(m->token_type_, "embeddings.token_type_embeddings.weight", {config.type_vocab_size, h});
  take(m->emb_ln_g_, "embeddings.LayerNorm.weight", {h});
  take(m->emb_ln_b_, "embeddings.LayerNorm.bias", {h});
  m->layers_.resize(config.layers);
  for (int64_t l = 0; l < config.layers; ++l) {
    Layer& layer = m->layers_[l];
    const std::string p = absl::StrCat("encoder.layer.", l, ".");
    std::vector<float> q, k, v, qb, kb, vb;
    take(q, p + "attention.self.query.weight", {h, h});
    take(k, p + "attention.self.key.weight", {h, h});
    take(v, p + "attention.self.value.weight", {h, h});
    take(qb, p + "attention.self.query.bias", {h});
    take(kb, p + "attention.self.key.bias", {h});
    take(vb, p + "attention.self.value.bias", {h});
    take(layer.out_w, p + "attention.output.dense.weight", {h, h});
    take(layer.out_b, p + "attention.output.dense.bias", {h});
    take(layer.ln1_g, p + "attention.output.LayerNorm.weight", {h});
    take(layer.ln1_b, p + "attention.output.LayerNorm.bias", {h});
    take(layer.inter_w, p + "intermediate.dense.weight", {inter, h});
    take(layer.inter_b, p + "intermediate.dense.bias", {inter});
    take(layer.ffn_w, p + "output.dense.weight", {h, inter});
    take(layer.ffn_b, p + "output.dense.bias", {h});
    take(layer.ln2_g, p + "output.LayerNorm.weight", {h});
    take(layer.ln2_b, p + "output.LayerNorm.bias", {h});
    if (!status.ok()) return status;
    for (auto* part : {&q, &k, &v}) {
      layer.qkv_w.insert(layer.qkv_w.end(), part->begin(), part->end());
    }
    for (auto* part : {&qb, &kb, &vb}) {
      layer.qkv_b.insert(layer.qkv_b.end(), part->begin(), part->end());
    }
    layer.qkv_p = kernels::cpu::PackedWeights::Pack(layer.qkv_w.data(), 3 * h, h, h);
    layer.out_p = kernels::cpu::PackedWeights::Pack(layer.out_w.data(), h, h, h);
    layer.inter_p = kernels::cpu::PackedWeights::Pack(layer.inter_w.data(), inter, h, h);
    layer.ffn_p = kernels::cpu::PackedWeights::Pack(layer.ffn_w.data(), h, inter, inter);
  }
  if (!status.ok()) return status;
  return m;
}

absl::Status BertModel::Embed(const std::vector<std::vector<int32_t>>& sequences,
                              kernels::Backend& backend, float* out) const {
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto& seq = sequences[i];
    if (seq.empty() || static_cast<int64_t>(seq.size()) > config_.max_positions) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", i, " has ", seq.size(),
                                                     " tokens; 1 to ", config_.max_positions,
                                                     " are allowed"));
    }
    for (int32_t id : seq) {
      if (id < 0 || id >= config_.vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("sequence ", i, ": token id ", id, " is outside the vocabulary"));
      }
    }
  }
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  size_t first = 0;
  for (size_t i = 0; i <= sequences.size(); ++i) {
    const bool full = i == sequences.size() ||
                      (offsets.size() > 1 &&
                       offsets.back() + static_cast<int64_t>(sequences[i].size()) > kChunkTokens);
    if (full && offsets.size() > 1) {
      if (auto s = EmbedPacked(ids, offsets, backend, out + first * config_.hidden); !s.ok()) {
        return s;
      }
      first = i;
      ids.clear();
      offsets.assign(1, 0);
    }
    if (i == sequences.size()) break;
    ids.insert(ids.end(), sequences[i].begin(), sequences[i].end());
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  return absl::OkStatus();
}

absl::Status BertModel::Dense(kernels::Backend& backend, const std::vector<float>& w,
                              const std::optional<kernels::cpu::PackedWeights>& packed,
                              int64_t tokens, int64_t out, int64_t in, const float* x, float* c) {
  if (packed.has_value() && backend.RunsOnHost() && kernels::cpu::PackedWeights::Pays(tokens)) {
    packed->Multiply(tokens, x, in, 1.0f, c, out);
    return absl::OkStatus();
  }
  return backend.Gemm(Trans::kNo, Trans::kYes, tokens, out, in, 1.0f, x, in, w.data(), in, 1.0f, c,
                      out);
}

// One packed chunk: offsets (n + 1 entries) delimit its sequences' rows, and the activations
// are row-major, one token per row: x, ctx and y are T × H, qkv T × 3H, ffn T × I, and scores
// holds the longest sequence's L × L attention scores.
struct BertModel::Chunk {
  const std::vector<int64_t>& offsets;
  int64_t tokens;
  float *x, *qkv, *ctx, *y, *ffn, *scores;
};

absl::Status BertModel::EmbedPacked(const std::vector<int32_t>& ids,
                                    const std::vector<int64_t>& offsets, kernels::Backend& backend,
                                    float* out) const {
  const int64_t tokens = static_cast<int64_t>(ids.size());
  const int64_t h = config_.hidden, inter = config_.intermediate;
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  int64_t longest = 0;
  for (int64_t s = 0; s < n; ++s) longest = std::max(longest, offsets[s + 1] - offsets[s]);

  thread_local Scratch scratch;
  Fit(scratch.x, tokens * h);
  Fit(scratch.qkv, tokens * 3 * h);
  Fit(scratch.ctx, tokens * h);
  Fit(scratch.y, tokens * h);
  Fit(scratch.ffn, tokens * inter);
  Fit(scratch.scores, longest * longest);
  const Chunk chunk{offsets,
                    tokens,
                    scratch.x.data(),
                    scratch.qkv.data(),
                    scratch.ctx.data(),
                    scratch.y.data(),
                    scratch.ffn.data(),
                    scratch.scores.data()};

  EmbedTokens(ids, chunk);
  for (const Layer& layer : layers_) {
    if (auto st = RunLayer(layer, backend, chunk); !st.ok()) return st;
  }
  MeanPoolAndNormalize(chunk.x, offsets, h, out);
  return absl::OkStatus();
}

void BertModel::EmbedTokens(const std::vector<int32_t>& ids, const Chunk& chunk) const {
  const int64_t h = config_.hidden;
  const std::vector<int64_t>& offsets = chunk.offsets;
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  // Word + position + token type 0, then LayerNorm.
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      const float* w = word_.data() + static_cast<int64_t>(ids[t]) * h;
      const float* p = position_.data() + (t - offsets[s]) * h;
      float* row = chunk.x + t * h;
      for (int64_t c = 0; c < h; ++c) row[c] = w[c] + p[c] + token_type_[c];
    }
  }
  BiasResidualLayerNorm(chunk.tokens, h, chunk.x, nullptr, nullptr, emb_ln_g_.data(),
                        emb_ln_b_.data(), config_.layer_norm_eps);
}

absl::Status BertModel::RunLayer(const Layer& layer, kernels::Backend& backend,
                                 const Chunk& chunk) const {
  const int64_t tokens = chunk.tokens;
  const int64_t h = config_.hidden, inter = config_.intermediate;
  const double eps = config_.layer_norm_eps;
  float* x = chunk.x;
  float* y = chunk.y;
  // Each dense layer starts C at its bias and runs the GEMM with beta = 1.
  // Q, K, V in one product: qkv (T × 3H) = x · Wqkvᵀ + b.
  BroadcastRows(tokens, 3 * h, chunk.qkv, layer.qkv_b.data());
  if (auto st = Dense(backend, layer.qkv_w, layer.qkv_p, tokens, 3 * h, h, x, chunk.qkv);
      !st.ok()) {
    return st;
  }
  if (auto st =
          Attend(backend, chunk.qkv, chunk.offsets, h, config_.heads, chunk.scores, chunk.ctx);
      !st.ok()) {
    return st;
  }
  // Output projection, residual, LayerNorm.
  BroadcastRows(tokens, h, y, layer.out_b.data());
  if (auto st = Dense(backend, layer.out_w, layer.out_p, tokens, h, h, chunk.ctx, y); !st.ok()) {
    return st;
  }
  BiasResidualLayerNorm(tokens, h, y, nullptr, x, layer.ln1_g.data(), layer.ln1_b.data(), eps);
  // Feed-forward: GELU(y · W1ᵀ + b1) · W2ᵀ + b2, residual, LayerNorm.
  float* ffn = chunk.ffn;
  BroadcastRows(tokens, inter, ffn, layer.inter_b.data());
  if (auto st = Dense(backend, layer.inter_w, layer.inter_p, tokens, inter, h, y, ffn); !st.ok()) {
    return st;
  }
  BiasGelu(tokens, inter, ffn, nullptr);
  BroadcastRows(tokens, h, x, layer.ffn_b.data());
  if (auto st = Dense(backend, layer.ffn_w, layer.ffn_p, tokens, h, inter, ffn, x); !st.ok()) {
    return st;
  }
  BiasResidualLayerNorm(tokens, h, x, nullptr, y, layer.ln2_g.data(), layer.ln2_b.data(), eps);
  return absl::OkStatus();
}

}  // namespace adaptd::bert
