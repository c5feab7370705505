#include "server/persistence/log_format.h"

#include <string>

#include "gtest/gtest.h"

namespace adaptd {
namespace {

std::string ThreeFrames(std::vector<size_t>* offsets = nullptr) {
  std::string log;
  for (uint64_t lsn = 1; lsn <= 3; ++lsn) {
    if (offsets != nullptr) offsets->push_back(log.size());
    AppendFrame(lsn, lsn == 2 ? "t/b" : "t/a", std::string(40 + lsn, static_cast<char>('a' + lsn)),
                &log);
  }
  return log;
}

TEST(LogFormatTest, RoundTrip) {
  const std::string log = ThreeFrames();
  const ParsedSegment parsed = ParseSegment(log);
  ASSERT_EQ(parsed.frames.size(), 3u);
  EXPECT_FALSE(parsed.torn_tail);
  EXPECT_TRUE(parsed.damage.empty());
  EXPECT_EQ(parsed.valid_bytes, log.size());
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parsed.frames[i].lsn, i + 1);
    EXPECT_TRUE(parsed.frames[i].payload_ok);
    EXPECT_EQ(parsed.frames[i].payload, std::string(41 + i, static_cast<char>('b' + i)));
  }
  EXPECT_EQ(parsed.frames[1].key, "t/b");
}

TEST(LogFormatTest, EveryCutOfTheLastRecordIsATornTail) {
  std::vector<size_t> offsets;
  const std::string log = ThreeFrames(&offsets);
  for (size_t cut = offsets[2] + 1; cut < log.size(); ++cut) {
    const ParsedSegment parsed = ParseSegment(std::string_view(log).substr(0, cut));
    ASSERT_EQ(parsed.frames.size(), 2u) << cut;
    EXPECT_TRUE(parsed.torn_tail);
    EXPECT_TRUE(parsed.damage.empty());
    EXPECT_EQ(parsed.valid_bytes, offsets[2]);
  }
}

TEST(LogFormatTest, GarbledLastPayloadIsATornTail) {
  std::string log = ThreeFrames();
  log[log.size() - 3] ^= 0x40;
  const ParsedSegment parsed = ParseSegment(log);
  EXPECT_EQ(parsed.frames.size(), 2u);
  EXPECT_TRUE(parsed.torn_tail);
}

TEST(LogFormatTest, CorruptPayloadInTheMiddleIsAttributedToItsStore) {
  std::vector<size_t> offsets;
  std::string log = ThreeFrames(&offsets);
  log[offsets[2] - 5] ^= 0x01;  // inside record 2's payload
  const ParsedSegment parsed = ParseSegment(log);
  ASSERT_EQ(parsed.frames.size(), 3u);
  EXPECT_TRUE(parsed.frames[0].payload_ok);
  EXPECT_FALSE(parsed.frames[1].payload_ok);
  EXPECT_EQ(parsed.frames[1].key, "t/b");
  EXPECT_TRUE(parsed.frames[2].payload_ok);
  EXPECT_FALSE(parsed.torn_tail);
}

TEST(LogFormatTest, DamagedHeaderInTheMiddleIsReportedAndReadingResumes) {
  std::vector<size_t> offsets;
  std::string log = ThreeFrames(&offsets);
  log[offsets[1] + 9] ^= 0x10;  // record 2's LSN: the header checksum fails
  const ParsedSegment parsed = ParseSegment(log);
  ASSERT_EQ(parsed.frames.size(), 2u);
  EXPECT_EQ(parsed.frames[0].lsn, 1u);
  EXPECT_EQ(parsed.frames[1].lsn, 3u);
  ASSERT_EQ(parsed.damage.size(), 1u);
  EXPECT_EQ(parsed.damage[0].offset, offsets[1]);
  EXPECT_EQ(parsed.damage[0].bytes, offsets[2] - offsets[1]);
  EXPECT_FALSE(parsed.torn_tail);
}

TEST(LogFormatTest, RandomBytesNeverCrashTheParser) {
  std::string data(4096, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  const ParsedSegment parsed = ParseSegment(data);
  EXPECT_TRUE(parsed.frames.empty());
  EXPECT_TRUE(parsed.torn_tail);
}

}  // namespace
}  // namespace adaptd
