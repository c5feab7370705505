// DelimitedBody: ExportStore's length-delimited StoreChunk messages read back from an upload in
// any chunking, and refused when truncated, malformed or past the message limit.
#include "server/http/delimited_body.h"

#include <string>
#include <vector>

#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"
#include "server/http/chunked_reader_testing.h"

namespace adaptd::http {
namespace {

struct Read {
  std::vector<std::string> messages;
  std::optional<BodyRefusal> refused;
  bool ended = false;
};

Read ReadAll(const std::string& body, size_t chunk, size_t max_message_bytes = 1 << 20) {
  DelimitedBody reader(Chunked(body, chunk), max_message_bytes);
  Read read;
  for (;;) {
    std::string message;
    bool got = false;
    read.refused = reader.Next(&message, &got);
    if (read.refused.has_value() || !got) break;
    read.messages.push_back(message);
  }
  read.ended = reader.ended();
  return read;
}

adapt::v1::StoreChunk Chunk(size_t data_bytes, const std::string& store = "") {
  adapt::v1::StoreChunk chunk;
  chunk.set_store(store);
  chunk.set_data(std::string(data_bytes, 'x'));
  return chunk;
}

// Three chunks, one with a length of two varint bytes (300 bytes of data) and one empty.
std::string ThreeChunks(std::vector<adapt::v1::StoreChunk>* chunks) {
  *chunks = {Chunk(5, "s"), Chunk(300), adapt::v1::StoreChunk()};
  std::string body;
  for (const auto& c : *chunks) AppendDelimited(c, &body);
  return body;
}

TEST(DelimitedBody, ReadsTheMessagesInAnyChunking) {
  std::vector<adapt::v1::StoreChunk> chunks;
  const std::string body = ThreeChunks(&chunks);
  // 1 + 10 bytes, then 2 + 303, then 1 byte of length 0.
  EXPECT_EQ(body.size(), 11u + 305u + 1u);
  EXPECT_EQ(static_cast<unsigned char>(body[11]), 0xafu);  // 303 = 0b10_0101111
  EXPECT_EQ(body[12], '\x02');
  for (size_t chunk : {1, 2, 3, 7, 64, 1000}) {
    SCOPED_TRACE(chunk);
    const Read read = ReadAll(body, chunk);
    ASSERT_FALSE(read.refused.has_value()) << read.refused->status;
    ASSERT_EQ(read.messages.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      adapt::v1::StoreChunk parsed;
      ASSERT_TRUE(parsed.ParseFromString(read.messages[i]));
      EXPECT_EQ(parsed.SerializeAsString(), chunks[i].SerializeAsString());
    }
    EXPECT_TRUE(read.ended);
  }
  EXPECT_TRUE(ReadAll("", 4).messages.empty());
  EXPECT_FALSE(ReadAll("", 4).refused.has_value());
}

TEST(DelimitedBody, RefusesATruncatedBody) {
  std::vector<adapt::v1::StoreChunk> chunks;
  const std::string body = ThreeChunks(&chunks);
  // Inside the second message's bytes, and inside its two-byte length.
  for (size_t cut : {body.size() - 10, size_t{12}}) {
    SCOPED_TRACE(cut);
    const Read read = ReadAll(body.substr(0, cut), 3);
    ASSERT_TRUE(read.refused.has_value());
    EXPECT_EQ(read.refused->http_status, 400);
    EXPECT_EQ(read.refused->status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(read.refused->status.message().find("message 2 (byte 11)"), std::string::npos)
        << read.refused->status;
    EXPECT_NE(read.refused->status.message().find("truncated"), std::string::npos);
    EXPECT_EQ(read.messages.size(), 1u);
  }
}

TEST(DelimitedBody, RefusesALengthThatIsNotAVarintOrPastTheLimit) {
  const Read garbage = ReadAll(std::string(12, '\xff'), 5);
  ASSERT_TRUE(garbage.refused.has_value());
  EXPECT_EQ(garbage.refused->http_status, 400);
  EXPECT_NE(garbage.refused->status.message().find("not a varint"), std::string::npos)
      << garbage.refused->status;

  std::string body;
  AppendDelimited(Chunk(100), &body);
  const Read large = ReadAll(body, 4, /*max_message_bytes=*/64);
  ASSERT_TRUE(large.refused.has_value());
  EXPECT_EQ(large.refused->http_status, 413);
  EXPECT_EQ(large.refused->status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(large.refused->status.message().find("--max-message-bytes"), std::string::npos)
      << large.refused->status;
  EXPECT_FALSE(large.ended);  // the rest is left unread
}

TEST(DelimitedBody, RefusesAFailedConnection) {
  DelimitedBody reader([](char*, size_t) { return -1; }, 64);
  std::string message;
  bool got = false;
  const std::optional<BodyRefusal> refused = reader.Next(&message, &got);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->http_status, 400);
  EXPECT_FALSE(got);
}

}  // namespace
}  // namespace adaptd::http
