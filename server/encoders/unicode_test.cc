#include "server/encoders/unicode.h"

#include "gtest/gtest.h"

namespace adaptd {
namespace {

TEST(UnicodeTest, DecodesValidUtf8) {
  std::u32string out;
  ASSERT_TRUE(DecodeUtf8("aé€🙂", &out));
  EXPECT_EQ(out, (std::u32string{U'a', 0xe9, 0x20ac, 0x1f642}));
}

TEST(UnicodeTest, RejectsInvalidUtf8) {
  for (const char* bad : {"\xff", "\xc3", "\xe2\x82", "\xc0\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "a\x80", "\xe2\x28\xa1"}) {
    std::u32string out;
    EXPECT_FALSE(DecodeUtf8(bad, &out)) << "accepted " << ::testing::PrintToString(bad);
  }
}

TEST(UnicodeTest, LowerCasesLatinGreekCyrillicAndMore) {
  const std::pair<char32_t, char32_t> pairs[] = {
      {U'A', U'a'},     {0xc0, 0xe0},     {0xde, 0xfe},     {0x100, 0x101},    {0x178, 0xff},
      {0x130, U'i'},    {0x1e9e, 0xdf},   {0x391, 0x3b1},   {0x3a3, 0x3c3},    {0x386, 0x3ac},
      {0x410, 0x430},   {0x401, 0x451},   {0x42f, 0x44f},   {0x460, 0x461},    {0x531, 0x561},
      {0x1e00, 0x1e01}, {0x1ea0, 0x1ea1}, {0xff21, 0xff41}, {0x10400, 0x10428}};
  for (const auto& [upper, lower] : pairs) {
    EXPECT_EQ(static_cast<uint32_t>(ToLower(upper)), static_cast<uint32_t>(lower))
        << std::hex << static_cast<uint32_t>(upper);
  }
  // Unchanged: lower case, caseless, and code points between runs.
  for (char32_t c : {U'a', U'7', char32_t{0xdf}, char32_t{0xd7}, char32_t{0x3c3}, char32_t{0x4e00},
                     char32_t{0x131}, char32_t{0x1f642}}) {
    EXPECT_EQ(ToLower(c), c) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(UnicodeTest, WordCharacters) {
  for (char32_t c : {U'a', U'Z', U'0', char32_t{0xe9}, char32_t{0x3b1}, char32_t{0x436},
                     char32_t{0x65e5}, char32_t{0x1f642}}) {
    EXPECT_TRUE(IsWordChar(c)) << std::hex << static_cast<uint32_t>(c);
  }
  for (char32_t c : {U' ', U',', U'-', U'_', U'\'', char32_t{0xa0}, char32_t{0xab}, char32_t{0xd7},
                     char32_t{0x2014}, char32_t{0x3001}, char32_t{0x3000}, char32_t{0xff0c}}) {
    EXPECT_FALSE(IsWordChar(c)) << std::hex << static_cast<uint32_t>(c);
  }
}

TEST(UnicodeTest, EncodesUtf8) {
  std::string out;
  for (char32_t c : {U'a', char32_t{0xe9}, char32_t{0x20ac}, char32_t{0x1f642}})
    AppendUtf8(c, &out);
  EXPECT_EQ(out, "aé€🙂");
}

}  // namespace
}  // namespace adaptd
