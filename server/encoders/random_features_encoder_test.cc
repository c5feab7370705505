#include "server/encoders/random_features_encoder.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/test_util.h"

namespace adaptd {
namespace {

using testing::ExamplesNamer;
using testing::Pointers;

adapt::v1::EncoderConfig Config(uint32_t dim, uint32_t input_dim, double gamma, uint64_t seed) {
  adapt::v1::EncoderConfig config;
  config.set_name("rff");
  config.set_type("random_features");
  config.set_dim(dim);
  config.set_input_dim(input_dim);
  config.set_gamma(gamma);
  config.set_seed(seed);
  return config;
}

TEST(RandomFeaturesEncoderTest, MatchesTheIndependentPythonReference) {
  const nlohmann::json golden =
      nlohmann::json::parse(testing::ReadTestData("random_features_golden.json"));
  const std::vector<float> x = golden["x"].get<std::vector<float>>();
  auto encoder = RandomFeaturesEncoder::Create(
      Config(golden["dim"], static_cast<uint32_t>(x.size()), golden["gamma"], golden["seed"]),
      "encoders[0]");
  ASSERT_TRUE(encoder.ok()) << encoder.status();
  std::vector<adapt::v1::Input> inputs = {testing::Vector(x)};
  auto batch = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
  ASSERT_TRUE(batch.ok()) << batch.status();
  const std::vector<double> z = golden["z"].get<std::vector<double>>();
  ASSERT_EQ(batch->keys.size(), z.size());
  for (size_t k = 0; k < z.size(); ++k) EXPECT_NEAR(batch->keys[k], z[k], 1e-6) << k;
}

// z(x)·z(y) estimates exp(-gamma |x - y|²) with standard deviation below 1/sqrt(D); at
// D = 16384 a tolerance of 0.04 is over 5 standard deviations.
TEST(RandomFeaturesEncoderTest, ApproximatesTheRbfKernel) {
  constexpr uint32_t kD = 16384, kIn = 6;
  constexpr double kGamma = 0.2;
  auto encoder = RandomFeaturesEncoder::Create(Config(kD, kIn, kGamma, 7), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  std::mt19937 gen(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<adapt::v1::Input> inputs;
  std::vector<std::vector<double>> xs;
  for (int i = 0; i < 12; ++i) {
    std::vector<double> x(kIn);
    const double scale = i < 4 ? 0.1 : (i < 8 ? 1.0 : 3.0);  // near, typical and far pairs
    for (double& v : x) v = scale * normal(gen);
    if (i == 11) x = xs[10];  // a repeated input
    xs.push_back(x);
    inputs.push_back(testing::Vector(std::vector<float>(x.begin(), x.end())));
  }
  auto batch = (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer());
  ASSERT_TRUE(batch.ok());
  for (size_t a = 0; a < xs.size(); ++a) {
    for (size_t b = a; b < xs.size(); ++b) {
      double dot = 0, dist2 = 0;
      for (uint32_t k = 0; k < kD; ++k) {
        dot += double{batch->keys[a * kD + k]} * batch->keys[b * kD + k];
      }
      for (uint32_t j = 0; j < kIn; ++j) {
        const double diff = double{static_cast<float>(xs[a][j])} - static_cast<float>(xs[b][j]);
        dist2 += diff * diff;
      }
      EXPECT_NEAR(dot, std::exp(-kGamma * dist2), 0.04) << a << "," << b;
    }
  }
}

TEST(RandomFeaturesEncoderTest, SeedDeterminesTheMap) {
  auto a = RandomFeaturesEncoder::Create(Config(64, 3, 1.0, 5), "encoders[0]");
  auto b = RandomFeaturesEncoder::Create(Config(64, 3, 1.0, 5), "encoders[0]");
  auto c = RandomFeaturesEncoder::Create(Config(64, 3, 1.0, 6), "encoders[0]");
  std::vector<adapt::v1::Input> inputs = {testing::Vector({1, 2, 3})};
  auto ka = (*a)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer())->keys;
  auto kb = (*b)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer())->keys;
  auto kc = (*c)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer())->keys;
  EXPECT_EQ(ka, kb);
  EXPECT_NE(ka, kc);
  EXPECT_EQ((*a)->info().fingerprint(), (*b)->info().fingerprint());
  EXPECT_NE((*a)->info().fingerprint(), (*c)->info().fingerprint());
}

TEST(RandomFeaturesEncoderTest, BadInputsAndParameters) {
  auto encoder = RandomFeaturesEncoder::Create(Config(8, 2, 1.0, 1), "encoders[0]");
  ASSERT_TRUE(encoder.ok());
  auto status_of = [&](std::vector<adapt::v1::Input> inputs) {
    return (*encoder)->Encode(Pointers(inputs), 0, 1 << 20, ExamplesNamer()).status();
  };
  absl::Status s = status_of({testing::Vector({1, 2}), testing::Text("hi")});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "examples[1].input.text: encoder 'rff' takes a vector, not text");
  adapt::v1::Input image;
  image.set_image("\x89PNG");
  s = status_of({image});
  EXPECT_EQ(s.message(), "examples[0].input.image: encoder 'rff' takes a vector, not an image");
  s = status_of({testing::Vector({1, 2, 3})});
  EXPECT_NE(s.message().find("examples[0].input.vector: dimension 3"), std::string::npos) << s;
  s = status_of({testing::Vector({1, NAN})});
  EXPECT_EQ(s.message(), "examples[0].input.vector.values[1]: not a finite number");
  EXPECT_EQ(status_of({adapt::v1::Input()}).code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(RandomFeaturesEncoder::Create(Config(0, 2, 1, 1), "encoders[3]")
                .status()
                .message()
                .substr(0, 16),
            "encoders[3].dim:");
  EXPECT_FALSE(RandomFeaturesEncoder::Create(Config(8, 0, 1, 1), "encoders[3]").ok());
  EXPECT_FALSE(RandomFeaturesEncoder::Create(Config(8, 2, 0, 1), "encoders[3]").ok());
  EXPECT_FALSE(RandomFeaturesEncoder::Create(Config(8, 2, -1, 1), "encoders[3]").ok());
  EXPECT_FALSE(RandomFeaturesEncoder::Create(Config(8, 2, INFINITY, 1), "encoders[3]").ok());
}

}  // namespace
}  // namespace adaptd
