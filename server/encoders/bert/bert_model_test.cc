#include "server/encoders/bert/bert_model.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "server/encoders/bert/test_model.h"

namespace adaptd::bert {
namespace {

std::unique_ptr<BertModel> Load(const BertConfig& config, const testing::TensorMap& weights) {
  auto file = SafetensorsFile::Parse(testing::SerializeSafetensors(weights), "tiny");
  EXPECT_TRUE(file.ok()) << file.status();
  auto model = BertModel::Create(config, *file);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

TEST(BertModelTest, PackedBatchMatchesTheFloat64Reference) {
  const BertConfig config = testing::TinyConfig();
  const auto weights = testing::RandomWeights(config, 7);
  auto model = Load(config, weights);
  ASSERT_NE(model, nullptr);
  auto backend = kernels::MakeCpuBackend();

  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> sequences;
  // Lengths 1, 2, the longest allowed, and random ones in between.
  for (int len : {1, 2, static_cast<int>(config.max_positions), 5, 13, 3, 24, 9}) {
    std::vector<int32_t> ids(len);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % config.vocab_size);
    sequences.push_back(ids);
  }
  std::vector<float> out(sequences.size() * config.hidden);
  ASSERT_TRUE(model->Embed(sequences, *backend, out.data()).ok());
  for (size_t s = 0; s < sequences.size(); ++s) {
    const auto want = testing::ReferenceEmbed(config, weights, sequences[s]);
    for (int64_t c = 0; c < config.hidden; ++c) {
      EXPECT_NEAR(out[s * config.hidden + c], want[c], 2e-5) << "sequence " << s << " col " << c;
    }
  }
}

TEST(BertModelTest, BatchesSpanningSeveralChunksMatchOneByOne) {
  const BertConfig config = testing::TinyConfig();
  const auto weights = testing::RandomWeights(config, 8);
  auto model = Load(config, weights);
  ASSERT_NE(model, nullptr);
  auto backend = kernels::MakeCpuBackend();
  std::mt19937 rng(4);
  std::vector<std::vector<int32_t>> sequences(400);  // about 5000 tokens: two chunks
  for (auto& seq : sequences) {
    seq.resize(1 + rng() % config.max_positions);
    for (auto& id : seq) id = static_cast<int32_t>(rng() % config.vocab_size);
  }
  std::vector<float> all(sequences.size() * config.hidden);
  ASSERT_TRUE(model->Embed(sequences, *backend, all.data()).ok());
  for (size_t s = 0; s < sequences.size(); s += 37) {
    std::vector<float> one(config.hidden);
    ASSERT_TRUE(model->Embed({sequences[s]}, *backend, one.data()).ok());
    for (int64_t c = 0; c < config.hidden; ++c) {
      EXPECT_NEAR(all[s * config.hidden + c], one[c], 1e-6);
    }
    double norm = 0;
    for (float v : one) norm += static_cast<double>(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
}

TEST(BertModelTest, RejectsBadSequences) {
  const BertConfig config = testing::TinyConfig();
  auto model = Load(config, testing::RandomWeights(config, 9));
  ASSERT_NE(model, nullptr);
  auto backend = kernels::MakeCpuBackend();
  std::vector<float> out(2 * config.hidden);
  EXPECT_FALSE(model->Embed({{1, 2}, {}}, *backend, out.data()).ok());
  EXPECT_FALSE(
      model->Embed({{1, static_cast<int32_t>(config.vocab_size)}}, *backend, out.data()).ok());
  EXPECT_FALSE(model->Embed({{-1}}, *backend, out.data()).ok());
  EXPECT_FALSE(
      model->Embed({std::vector<int32_t>(config.max_positions + 1, 1)}, *backend, out.data()).ok());
}

TEST(BertModelTest, CreateNamesTheMissingOrMisshapenTensor) {
  const BertConfig config = testing::TinyConfig();
  auto weights = testing::RandomWeights(config, 10);
  weights.erase("encoder.layer.1.output.dense.bias");
  auto file =
      SafetensorsFile::Parse(testing::SerializeSafetensors(weights), "/x/model.safetensors");
  ASSERT_TRUE(file.ok());
  auto model = BertModel::Create(config, *file);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(model.status().message().find(
                "/x/model.safetensors: missing tensor 'encoder.layer.1.output.dense.bias'"),
            std::string::npos)
      << model.status();

  BertConfig wider = config;
  wider.intermediate = 48;
  auto file2 = SafetensorsFile::Parse(
      testing::SerializeSafetensors(testing::RandomWeights(config, 11)), "/x/model.safetensors");
  auto model2 = BertModel::Create(wider, *file2);
  EXPECT_NE(model2.status().message().find("expected [48, 16]"), std::string::npos)
      << model2.status();
}

TEST(BertModelTest, ParseConfigChecksFields) {
  const BertConfig config = testing::TinyConfig();
  auto parsed = ParseBertConfig(testing::ConfigJson(config), "c.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->hidden, 16);
  EXPECT_EQ(parsed->intermediate, 32);
  EXPECT_EQ(parsed->max_positions, 24);
  EXPECT_DOUBLE_EQ(parsed->layer_norm_eps, 1e-12);

  auto relu = ParseBertConfig(R"({"vocab_size": 5, "hidden_size": 4, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 8, "max_position_embeddings": 8,
      "hidden_act": "relu"})",
                              "c.json");
  EXPECT_NE(relu.status().message().find("'hidden_act' is 'relu'"), std::string::npos);
  auto missing = ParseBertConfig(R"({"vocab_size": 5})", "/m/config.json");
  EXPECT_NE(missing.status().message().find("/m/config.json: missing field 'hidden_size'"),
            std::string::npos)
      << missing.status();
  auto heads = ParseBertConfig(R"({"vocab_size": 5, "hidden_size": 10, "num_hidden_layers": 1,
      "num_attention_heads": 3, "intermediate_size": 8, "max_position_embeddings": 8})",
                               "c");
  EXPECT_FALSE(heads.ok());
  EXPECT_FALSE(ParseBertConfig("{", "c").ok());
}

}  // namespace
}  // namespace adaptd::bert
