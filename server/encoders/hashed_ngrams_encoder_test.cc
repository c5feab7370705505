#include "server/encoders/hashed_ngrams_encoder.h"

#include <cmath>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/test_util.h"

namespace adaptd {
namespace {

using testing::ExamplesNamer;
using testing::Pointers;
using testing::Text;

adapt::v1::EncoderConfig Config(uint32_t dim, uint32_t char_min = 3, uint32_t char_max = 5,
                                uint32_t word_ngrams = 2) {
  adapt::v1::EncoderConfig config;
  config.set_name("text");
  config.set_type("hashed_ngrams");
  config.set_dim(dim);
  config.set_char_ngram_min(char_min);
  config.set_char_ngram_max(char_max);
  config.set_word_ngrams(word_ngrams);
  return config;
}

std::vector<float> EncodeOne(const HashedNgramsEncoder& encoder, const std::string& text) {
  std::vector<adapt::v1::Input> inputs = {Text(text)};
  auto batch = encoder.Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? batch->keys : std::vector<float>();
}

// Golden vectors from testdata/make_golden.py, an independent Python implementation of the
// documented rules (Python's own Unicode database for lower-casing).
TEST(HashedNgramsEncoderTest, MatchesTheIndependentPythonReference) {
  std::istringstream lines(testing::ReadTestData("hashed_ngrams_golden.jsonl"));
  std::string line;
  int cases = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json golden = nlohmann::json::parse(line);
    auto encoder =
        HashedNgramsEncoder::Create(Config(golden["dim"], golden["char_ngram_min"],
                                           golden["char_ngram_max"], golden["word_ngrams"]),
                                    "encoders[0]");
    ASSERT_TRUE(encoder.ok()) << encoder.status();
    const std::string text = golden["text"];
    const std::vector<float> got = EncodeOne(**encoder, text);
    std::vector<double> want(golden["dim"].get<size_t>(), 0.0);
    for (const auto& entry : golden["entries"]) want[entry[0].get<size_t>()] = entry[1];
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < want.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 1e-6) << text << " bucket " << j;
    }
    ++cases;
  }
  EXPECT_GE(cases, 10);
}

TEST(HashedNgramsEncoderTest, DeterministicAndBatchIndependent) {
  auto encoder = HashedNgramsEncoder::Create(Config(4096), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  const std::vector<std::string> texts = {"first text here", "second one", "Ünïcödé ΣΟΦΙΑ"};
  std::vector<adapt::v1::Input> inputs;
  for (const auto& t : texts) inputs.push_back(Text(t));
  auto batch = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->rows, 3);
  EXPECT_EQ(batch->dim, 4096);
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<float> alone = EncodeOne(**encoder, texts[i]);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batch->keys.begin() + i * 4096));
  }
  auto again = HashedNgramsEncoder::Create(Config(4096), "encoders[0]");
  EXPECT_EQ(EncodeOne(**again, texts[2]), EncodeOne(**encoder, texts[2]));
  EXPECT_EQ((*again)->info().fingerprint(), (*encoder)->info().fingerprint());
  auto other = HashedNgramsEncoder::Create(Config(4096, 2, 4), "encoders[0]");
  EXPECT_NE((*other)->info().fingerprint(), (*encoder)->info().fingerprint());
}

TEST(HashedNgramsEncoderTest, FoldsCaseAcrossScripts) {
  auto encoder = HashedNgramsEncoder::Create(Config(1024), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  const std::pair<std::string, std::string> same[] = {{"ÀÉÎÕÜ ÇÑ ŒŸ", "àéîõü çñ œÿ"},
                                                      {"ĀĒĪŌŪ ŁŃŚŹŻ", "āēīōū łńśźż"},
                                                      {"ΑΘΗΝΑ ΕΛΛΑΔΑ", "αθηνα ελλαδα"},
                                                      {"МОСКВА ЁЛКА ЇЖАК", "москва ёлка їжак"},
                                                      {"Hello WORLD", "hello world"}};
  for (const auto& [upper, lower] : same) {
    EXPECT_EQ(EncodeOne(**encoder, upper), EncodeOne(**encoder, lower)) << upper;
  }
  EXPECT_NE(EncodeOne(**encoder, "москва"), EncodeOne(**encoder, "moskva"));
}

TEST(HashedNgramsEncoderTest, SignedHashingSublinearTfAndNormalisation) {
  // Words only, a large table: each word lands alone in its bucket with value ±1 (before
  // normalisation), and both signs occur.
  auto words_only = HashedNgramsEncoder::Create(Config(1 << 20, 3, 0, 1), "encoders[0]");
  ASSERT_TRUE(words_only.ok()) << words_only.status();
  int positive = 0, negative = 0;
  for (int i = 0; i < 64; ++i) {
    const std::vector<float> v = EncodeOne(**words_only, "word" + std::to_string(i));
    int nonzero = 0;
    for (float x : v) {
      if (x == 0) continue;
      ++nonzero;
      EXPECT_FLOAT_EQ(std::abs(x), 1.0f);
      (x > 0 ? positive : negative)++;
    }
    EXPECT_EQ(nonzero, 1);
  }
  EXPECT_GT(positive, 10);
  EXPECT_GT(negative, 10);

  // "cat cat cat dog": tf 3 and 1 give 1 + ln 3 and 1, normalised.
  const std::vector<float> v = EncodeOne(**words_only, "cat cat cat dog");
  std::vector<float> magnitudes;
  for (float x : v) {
    if (x != 0) magnitudes.push_back(std::abs(x));
  }
  ASSERT_EQ(magnitudes.size(), 2u);
  const double big = 1 + std::log(3.0), n = std::sqrt(big * big + 1);
  std::sort(magnitudes.begin(), magnitudes.end());
  EXPECT_NEAR(magnitudes[0], 1 / n, 1e-6);
  EXPECT_NEAR(magnitudes[1], big / n, 1e-6);

  auto encoder = HashedNgramsEncoder::Create(Config(256), "encoders[0]");
  for (const char* text : {"a", "one two three", "long text with many many repeated words words"}) {
    double norm2 = 0;
    for (float x : EncodeOne(**encoder, text)) norm2 += double{x} * x;
    EXPECT_NEAR(norm2, 1.0, 1e-5) << text;
  }
  for (float x : EncodeOne(**encoder, "!!! ... ???")) EXPECT_EQ(x, 0.0f);
}

TEST(HashedNgramsEncoderTest, BadInputsNameTheField) {
  auto encoder = HashedNgramsEncoder::Create(Config(64), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  auto status_of = [&](std::vector<adapt::v1::Input> inputs) {
    return (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer()).status();
  };
  absl::Status s = status_of({Text("fine"), Text("")});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].input.text: empty");
  s = status_of({Text("fine"), Text("ok"), Text("bad \xff byte")});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[2].input.text: not valid UTF-8");
  s = status_of({testing::Vector({1, 2})});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input.vector: encoder 'text' takes text, not a vector");
  s = status_of({adapt::v1::Input()});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("examples[0].input.text: required"), std::string::npos) << s;
  s = status_of({Text(std::string(kMaxTextBytes + 1, 'a'))});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  std::vector<adapt::v1::Input> ok = {Text("x")};
  EXPECT_EQ((*encoder)->Encode(Pointers(ok), 32, 1 << 20, ExamplesNamer()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(HashedNgramsEncoderTest, RejectsBadParameters) {
  EXPECT_FALSE(HashedNgramsEncoder::Create(Config(64, 4, 3), "encoders[1]").ok());
  EXPECT_FALSE(HashedNgramsEncoder::Create(Config(64, 0, 3), "encoders[1]").ok());
  EXPECT_FALSE(HashedNgramsEncoder::Create(Config(64, 3, 40), "encoders[1]").ok());
  EXPECT_FALSE(HashedNgramsEncoder::Create(Config(64, 3, 0, 0), "encoders[1]").ok());
  auto s = HashedNgramsEncoder::Create(Config(64, 3, 5, 9), "encoders[1]").status();
  EXPECT_EQ(s.message().substr(0, 24), "encoders[1].word_ngrams:") << s;
  adapt::v1::EncoderConfig unset;
  unset.set_name("t");
  auto defaults = HashedNgramsEncoder::Create(unset, "encoders[0]");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ((*defaults)->info().dim(), HashedNgramsEncoder::kDefaultDim);
  EXPECT_EQ((*defaults)->info().input_kind(), "text");
}

}  // namespace
}  // namespace adaptd
