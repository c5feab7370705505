#include "server/rpc/wire.h"

#include <string>

#include "adapt/v1/adapt.pb.h"
#include "adapt/v1/config.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"

namespace adaptd {
namespace {

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// Wire bytes with a bad second label or text, patched in after serializing (so protobuf does
// not complain while serializing): the bytes a client that does not check would send. The
// placeholders and their replacements are 8 bytes each, so the length prefixes stay right.
std::string AdaptBytes(const std::string& second_label, const std::string& text) {
  adapt::v1::AdaptRequest request;
  request.set_tenant("t");
  request.set_store("s");
  auto* first = request.add_examples();
  first->set_label("ok");
  first->mutable_input()->set_text("fine");
  auto* second = request.add_examples();
  second->set_label("L0000000");
  second->mutable_input()->set_text("T0000000");
  std::string bytes = request.SerializeAsString();
  auto replace = [&bytes](const std::string& from, const std::string& to) {
    ASSERT_EQ(from.size(), to.size());
    bytes.replace(bytes.find(from), from.size(), to);
  };
  replace("L0000000", second_label);
  replace("T0000000", text);
  return bytes;
}

TEST(WireTest, ParsesAValidMessage) {
  adapt::v1::PredictRequest request;
  request.set_tenant("t\xc3\xa9");
  request.add_inputs()->set_text("caf\xc3\xa9 \xf0\x9f\x98\x80");
  request.set_top_k(3);
  adapt::v1::PredictRequest parsed;
  parsed.set_store("stale");  // cleared by the parse
  ASSERT_TRUE(ParseMessage(Buffer(request.SerializeAsString()), &parsed).ok());
  EXPECT_EQ(parsed.SerializeAsString(), request.SerializeAsString());
}

TEST(WireTest, NamesTheRepeatedNestedField) {
  const std::string bytes = AdaptBytes(
      "bad\xff"
      "abcd",
      "T0000000");
  EXPECT_EQ(FindInvalidUtf8Field(bytes, *adapt::v1::AdaptRequest::descriptor()),
            "examples[1].label");
  adapt::v1::AdaptRequest parsed;
  const grpc::Status status = ParseMessage(Buffer(bytes), &parsed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "examples[1].label: not valid UTF-8");
  EXPECT_EQ(parsed.examples_size(), 0) << "a refused message leaves nothing behind";

  const std::string text = AdaptBytes("L0000000",
                                      "ovl\xc0\xaf"
                                      "abc");
  EXPECT_EQ(FindInvalidUtf8Field(text, *adapt::v1::AdaptRequest::descriptor()),
            "examples[1].input.text");
}

TEST(WireTest, EveryKindOfBadSequence) {
  for (const std::string& bad :
       {std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"), std::string("\xe2\x82"),
        std::string("\x80"), std::string("\xf8\x88\x80\x80\x80")}) {
    adapt::v1::GetStoreRequest request;
    request.set_tenant("t");
    request.set_store("s");
    std::string bytes = request.SerializeAsString() + std::string(1, '\x12') +
                        std::string(1, static_cast<char>(bad.size())) + bad;  // store again
    EXPECT_EQ(FindInvalidUtf8Field(bytes, *adapt::v1::GetStoreRequest::descriptor()), "store")
        << "bytes of size " << bad.size();
  }
}

TEST(WireTest, MapEntriesAndUnknownFieldsAreWalked) {
  adapt::v1::ServerConfig config;
  (*config.mutable_tenant_quotas())["tenant"].set_max_stores(1);
  std::string bytes = config.SerializeAsString();
  const size_t at = bytes.find("tenant");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = '\xc3';  // "t\xc3nant": a lead byte without its continuation
  EXPECT_EQ(FindInvalidUtf8Field(bytes, *adapt::v1::ServerConfig::descriptor()),
            "tenant_quotas[0].key");
  // An unknown field (number 1000, length-delimited) holding anything is skipped.
  std::string unknown = "\xc2\x3e\x02\xff\xff";
  EXPECT_EQ(FindInvalidUtf8Field(unknown, *adapt::v1::GetStoreRequest::descriptor()), "");
}

TEST(WireTest, MalformedBytesAreRefusedWithoutAField) {
  adapt::v1::GetStoreRequest parsed;
  const std::string truncated = "\x0a\x10short";  // declares 16 bytes, carries 5
  EXPECT_EQ(FindInvalidUtf8Field(truncated, *adapt::v1::GetStoreRequest::descriptor()), "");
  const grpc::Status status = ParseMessage(Buffer(truncated), &parsed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "request: not a valid adapt.v1.GetStoreRequest message (malformed protobuf)");
}

TEST(WireTest, SerializeRoundTrips) {
  adapt::v1::StoreInfo info;
  info.set_tenant("t");
  info.set_store("s");
  grpc::ByteBuffer buffer;
  ASSERT_TRUE(SerializeMessage(info, &buffer).ok());
  adapt::v1::StoreInfo back;
  ASSERT_TRUE(ParseMessage(buffer, &back).ok());
  EXPECT_EQ(back.SerializeAsString(), info.SerializeAsString());
  // The buffer of a stream's responses is reused: the next message replaces the last.
  info.set_store("next");
  ASSERT_TRUE(SerializeMessage(info, &buffer).ok());
  ASSERT_TRUE(ParseMessage(buffer, &back).ok());
  EXPECT_EQ(back.store(), "next");
}

}  // namespace
}  // namespace adaptd
