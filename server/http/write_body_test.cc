// WriteBody: an Adapt or Forget body split into its messages as it arrives, in any chunking,
// and refused past its limits.
#include "server/http/write_body.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/http/chunked_reader_testing.h"

namespace adaptd::http {
namespace {

struct Split {
  std::vector<BodyMessage> messages;
  std::optional<BodyRefusal> refused;
  bool ended = false;
};

Split SplitBody(const std::string& body, size_t chunk, WriteLimits limits = {}) {
  WriteBody reader(Chunked(body, chunk), limits);
  Split split;
  for (;;) {
    BodyMessage message;
    bool got = false;
    split.refused = reader.Next(&message, &got);
    if (split.refused.has_value() || !got) break;
    split.messages.push_back(message);
  }
  split.ended = reader.ended();
  return split;
}

TEST(WriteBody, SplitsLinesInAnyChunking) {
  const std::string body = "{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}";
  for (size_t chunk : {1, 2, 3, 7, 1000}) {
    Split split = SplitBody(body, chunk);
    ASSERT_FALSE(split.refused.has_value()) << chunk;
    ASSERT_EQ(split.messages.size(), 3u) << chunk;
    EXPECT_EQ(split.messages[0].json, "{\"a\":1}");
    EXPECT_EQ(split.messages[1].json, "{\"b\":2}\r");
    EXPECT_EQ(split.messages[2].json, "{\"c\":3}");
    EXPECT_EQ(split.messages[1].index, 2u);
    EXPECT_EQ(split.messages[1].line, 4u);
    EXPECT_EQ(split.messages[2].line, 5u);
    EXPECT_TRUE(split.ended);
  }
}

TEST(WriteBody, EmptyBodyHasNoMessage) {
  EXPECT_TRUE(SplitBody("", 4).messages.empty());
  EXPECT_TRUE(SplitBody(" \n\n", 1).messages.empty());
}

TEST(WriteBody, ReadsAnArray) {
  Split split = SplitBody(" [{\"a\": 1.5}, {\"b\": \"x\"}, 7]\n", 3);
  ASSERT_FALSE(split.refused.has_value());
  ASSERT_EQ(split.messages.size(), 3u);
  EXPECT_EQ(split.messages[0].json, "{\"a\":1.5}");
  EXPECT_EQ(split.messages[1].json, "{\"b\":\"x\"}");
  EXPECT_EQ(split.messages[2].json, "7");  // the message's parse refuses it
  EXPECT_EQ(split.messages[2].index, 3u);
  EXPECT_EQ(split.messages[2].line, 0u);
}

TEST(WriteBody, MalformedArrayIs400) {
  Split split = SplitBody("[{\"a\": 1}, {", 5);
  ASSERT_TRUE(split.refused.has_value());
  EXPECT_EQ(split.refused->http_status, 400);
  EXPECT_NE(split.refused->status.message().find("not a JSON array"), std::string::npos);
}

TEST(WriteBody, LinePastMessageLimitIs413NamingIt) {
  const std::string body = "{\"a\":1}\n{\"b\":\"" + std::string(40, 'x') + "\"}\n{\"c\":3}\n";
  for (size_t chunk : {1, 8, 1000}) {
    Split split = SplitBody(body, chunk, {/*max_message_bytes=*/20, /*max_call_bytes=*/1000});
    ASSERT_TRUE(split.refused.has_value()) << chunk;
    EXPECT_EQ(split.refused->http_status, 413);
    EXPECT_EQ(split.refused->status.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(split.refused->status.message().find("message 2 (line 2)"), std::string::npos)
        << split.refused->status.message();
    EXPECT_NE(split.refused->status.message().find("--max-message-bytes"), std::string::npos);
    EXPECT_EQ(split.messages.size(), 1u);
    EXPECT_FALSE(split.ended);
  }
}

TEST(WriteBody, ArrayPastMessageLimitIs413) {
  Split split = SplitBody("[{\"a\":1},{\"b\":2},{\"c\":3}]", 4, {10, 1000});
  ASSERT_TRUE(split.refused.has_value());
  EXPECT_EQ(split.refused->http_status, 413);
  EXPECT_TRUE(split.messages.empty());
}

TEST(WriteBody, CallPastCallLimitIs413) {
  std::string body;
  for (int i = 0; i < 20; ++i) body += "{\"a\":1}\n";  // 160 bytes
  Split within = SplitBody(body, 16, {100, 160});
  EXPECT_FALSE(within.refused.has_value());
  EXPECT_EQ(within.messages.size(), 20u);
  Split past = SplitBody(body, 16, {100, 159});
  ASSERT_TRUE(past.refused.has_value());
  EXPECT_EQ(past.refused->http_status, 413);
  EXPECT_NE(past.refused->status.message().find("limit on one Adapt or Forget call"),
            std::string::npos);
  EXPECT_LT(past.messages.size(), 20u);
}

TEST(WriteBody, FailedConnectionIs400) {
  WriteBody reader([](char*, size_t) { return -1; }, {});
  BodyMessage message;
  bool got = true;
  std::optional<BodyRefusal> refused = reader.Next(&message, &got);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->http_status, 400);
  EXPECT_FALSE(got);
}

}  // namespace
}  // namespace adaptd::http
