#include "server/encoders/identity_encoder.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

adapt::v1::Input Vec(std::initializer_list<float> values) {
  adapt::v1::Input input;
  for (float v : values) input.mutable_vector()->add_values(v);
  return input;
}

FieldNamer Namer() {
  return [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
}

adapt::v1::EncoderConfig Config(uint32_t dim, bool normalize) {
  adapt::v1::EncoderConfig config;
  config.set_name("id");
  config.set_type("identity");
  config.set_dim(dim);
  config.set_normalize(normalize);
  return config;
}

TEST(IdentityEncoderTest, FirstInputFixesDimension) {
  IdentityEncoder encoder(Config(0, false));
  auto a = Vec({1, 2, 3}), b = Vec({4, 5, 6});
  auto batch = encoder.Encode({&a, &b}, 0, 1024, Namer());
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->rows, 2);
  EXPECT_EQ(batch->dim, 3);
  EXPECT_EQ(batch->keys, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(IdentityEncoderTest, NormalizesToUnitLength) {
  IdentityEncoder encoder(Config(0, true));
  auto a = Vec({3, 4}), zero = Vec({0, 0});
  auto batch = encoder.Encode({&a, &zero}, 0, 1024, Namer());
  ASSERT_TRUE(batch.ok());
  EXPECT_FLOAT_EQ(batch->keys[0], 0.6f);
  EXPECT_FLOAT_EQ(batch->keys[1], 0.8f);
  EXPECT_EQ(batch->keys[2], 0.0f);
}

TEST(IdentityEncoderTest, RejectsBadInputsNamingTheField) {
  IdentityEncoder encoder(Config(0, false));
  auto good = Vec({1, 2});
  auto short_one = Vec({1});
  auto nan = Vec({1, std::numeric_limits<float>::quiet_NaN()});
  auto inf = Vec({std::numeric_limits<float>::infinity(), 1});
  adapt::v1::Input text;
  text.set_text("hello");
  adapt::v1::Input empty;
  empty.mutable_vector();

  auto s = encoder.Encode({&good, &short_one}, 0, 1024, Namer()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("inputs[1].vector: dimension 1, expected 2"), std::string::npos) << s;
  s = encoder.Encode({&nan}, 0, 1024, Namer()).status();
  EXPECT_NE(s.message().find("inputs[0].vector.values[1]: not a finite number"), std::string::npos)
      << s;
  EXPECT_FALSE(encoder.Encode({&inf}, 0, 1024, Namer()).ok());
  s = encoder.Encode({&text}, 0, 1024, Namer()).status();
  EXPECT_NE(s.message().find("takes a vector, got text"), std::string::npos) << s;
  adapt::v1::Input image;
  image.set_image("\xff\xd8\xff");
  s = encoder.Encode({&good, &image}, 0, 1024, Namer()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("inputs[1]: encoder 'id' takes a vector, got an image"),
            std::string::npos)
      << s;
  EXPECT_FALSE(encoder.Encode({&empty}, 0, 1024, Namer()).ok());
  EXPECT_FALSE(encoder.Encode({&good}, 3, 1024, Namer()).ok());
  s = encoder.Encode({&good}, 0, 1, Namer()).status();
  EXPECT_NE(s.message().find("exceeds the server's maximum 1"), std::string::npos) << s;
}

TEST(IdentityEncoderTest, FixedDimensionIsEnforced) {
  IdentityEncoder encoder(Config(2, false));
  auto a = Vec({1, 2, 3});
  EXPECT_FALSE(encoder.Encode({&a}, 0, 1024, Namer()).ok());
  EXPECT_EQ(encoder.info().dim(), 2u);
}

}  // namespace
}  // namespace adaptd
