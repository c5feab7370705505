#include "server/encoders/bert/test_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace adaptd::bert::testing {

std::string SerializeSafetensors(const TensorMap& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const auto& [name, t] : tensors) {
    int64_t count = 1;
    for (int64_t d : t.shape) count *= d;
    const size_t elem = t.dtype == "I64" ? 8 : 4;
    const size_t begin = data.size();
    if (t.dtype == "F32") {
      data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
    } else {
      data.append(count * elem, '\0');
    }
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  std::string out(8, '\0');
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h + data;
}

BertConfig TinyConfig() {
  BertConfig c;
  c.vocab_size = 40;
  c.hidden = 16;
  c.layers = 2;
  c.heads = 4;
  c.intermediate = 32;
  c.max_positions = 24;
  c.type_vocab_size = 2;
  c.layer_norm_eps = 1e-12;
  return c;
}

TensorMap RandomWeights(const BertConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  TensorMap m;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale,
                 float offset = 0.f) {
    std::uniform_real_distribution<float> u(-scale, scale);
    RawTensor t;
    t.shape = shape;
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    t.values.resize(count);
    for (float& v : t.values) v = offset + u(rng);
    m[name] = std::move(t);
  };
  const int64_t h = c.hidden, i = c.intermediate;
  add("embeddings.word_embeddings.weight", {c.vocab_size, h}, 1.0f);
  add("embeddings.position_embeddings.weight", {c.max_positions, h}, 0.5f);
  add("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h}, 0.5f);
  add("embeddings.LayerNorm.weight", {h}, 0.2f, 1.0f);
  add("embeddings.LayerNorm.bias", {h}, 0.2f);
  m["embeddings.position_ids"] = RawTensor{"I64", {1, c.max_positions}, {}};
  const float wh = 1.7f / std::sqrt(static_cast<float>(h));
  const float wi = 1.7f / std::sqrt(static_cast<float>(i));
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = absl::StrCat("encoder.layer.", l, ".");
    for (const char* qkv : {"query", "key", "value"}) {
      add(p + "attention.self." + qkv + ".weight", {h, h}, wh);
      add(p + "attention.self." + qkv + ".bias", {h}, 0.2f);
    }
    add(p + "attention.output.dense.weight", {h, h}, wh);
    add(p + "attention.output.dense.bias", {h}, 0.2f);
    add(p + "attention.output.LayerNorm.weight", {h}, 0.2f, 1.0f);
    add(p + "attention.output.LayerNorm.bias", {h}, 0.2f);
    add(p + "intermediate.dense.weight", {i, h}, wh);
    add(p + "intermediate.dense.bias", {i}, 0.2f);
    add(p + "output.dense.weight", {h, i}, wi);
    add(p + "output.dense.bias", {h}, 0.2f);
    add(p + "output.LayerNorm.weight", {h}, 0.2f, 1.0f);
    add(p + "output.LayerNorm.bias", {h}, 0.2f);
  }
  return m;
}

std::string ConfigJson(const BertConfig& c) {
  nlohmann::json j = {{"architectures", {"BertModel"}},
                      {"hidden_act", "gelu"},
                      {"hidden_size", c.hidden},
                      {"intermediate_size", c.intermediate},
                      {"layer_norm_eps", c.layer_norm_eps},
                      {"max_position_embeddings", c.max_positions},
                      {"model_type", "bert"},
                      {"num_attention_heads", c.heads},
                      {"num_hidden_layers", c.layers},
                      {"position_embedding_type", "absolute"},
                      {"type_vocab_size", c.type_vocab_size},
                      {"vocab_size", c.vocab_size}};
  return j.dump(2);
}

std::vector<std::string> Vocab(const std::vector<std::string>& words) {
  std::vector<std::string> v{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  v.insert(v.end(), words.begin(), words.end());
  return v;
}

namespace {
void Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}
}  // namespace

void WriteModelDir(const std::string& dir, const BertConfig& config, const TensorMap& weights,
                   const std::vector<std::string>& vocab, bool extras) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  Write(fs::path(dir) / "config.json", ConfigJson(config));
  std::string v;
  for (const auto& t : vocab) v += t + "\n";
  Write(fs::path(dir) / "vocab.txt", v);
  Write(fs::path(dir) / "model.safetensors", SerializeSafetensors(weights));
  if (extras) {
    fs::create_directories(fs::path(dir) / "1_Pooling");
    Write(fs::path(dir) / "1_Pooling" / "config.json",
          R"({"word_embedding_dimension": 16, "pooling_mode_cls_token": false,
              "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
              "pooling_mode_mean_sqrt_len_tokens": false})");
    Write(fs::path(dir) / "sentence_bert_config.json",
          R"({"max_seq_length": 20, "do_lower_case": false})");
    Write(fs::path(dir) / "tokenizer_config.json", R"({"do_lower_case": true})");
  }
}

namespace {

using Mat = std::vector<double>;  // row-major

const std::vector<float>& W(const TensorMap& m, const std::string& name) {
  return m.at(name).values;
}

// y (n × out) = x (n × in) · wᵀ + b, with w [out × in].
Mat Dense(const Mat& x, int64_t n, int64_t in, const std::vector<float>& w,
          const std::vector<float>& b, int64_t out) {
  Mat y(n * out);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (int64_t k = 0; k < in; ++k) s += x[r * in + k] * static_cast<double>(w[o * in + k]);
      y[r * out + o] = s;
    }
  }
  return y;
}

void LayerNorm(Mat& x, int64_t n, int64_t h, const std::vector<float>& g,
               const std::vector<float>& b, double eps) {
  for (int64_t r = 0; r < n; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < h; ++c) mean += x[r * h + c];
    mean /= h;
    for (int64_t c = 0; c < h; ++c) var += (x[r * h + c] - mean) * (x[r * h + c] - mean);
    var /= h;
    for (int64_t c = 0; c < h; ++c) {
      x[r * h + c] = (x[r * h + c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
    }
  }
}

}  // namespace

std::vector<double> ReferenceEmbed(const BertConfig& c, const TensorMap& m,
                                   const std::vector<int32_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size()), h = c.hidden, in = c.intermediate;
  const int64_t heads = c.heads, d = h / heads;
  Mat x(n * h);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t k = 0; k < h; ++k) {
      x[t * h + k] =
          static_cast<double>(W(m, "embeddings.word_embeddings.weight")[ids[t] * h + k]) +
          W(m, "embeddings.position_embeddings.weight")[t * h + k] +
          W(m, "embeddings.token_type_embeddings.weight")[k];
    }
  }
  LayerNorm(x, n, h, W(m, "embeddings.LayerNorm.weight"), W(m, "embeddings.LayerNorm.bias"),
            c.layer_norm_eps);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = absl::StrCat("encoder.layer.", l, ".");
    auto dense = [&](const Mat& in_x, int64_t in_dim, const std::string& name, int64_t out_dim) {
      return Dense(in_x, n, in_dim, W(m, p + name + ".weight"), W(m, p + name + ".bias"), out_dim);
    };
    Mat q = dense(x, h, "attention.self.query", h);
    Mat k = dense(x, h, "attention.self.key", h);
    Mat v = dense(x, h, "attention.self.value", h);
    Mat ctx(n * h, 0.0);
    for (int64_t hd = 0; hd < heads; ++hd) {
      for (int64_t i = 0; i < n; ++i) {
        std::vector<double> s(n);
        double mx = -1e300;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q[i * h + hd * d + e] * k[j * h + hd * d + e];
          s[j] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t e = 0; e < d; ++e)
            ctx[i * h + hd * d + e] += s[j] / sum * v[j * h + hd * d + e];
        }
      }
    }
    Mat a = dense(ctx, h, "attention.output.dense", h);
    for (int64_t i = 0; i < n * h; ++i) a[i] += x[i];
    LayerNorm(a, n, h, W(m, p + "attention.output.LayerNorm.weight"),
              W(m, p + "attention.output.LayerNorm.bias"), c.layer_norm_eps);
    Mat f = dense(a, h, "intermediate.dense", in);
    for (double& e : f) e = 0.5 * e * (1.0 + std::erf(e / std::sqrt(2.0)));
    Mat o = dense(f, in, "output.dense", h);
    for (int64_t i = 0; i < n * h; ++i) o[i] += a[i];
    LayerNorm(o, n, h, W(m, p + "output.LayerNorm.weight"), W(m, p + "output.LayerNorm.bias"),
              c.layer_norm_eps);
    x = std::move(o);
  }
  std::vector<double> pooled(h, 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t k = 0; k < h; ++k) pooled[k] += x[t * h + k] / n;
  }
  double norm = 0;
  for (double e : pooled) norm += e * e;
  norm = std::sqrt(norm);
  for (double& e : pooled) e /= norm;
  return pooled;
}

std::string TempDir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("adaptd_bert_", info->test_suite_name(), "_", info->name(), "_", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace adaptd::bert::testing
