#include "server/http/http_status.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace adaptd::http {
namespace {

TEST(HttpStatus, EachCodeMapsAsTheDesignSays) {
  using C = absl::StatusCode;
  const std::pair<C, int> expected[] = {
      {C::kOk, 200},
      {C::kCancelled, 499},
      {C::kUnknown, 500},
      {C::kInvalidArgument, 400},
      {C::kDeadlineExceeded, 504},
      {C::kNotFound, 404},
      {C::kAlreadyExists, 409},
      {C::kPermissionDenied, 403},
      {C::kResourceExhausted, 429},
      {C::kFailedPrecondition, 400},
      {C::kAborted, 409},
      {C::kOutOfRange, 400},
      {C::kUnimplemented, 501},
      {C::kInternal, 500},
      {C::kUnavailable, 503},
      {C::kDataLoss, 500},
      {C::kUnauthenticated, 401},
  };
  for (const auto& [code, http] : expected) {
    EXPECT_EQ(HttpStatusOf(code), http) << absl::StatusCodeToString(code);
  }
}

TEST(HttpStatus, TheLibrarysOwnErrorsHaveTheirCodes) {
  using C = absl::StatusCode;
  EXPECT_EQ(CodeOfHttpStatus(400), C::kInvalidArgument);
  EXPECT_EQ(CodeOfHttpStatus(411), C::kInvalidArgument);
  EXPECT_EQ(CodeOfHttpStatus(431), C::kInvalidArgument);
  EXPECT_EQ(CodeOfHttpStatus(404), C::kNotFound);
  EXPECT_EQ(CodeOfHttpStatus(408), C::kDeadlineExceeded);
  EXPECT_EQ(CodeOfHttpStatus(413), C::kResourceExhausted);
  EXPECT_EQ(CodeOfHttpStatus(500), C::kInternal);
  EXPECT_EQ(CodeOfHttpStatus(503), C::kUnavailable);
  EXPECT_EQ(CodeOfHttpStatus(502), C::kUnknown);
}

TEST(HttpStatus, ErrorBodyNamesTheCodeAndKeepsTheMessage) {
  const Reply reply = ErrorReply(absl::InvalidArgumentError("spec.dim: must be at least 1"));
  EXPECT_EQ(reply.status, 400);
  const auto body = nlohmann::json::parse(reply.body);
  EXPECT_EQ(body["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(body["message"], "spec.dim: must be at least 1");
  EXPECT_EQ(body.size(), 2u);
}

TEST(HttpStatus, TransportStatusOverridesTheMapping) {
  const Reply reply = ErrorReply(413, absl::ResourceExhaustedError("request body: too large"));
  EXPECT_EQ(reply.status, 413);
  EXPECT_EQ(nlohmann::json::parse(reply.body)["code"], "RESOURCE_EXHAUSTED");
}

TEST(HttpStatus, MessageThatIsNotUtf8StaysJson) {
  const Reply reply = ErrorReply(absl::NotFoundError("store t/\xff\xfe: not found"));
  const auto body = nlohmann::json::parse(reply.body);  // throws when not valid JSON
  EXPECT_EQ(body["code"], "NOT_FOUND");
}

}  // namespace
}  // namespace adaptd::http
