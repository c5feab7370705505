#include "server/encoders/fasttext_encoder.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "server/encoders/test_util.h"

namespace adaptd {
namespace {

using testing::ExamplesNamer;
using testing::Pointers;

// Trains tiny fastText models with the `fasttext` command (Debian package `fasttext`) on a
// corpus generated here, once for the whole suite.
class FastTextEncoderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs each test of the suite as its own process, in
    // parallel, and each trains its own models.
    dir_ = new std::string(::testing::TempDir() + "/fasttext_encoder_test." +
                           std::to_string(::getpid()));
    std::filesystem::create_directories(*dir_);
    std::mt19937 gen(11);
    const std::vector<std::string> animals = {"cat", "dog", "horse", "cow", "sheep", "goat"};
    const std::vector<std::string> tools = {"hammer", "saw", "drill", "wrench", "chisel"};
    const std::vector<std::string> filler = {"the", "a", "runs", "is", "near", "with", "old"};
    std::ofstream plain(*dir_ + "/corpus.txt"), labelled(*dir_ + "/labelled.txt");
    for (int i = 0; i < 600; ++i) {
      const bool animal = i % 2 == 0;
      const auto& topic = animal ? animals : tools;
      std::string line;
      for (int w = 0; w < 8; ++w) {
        const auto& pool = (w % 2 == 0) ? topic : filler;
        line += (w ? " " : "") + pool[gen() % pool.size()];
      }
      plain << line << "\n";
      labelled << (animal ? "__label__animal " : "__label__tool ") << line << "\n";
    }
    plain.close();
    labelled.close();
    const std::string common = " -dim 12 -epoch 3 -minCount 1 -thread 1 -verbose 0";
    ok_ = Run("fasttext skipgram -input " + *dir_ + "/corpus.txt -output " + *dir_ +
              "/skipgram -minn 2 -maxn 4" + common) &&
          Run("fasttext supervised -input " + *dir_ + "/labelled.txt -output " + *dir_ +
              "/supervised -wordNgrams 2" + common);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
  }

  static bool Run(const std::string& command) { return std::system(command.c_str()) == 0; }

  // What `fasttext print-sentence-vectors` prints for each text (one per line).
  static std::vector<std::vector<double>> Reference(const std::string& model,
                                                    const std::vector<std::string>& texts) {
    std::ofstream(*dir_ + "/texts.txt") << [&] {
      std::string all;
      for (const auto& t : texts) all += t + "\n";
      return all;
    }();
    EXPECT_TRUE(Run("fasttext print-sentence-vectors " + model + " < " + *dir_ + "/texts.txt > " +
                    *dir_ + "/vectors.txt"));
    std::ifstream in(*dir_ + "/vectors.txt");
    std::vector<std::vector<double>> out;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream values(line);
      std::vector<double> v;
      double x;
      while (values >> x) v.push_back(x);
      out.push_back(v);
    }
    return out;
  }

  static adapt::v1::EncoderConfig Config(const std::string& path) {
    adapt::v1::EncoderConfig config;
    config.set_name("ft");
    config.set_type("fasttext");
    config.set_model_path(path);
    return config;
  }

  void CheckAgainstCli(const std::string& model) {
    ASSERT_TRUE(ok_) << "training with the fasttext command failed (is Debian's fasttext "
                        "package installed?)";
    auto encoder = FastTextEncoder::Create(Config(model), "encoders[0]");
    ASSERT_TRUE(encoder.ok()) << encoder.status();
    EXPECT_EQ((*encoder)->info().dim(), 12u);
    const std::vector<std::string> texts = {
        "the cat runs near the dog", "hammer",
        "unknownword another",       "   ",
        "a saw, a drill!",           "sheep  goat\tcow",
        "café naïve façade",         "the old wrench is with the old chisel"};
    std::vector<adapt::v1::Input> inputs;
    for (const auto& t : texts) inputs.push_back(testing::Text(t));
    auto batch = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
    ASSERT_TRUE(batch.ok()) << batch.status();
    const auto want = Reference(model, texts);
    ASSERT_EQ(want.size(), texts.size());
    int nonzero = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(want[i].size(), 12u) << texts[i];
      for (size_t j = 0; j < 12; ++j) {
        const double got = batch->keys[i * 12 + j];
        EXPECT_NEAR(got, want[i][j], 1e-4 * std::abs(want[i][j]) + 1e-6) << texts[i] << " " << j;
        nonzero += got != 0;
      }
    }
    EXPECT_GT(nonzero, 12 * 4);
  }

  static std::string* dir_;
  static bool ok_;
};

std::string* FastTextEncoderTest::dir_ = nullptr;
bool FastTextEncoderTest::ok_ = false;

TEST_F(FastTextEncoderTest, UnsupervisedModelMatchesTheCli) {
  CheckAgainstCli(*dir_ + "/skipgram.bin");
}

TEST_F(FastTextEncoderTest, SupervisedModelMatchesTheCli) {
  CheckAgainstCli(*dir_ + "/supervised.bin");
}

TEST_F(FastTextEncoderTest, NormalizesAndFingerprintsTheFile) {
  ASSERT_TRUE(ok_);
  auto config = Config(*dir_ + "/skipgram.bin");
  config.set_normalize(true);
  auto encoder = FastTextEncoder::Create(config, "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  std::vector<adapt::v1::Input> inputs = {testing::Text("the cat and the dog")};
  auto batch = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
  double norm2 = 0;
  for (float x : batch->keys) norm2 += double{x} * x;
  EXPECT_NEAR(norm2, 1.0, 1e-5);
  auto other = FastTextEncoder::Create(Config(*dir_ + "/supervised.bin"), "encoders[0]");
  auto plain = FastTextEncoder::Create(Config(*dir_ + "/skipgram.bin"), "encoders[0]");
  EXPECT_NE((*other)->info().fingerprint(), (*plain)->info().fingerprint());
  EXPECT_NE((*encoder)->info().fingerprint(), (*plain)->info().fingerprint());
  EXPECT_EQ((*plain)->info().fingerprint().substr(0, 9), "fasttext:");
}

TEST_F(FastTextEncoderTest, LoadFailuresNameTheEncoderAndPath) {
  const std::string missing = *dir_ + "/no-such-model.bin";
  absl::Status s = FastTextEncoder::Create(Config(missing), "encoders[2]").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "encoders[2].model_path: fasttext encoder 'ft' cannot load '" + missing +
                             "': no such file");
  const std::string garbage = *dir_ + "/garbage.bin";
  std::ofstream(garbage) << "this is not a fastText model";
  s = FastTextEncoder::Create(Config(garbage), "encoders[2]").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("fasttext encoder 'ft' cannot load '" + garbage + "'"),
            std::string::npos)
      << s;
  s = FastTextEncoder::Create(Config(*dir_), "encoders[2]").status();
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s;
  EXPECT_EQ(FastTextEncoder::Create(Config(""), "encoders[2]").status().code(),
            absl::StatusCode::kInvalidArgument);
  if (ok_) {
    auto config = Config(*dir_ + "/skipgram.bin");
    config.set_dim(7);
    EXPECT_EQ(FastTextEncoder::Create(config, "encoders[2]").status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(FastTextEncoderTest, BadInputs) {
  ASSERT_TRUE(ok_);
  auto encoder = FastTextEncoder::Create(Config(*dir_ + "/skipgram.bin"), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  std::vector<adapt::v1::Input> inputs = {testing::Text("ok"), testing::Text("\xc3\x28")};
  absl::Status s = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer()).status();
  EXPECT_EQ(s.message(), "examples[1].input.text: not valid UTF-8");
  inputs = {testing::Vector({1, 2})};
  s = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[0].input.vector: encoder 'ft' takes text, not a vector");
}

}  // namespace
}  // namespace adaptd
