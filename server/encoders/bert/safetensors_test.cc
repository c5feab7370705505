#include "server/encoders/bert/safetensors.h"

#include "gtest/gtest.h"
#include "server/encoders/bert/test_model.h"

namespace adaptd::bert {
namespace {

using testing::RawTensor;
using testing::SerializeSafetensors;

std::string Header(const std::string& json, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

TEST(SafetensorsTest, ReadsTensorsOfEveryDtypeAndChecksShape) {
  testing::TensorMap m;
  m["a"] = RawTensor{"F32", {2, 3}, {1, 2, 3, 4, 5, 6}};
  m["ids"] = RawTensor{"I64", {1, 4}, {}};
  auto f = SafetensorsFile::Parse(SerializeSafetensors(m), "w.safetensors");
  ASSERT_TRUE(f.ok()) << f.status();
  auto a = f->Float32("a", {2, 3});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, (std::vector<float>{1, 2, 3, 4, 5, 6}));

  auto shape = f->Float32("a", {3, 2});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(shape.status().message().find("has shape [2, 3], expected [3, 2]"), std::string::npos)
      << shape.status();
  auto dtype = f->Float32("ids", {1, 4});
  EXPECT_NE(dtype.status().message().find("'ids' is I64, expected F32"), std::string::npos);
  auto missing = f->Float32("b", {1});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("w.safetensors: missing tensor 'b'"),
            std::string::npos);
}

TEST(SafetensorsTest, RejectsMalformedFilesNamingThePath) {
  struct Case {
    std::string bytes, expect;
  };
  const std::vector<Case> cases = {
      {"abc", "shorter than the 8-byte header length"},
      {std::string("\xff\xff\xff\xff\0\0\0\0", 8) + "{}", "header length"},
      {Header("{not json"), "not a JSON object"},
      {Header("[1, 2]"), "not a JSON object"},
      {Header(R"({"a": {"dtype": "F32", "shape": [2]}})"), "lacks dtype, shape or data_offsets"},
      {Header(R"({"a": {"dtype": "Q7", "shape": [2], "data_offsets": [0, 8]}})", "12345678"),
       "unknown dtype 'Q7'"},
      {Header(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", "12345678"),
       "fall outside the data section"},
      {Header(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", "12345678"),
       "needs 12"},
      {Header(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", "12345678"),
       "bad shape"},
      {Header(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", "12345678"),
       "fall outside"},
  };
  for (const Case& c : cases) {
    auto f = SafetensorsFile::Parse(c.bytes, "/m/model.safetensors");
    ASSERT_FALSE(f.ok()) << c.expect;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();
    EXPECT_NE(f.status().message().find("/m/model.safetensors"), std::string::npos) << f.status();
    EXPECT_NE(f.status().message().find(c.expect), std::string::npos) << f.status();
  }
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  auto f = SafetensorsFile::Open("/nonexistent/dir/model.safetensors");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/dir/model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace adaptd::bert
