// The direct reader of Predict's common JSON shape reads exactly what the JSON mapping reads,
// and leaves every other form (and every refusal) to the mapping.
#include "server/http/predict_json.h"

#include "gtest/gtest.h"
#include "server/http/json_mapping.h"

namespace adaptd::http {
namespace {

TEST(PredictJson, ReadsTheCommonShapeAsTheMappingDoes) {
  for (const char* body : {
           R"({"tenant": "t", "store": "s", "top_k": 3,
               "inputs": [{"vector": {"values": [1, -2.5, 3e-2, 0.1, 0, 1E+3]}},
                          {"vector": {"values": []}}, {}]})",
           R"({"inputs":[{"vector":{"values":[0.30000001192092896,1.17549435e-38]}}],
               "store":"s","tenant":"t"})",
           "\n{ }\t",
           R"({"tenant": "t", "top_k": 4294967295})",
           R"({"inputs": [{"vector": {"values": [3.4028234663852886e38, -1e-50]}}]})",
       }) {
    adapt::v1::PredictRequest direct, mapped;
    ASSERT_TRUE(ReadPredictJson(body, &direct)) << body;
    ASSERT_TRUE(ParseJson(body, &mapped).ok()) << body;
    EXPECT_EQ(direct.SerializeAsString(), mapped.SerializeAsString()) << body;
  }
}

TEST(PredictJson, LeavesOtherFormsToTheMapping) {
  for (const char* body : {
           R"({"topK": 1})",                                    // the lowerCamelCase name
           R"({"top_k": "1"})",                                 // a quoted number
           R"({"top_k": 1.0})",                                 // a fraction
           R"({"top_k": -1})",                                  // refused by the mapping
           R"({"top_k": 4294967296})",                          // past uint32
           R"({"tenant": "a\u0062"})",                          // an escape
           "{\"tenant\": \"\xc3\xa9\"}",                        // UTF-8 beyond ASCII
           R"({"tenant": null})",                               // null
           R"({"tenant": "t", "tenant": "u"})",                 // a repeated key
           R"({"inputs": [{"text": "hi"}]})",                   // another input
           R"({"inputs": [{"vector": {"values": ["NaN"]}}]})",  // a quoted float
           R"({"inputs": [{"vector": {"values": [1e39]}}]})",   // past float's range
           R"({"inputs": [{"vector": {"values": [1,]}}]})",     // malformed
           R"({"stor": "s"})",                                  // an unknown field
           R"({} {})",                                          // trailing data
           "",                                                  // the empty body
       }) {
    adapt::v1::PredictRequest request;
    EXPECT_FALSE(ReadPredictJson(body, &request)) << body;
  }
}

}  // namespace
}  // namespace adaptd::http
