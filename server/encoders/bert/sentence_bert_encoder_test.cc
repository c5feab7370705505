#include "server/encoders/bert/sentence_bert_encoder.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "server/encoders/bert/test_model.h"
#include "server/encoders/bert/wordpiece.h"

namespace adaptd {
namespace {

namespace fs = std::filesystem;
using bert::testing::TinyConfig;

const std::vector<std::string> kWords = {"hello", "world", "!",   "the", "cat", "sat",
                                         "on",    "mat",   "##s", "a",   "dog", "."};

class SentenceBertEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = TinyConfig();
    weights_ = bert::testing::RandomWeights(config_, 21);
    dir_ = bert::testing::TempDir("model");
    bert::testing::WriteModelDir(dir_, config_, weights_, bert::testing::Vocab(kWords));
    backend_ = kernels::MakeCpuBackend();
  }
  adapt::v1::EncoderConfig Config() const {
    adapt::v1::EncoderConfig c;
    c.set_name("minibert");
    c.set_type("sentence_bert");
    c.set_model_path(dir_);
    return c;
  }
  absl::Status MakeError(const adapt::v1::EncoderConfig& c) {
    auto e = MakeSentenceBertEncoder(c, "encoders[0]", backend_.get());
    return e.status();
  }
  void Overwrite(const std::string& file, const std::string& text) {
    std::ofstream(fs::path(dir_) / file, std::ios::binary) << text;
  }

  bert::BertConfig config_;
  bert::testing::TensorMap weights_;
  std::string dir_;
  std::unique_ptr<kernels::Backend> backend_;
};

TEST_F(SentenceBertEncoderTest, EncodesTextsLikeTheReference) {
  auto encoder = MakeSentenceBertEncoder(Config(), "encoders[0]", backend_.get());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  const auto& info = (*encoder)->info();
  EXPECT_EQ(info.type(), "sentence_bert");
  EXPECT_EQ(info.input_kind(), "text");
  EXPECT_EQ(info.dim(), 16u);
  EXPECT_TRUE(info.normalize());
  EXPECT_EQ(info.fingerprint().rfind("sentence_bert:", 0), 0u) << info.fingerprint();
  EXPECT_EQ(info.fingerprint().size(), std::string("sentence_bert:").size() + 16);

  const std::vector<std::string> texts = {"Hello, world!", "The cats sat on the mat.", " ",
                                          std::string(200, 'a') + " dog"};
  std::vector<adapt::v1::Input> inputs(texts.size());
  std::vector<const adapt::v1::Input*> ptrs;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs[i].set_text(texts[i]);
    ptrs.push_back(&inputs[i]);
  }
  auto field = [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
  auto batch = (*encoder)->Encode(ptrs, 0, 8192, field);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->rows, 4);
  ASSERT_EQ(batch->dim, 16);

  auto tokenizer = bert::WordPieceTokenizer::Load(dir_ + "/vocab.txt");
  ASSERT_TRUE(tokenizer.ok());
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto ids = tokenizer->Encode(texts[i], 20);
    const auto want = bert::testing::ReferenceEmbed(config_, weights_, ids);
    for (int c = 0; c < 16; ++c) EXPECT_NEAR(batch->keys[i * 16 + c], want[c], 2e-5) << i;
  }

  // Concurrent calls agree with the sequential result.
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<EncodedBatch>> results(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { results[t] = (*encoder)->Encode(ptrs, 16, 8192, field); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->keys, batch->keys);
  }
}

TEST_F(SentenceBertEncoderTest, RejectsWrongInputsAndDimensions) {
  auto encoder = MakeSentenceBertEncoder(Config(), "encoders[0]", backend_.get());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  adapt::v1::Input text, vec;
  text.set_text("hello");
  vec.mutable_vector()->add_values(1.0f);
  auto field = [](size_t i) { return "examples[" + std::to_string(i) + "].input"; };
  auto r = (*encoder)->Encode({&text, &vec}, 0, 8192, field);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("examples[1].input"), std::string::npos) << r.status();
  r = (*encoder)->Encode({&text}, 8, 8192, field);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SentenceBertEncoderTest, MaxTokensOverridesTheModelDefault) {
  auto c = Config();
  c.set_max_tokens(4);
  auto encoder = MakeSentenceBertEncoder(c, "encoders[0]", backend_.get());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  auto by_default = MakeSentenceBertEncoder(Config(), "encoders[0]", backend_.get());
  ASSERT_TRUE(by_default.ok());
  EXPECT_NE((*encoder)->info().fingerprint(), (*by_default)->info().fingerprint());
  // Texts are cut to 4 tokens: [CLS] the cat [SEP].
  adapt::v1::Input long_text, short_text;
  long_text.set_text("the cat sat on the mat");
  short_text.set_text("the cat");
  auto field = [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
  auto a = (*encoder)->Encode({&long_text, &short_text}, 0, 8192, field);
  ASSERT_TRUE(a.ok());
  for (int c = 0; c < 16; ++c) EXPECT_EQ(a->keys[c], a->keys[16 + c]);
  c.set_max_tokens(25);  // over max_position_embeddings (24)
  EXPECT_NE(MakeError(c).message().find("encoders[0].max_tokens: 25 is outside [2, 24]"),
            std::string::npos);
  c.set_max_tokens(1);
  EXPECT_FALSE(MakeError(c).ok());
}

TEST_F(SentenceBertEncoderTest, FingerprintFollowsTheWeights) {
  auto a = MakeSentenceBertEncoder(Config(), "encoders[0]", backend_.get());
  ASSERT_TRUE(a.ok());
  bert::testing::WriteModelDir(dir_, config_, bert::testing::RandomWeights(config_, 22),
                               bert::testing::Vocab(kWords));
  auto b = MakeSentenceBertEncoder(Config(), "encoders[0]", backend_.get());
  ASSERT_TRUE(b.ok());
  EXPECT_NE((*a)->info().fingerprint(), (*b)->info().fingerprint());
}

TEST_F(SentenceBertEncoderTest, LoadErrorsNameTheFileAndTheProblem) {
  auto c = Config();
  EXPECT_EQ(MakeSentenceBertEncoder(c, "encoders[0]", nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
  c.set_model_path("");
  EXPECT_NE(MakeError(c).message().find("encoders[0].model_path: required"), std::string::npos);
  c.set_model_path(dir_ + "/nope");
  EXPECT_NE(MakeError(c).message().find("is not a directory"), std::string::npos);
  c = Config();
  c.set_dim(384);
  EXPECT_NE(MakeError(c).message().find("dim: 384 differs"), std::string::npos);

  const std::string weights_path = (fs::path(dir_) / "model.safetensors").string();
  Overwrite("model.safetensors", "garbage!");
  absl::Status s = MakeError(Config());
  EXPECT_NE(s.message().find(weights_path + ": not a valid safetensors file"), std::string::npos)
      << s;

  auto missing = weights_;
  missing.erase("encoder.layer.0.attention.self.key.weight");
  Overwrite("model.safetensors", bert::testing::SerializeSafetensors(missing));
  s = MakeError(Config());
  EXPECT_NE(s.message().find(weights_path +
                             ": missing tensor 'encoder.layer.0.attention.self.key.weight'"),
            std::string::npos)
      << s;

  auto misshapen = weights_;
  misshapen["embeddings.LayerNorm.bias"].shape = {8, 2};
  Overwrite("model.safetensors", bert::testing::SerializeSafetensors(misshapen));
  s = MakeError(Config());
  EXPECT_NE(s.message().find("'embeddings.LayerNorm.bias' has shape [8, 2], expected [16]"),
            std::string::npos)
      << s;

  fs::remove(fs::path(dir_) / "model.safetensors");
  s = MakeError(Config());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find(weights_path), std::string::npos) << s;

  fs::remove(fs::path(dir_) / "vocab.txt");
  s = MakeError(Config());
  EXPECT_NE(s.message().find("vocab.txt"), std::string::npos) << s;

  Overwrite("config.json", R"({"hidden_size": 16})");
  s = MakeError(Config());
  EXPECT_NE(s.message().find("config.json: missing field 'vocab_size'"), std::string::npos) << s;
  fs::remove(fs::path(dir_) / "config.json");
  s = MakeError(Config());
  EXPECT_NE(s.message().find("config.json: cannot open"), std::string::npos) << s;
}

TEST_F(SentenceBertEncoderTest, RejectsPoolingOtherThanMean) {
  Overwrite("1_Pooling/config.json", R"({"pooling_mode_cls_token": true})");
  EXPECT_NE(MakeError(Config()).message().find("only mean pooling"), std::string::npos);
}

}  // namespace
}  // namespace adaptd
