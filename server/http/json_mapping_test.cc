#include "server/http/json_mapping.h"

#include "adapt/v1/adapt.pb.h"
#include "gtest/gtest.h"

namespace adaptd::http {
namespace {

using adapt::v1::GetStoreRequest;
using adapt::v1::PredictRequest;

TEST(JsonMapping, ReadsProtoAndCamelCaseFieldNames) {
  PredictRequest request;
  ASSERT_TRUE(ParseJson(R"({"tenant": "t", "store": "s", "top_k": 3})", &request).ok());
  EXPECT_EQ(request.tenant(), "t");
  EXPECT_EQ(request.top_k(), 3u);
  PredictRequest camel;
  ASSERT_TRUE(ParseJson(R"({"topK": 3})", &camel).ok());
  EXPECT_EQ(camel.top_k(), 3u);
}

TEST(JsonMapping, AnEmptyBodyIsTheEmptyMessage) {
  GetStoreRequest request;
  ASSERT_TRUE(ParseJson("", &request).ok());
  ASSERT_TRUE(ParseJson(" \n", &request).ok());
  EXPECT_EQ(request.ByteSizeLong(), 0u);
}

TEST(JsonMapping, RefusalsNameTheProblem) {
  GetStoreRequest request;
  const absl::Status unknown = ParseJson(R"({"tenant": "t", "stor": "s"})", &request);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("stor"), absl::string_view::npos) << unknown.message();
  EXPECT_NE(unknown.message().find("adapt.v1.GetStoreRequest"), absl::string_view::npos);

  const absl::Status malformed = ParseJson(R"({"tenant": )", &request);
  EXPECT_EQ(malformed.code(), absl::StatusCode::kInvalidArgument);

  PredictRequest predict;
  const absl::Status wrong_type = ParseJson(R"({"top_k": "three"})", &predict);
  EXPECT_EQ(wrong_type.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_type.message().find("top_k"), absl::string_view::npos) << wrong_type.message();
}

TEST(JsonMapping, PrintsProtoFieldNames) {
  PredictRequest request;
  request.set_tenant("t");
  request.set_top_k(2);
  absl::StatusOr<std::string> json = PrintJson(request);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, R"({"tenant":"t","top_k":2})");
}

}  // namespace
}  // namespace adaptd::http
