#include "server/core/examples.h"

#include <limits>

#include "gtest/gtest.h"
#include "server/encoders/identity_encoder.h"

namespace adaptd {
namespace {

class ExamplesTest : public ::testing::Test {
 protected:
  ExamplesTest()
      : encoder_([] {
          adapt::v1::EncoderConfig c;
          c.set_name("identity");
          c.set_type("identity");
          return c;
        }()) {}

  adapt::v1::Example* Add(std::initializer_list<float> key) {
    auto* e = examples_.Add();
    for (float v : key) e->mutable_input()->mutable_vector()->add_values(v);
    return e;
  }
  adapt::v1::OutputSpec Labels() {
    adapt::v1::OutputSpec o;
    o.set_kind(adapt::v1::OutputSpec::KIND_LABELS);
    return o;
  }
  adapt::v1::OutputSpec Vector(uint32_t m) {
    adapt::v1::OutputSpec o;
    o.set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
    o.set_dim(m);
    return o;
  }
  absl::Status Encode(const adapt::v1::OutputSpec& output) {
    return EncodeExamples(examples_, output, encoder_, 0, 1024).status();
  }

  IdentityEncoder encoder_;
  google::protobuf::RepeatedPtrField<adapt::v1::Example> examples_;
};

TEST_F(ExamplesTest, EncodesLabelledExamples) {
  Add({1, 2})->set_label("cat");
  Add({3, 4})->set_label("dog");
  auto batch = EncodeExamples(examples_, Labels(), encoder_, 0, 1024);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->rows, 2);
  EXPECT_EQ(batch->dim, 2);
  EXPECT_EQ(batch->labels, (std::vector<std::string>{"cat", "dog"}));
}

TEST_F(ExamplesTest, EncodesVectorTargets) {
  auto* e = Add({1, 2});
  e->mutable_vector()->add_values(5);
  e->mutable_vector()->add_values(6);
  auto batch = EncodeExamples(examples_, Vector(2), encoder_, 0, 1024);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->targets, (std::vector<float>{5, 6}));
}

TEST_F(ExamplesTest, RejectsBadLabels) {
  Add({1, 2})->set_label("ok");
  Add({1, 2})->set_label("");
  EXPECT_EQ(Encode(Labels()).message(), "examples[1].label: empty");
  examples_.Mutable(1)->set_label(std::string(300, 'x'));
  EXPECT_EQ(Encode(Labels()).message(), "examples[1].label: 300 bytes, at most 256");
  examples_.Mutable(1)->set_label("bad\xff");
  EXPECT_EQ(Encode(Labels()).message(), "examples[1].label: not valid UTF-8");
  examples_.Mutable(1)->set_label("caf\xc3\xa9");
  EXPECT_TRUE(Encode(Labels()).ok());
  examples_.Mutable(1)->clear_label();
  EXPECT_EQ(Encode(Labels()).message(), "examples[1].label: required by a label store");
}

TEST_F(ExamplesTest, RejectsBadVectorTargetsAndInputs) {
  auto* e = Add({1, 2});
  e->mutable_vector()->add_values(std::numeric_limits<float>::infinity());
  EXPECT_EQ(Encode(Vector(2)).message(), "examples[0].vector: 1 values, expected 2");
  e->mutable_vector()->add_values(1);
  EXPECT_EQ(Encode(Vector(2)).message(), "examples[0].vector.values[0]: not a finite number");
  e->mutable_vector()->set_values(0, 1);
  EXPECT_TRUE(Encode(Vector(2)).ok());
  e->clear_input();
  EXPECT_EQ(Encode(Vector(2)).message(), "examples[0].input: required");
}

TEST(Utf8Test, ValidatesSequences) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
}

}  // namespace
}  // namespace adaptd
