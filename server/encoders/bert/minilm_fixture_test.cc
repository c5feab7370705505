// all-MiniLM-L6-v2 against the reference implementation: token ids must be identical and every
// embedding within cosine 0.9999 of sentence-transformers' (tests/fixtures/minilm).
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/minilm_dir.h"
#include "server/encoders/bert/sentence_bert_encoder.h"
#include "server/encoders/bert/wordpiece.h"
#include "server/encoders/text_encoder.h"

namespace adaptd {
namespace {

constexpr int kDim = 384;

struct Fixture {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  std::vector<float> embeddings;  // texts × 384
};

Fixture LoadFixture() {
  Fixture f;
  const std::string dir = ADAPTD_MINILM_FIXTURE_DIR;
  std::ifstream in(dir + "/sentences.json");
  EXPECT_TRUE(in.good()) << dir;
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& s : j["sentences"]) {
    f.texts.push_back(s["text"].get<std::string>());
    f.ids.push_back(s["ids"].get<std::vector<int32_t>>());
  }
  std::ifstream bin(dir + "/embeddings.f32", std::ios::binary);
  f.embeddings.resize(f.texts.size() * kDim);
  bin.read(reinterpret_cast<char*>(f.embeddings.data()),
           static_cast<std::streamsize>(f.embeddings.size() * sizeof(float)));
  EXPECT_TRUE(bin.good()) << "embeddings.f32 shorter than " << f.texts.size() << " rows";
  return f;
}

double Cosine(const float* a, const float* b) {
  double ab = 0, aa = 0, bb = 0;
  for (int i = 0; i < kDim; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(MiniLmFixtureTest, TokenIdsMatchTheReferenceTokenizer) {
  ADAPTD_REQUIRE_MINILM(model_dir);
  const Fixture f = LoadFixture();
  ASSERT_GE(f.texts.size(), 100u);
  auto tokenizer = bert::WordPieceTokenizer::Load(model_dir + "/vocab.txt");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  int truncated = 0;
  for (size_t i = 0; i < f.texts.size(); ++i) {
    EXPECT_EQ(tokenizer->Encode(f.texts[i], 256), f.ids[i])
        << "sentence " << i << ": " << f.texts[i];
    truncated += f.ids[i].size() == 256;
  }
  EXPECT_GE(truncated, 2) << "the fixture should exercise truncation";
}

TEST(MiniLmFixtureTest, EmbeddingsMatchTheReference) {
  ADAPTD_REQUIRE_MINILM(model_dir);
  const Fixture f = LoadFixture();
  auto backend = kernels::MakeCpuBackend();
  adapt::v1::EncoderConfig config;
  config.set_name("minilm");
  config.set_type("sentence_bert");
  config.set_model_path(model_dir);
  auto encoder = MakeSentenceBertEncoder(config, "encoders[0]", backend.get());
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  EXPECT_EQ((*encoder)->info().dim(), 384u);

  // EncodeTexts directly: the API refuses empty texts, the fixture checks one.
  const auto* text_encoder = dynamic_cast<const TextEncoder*>(encoder->get());
  ASSERT_NE(text_encoder, nullptr);
  const std::vector<std::string_view> texts(f.texts.begin(), f.texts.end());
  std::vector<float> keys(texts.size() * kDim);
  ASSERT_TRUE(text_encoder->EncodeTexts(texts, keys.data()).ok());
  double worst = 1;
  for (size_t i = 0; i < f.texts.size(); ++i) {
    const double cos = Cosine(&keys[i * kDim], &f.embeddings[i * kDim]);
    worst = std::min(worst, cos);
    EXPECT_GE(cos, 0.9999) << "sentence " << i << ": " << f.texts[i];
  }
  std::cout << "worst cosine over " << f.texts.size() << " sentences: " << std::setprecision(9)
            << worst << "\n";

  // One at a time gives the same vectors as the packed batch.
  for (size_t i = 0; i < f.texts.size(); i += 10) {
    std::vector<float> one(kDim);
    ASSERT_TRUE(text_encoder->EncodeTexts({texts[i]}, one.data()).ok());
    EXPECT_GE(Cosine(one.data(), &keys[i * kDim]), 0.999999) << i;
  }
}

}  // namespace
}  // namespace adaptd
