// The Open Inference Protocol's infer bodies: JSON and binary tensors read into a Predict,
// the answer's tensors written in JSON and binary, and each malformed input refused naming
// the field.
#include "server/http/oip_tensors.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "gtest/gtest.h"

namespace adaptd::http::oip {
namespace {

using Json = nlohmann::json;

std::string Floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

std::string Strings(std::initializer_list<std::string> values) {
  std::string out;
  for (const std::string& v : values) {
    const auto n = static_cast<uint32_t>(v.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += v;
  }
  return out;
}

// The body and its Inference-Header-Content-Length for a JSON header and binary data.
std::pair<std::string, std::string> Binary(const Json& header, const std::string& data) {
  const std::string json = header.dump();
  return {json + data, std::to_string(json.size())};
}

TEST(OipTensors, ReadsJsonRowsNestedOrFlat) {
  for (const char* data : {"[[1, 2], [3, 4.5]]", "[1, 2, 3, 4.5]"}) {
    const std::string body = std::string(R"({"id": "q", "inputs": [{"name": "INPUT",
        "datatype": "FP64", "shape": [2, 2], "data": )") +
                             data + "}]}";
    absl::StatusOr<InferCall> call = ParseInfer(body, std::nullopt);
    ASSERT_TRUE(call.ok()) << call.status();
    ASSERT_EQ(call->predict.inputs_size(), 2);
    EXPECT_EQ(call->predict.inputs(1).vector().values(1), 4.5f);
    EXPECT_EQ(call->id, "q");
    EXPECT_TRUE(call->outputs.empty());
  }
}

TEST(OipTensors, ReadsBinaryFloatsAndTexts) {
  auto [body, length] =
      Binary({{"inputs",
               {{{"name", "INPUT"},
                 {"datatype", "FP32"},
                 {"shape", {1, 3}},
                 {"parameters", {{"binary_data_size", 12}}}}}},
              {"outputs", {{{"name", "labels"}, {"parameters", {{"classification", 2}}}}}}},
             Floats({1, -2, 0.25f}));
  absl::StatusOr<InferCall> call = ParseInfer(body, length);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->predict.inputs_size(), 1);
  EXPECT_EQ(call->predict.inputs(0).vector().values(2), 0.25f);
  EXPECT_EQ(call->predict.top_k(), 2u);
  ASSERT_EQ(call->outputs.size(), 1u);
  EXPECT_FALSE(call->outputs[0].binary);

  auto [texts, text_length] = Binary({{"inputs",
                                       {{{"name", "INPUT"},
                                         {"datatype", "BYTES"},
                                         {"shape", {2}},
                                         {"parameters", {{"binary_data_size", 4 + 2 + 4 + 0}}}}}}},
                                     Strings({"hi", ""}));
  call = ParseInfer(texts, text_length);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->predict.inputs_size(), 2);
  EXPECT_EQ(call->predict.inputs(0).text(), "hi");
  EXPECT_EQ(call->predict.inputs(1).text(), "");
}

// Each refusal is INVALID_ARGUMENT naming what is wrong.
TEST(OipTensors, RefusesMalformedInputsNamingThem) {
  const std::string fp32 = Floats({1, 2});
  const struct {
    std::string body;
    std::optional<std::string> length;
    std::string names;
  } cases[] = {
      {"{", std::nullopt, "not a JSON object"},
      {R"({"inputs": []})", std::nullopt, "inputs"},
      {R"({"inputs": [{"name": "X", "datatype": "FP32", "shape": [1], "data": [1]}]})",
       std::nullopt, "input X: no such input"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "INT8", "shape": [1], "data": [1]}]})",
       std::nullopt, "datatype INT8"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [2, 2], "data": [1, 2]}]})",
       std::nullopt, "holds 4 elements, the data 2"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1], "data": ["a"]}]})",
       std::nullopt, "data[0]: expected a number"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "BYTES", "shape": [1], "data": [1]}]})",
       std::nullopt, "data[0]: expected a string"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1, -1], "data": []}]})",
       std::nullopt, "shape"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1], "data": [1]}],
           "outputs": [{"name": "probs"}]})",
       std::nullopt, "output probs: no such output"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1], "data": [1]}],
           "outputs": [{"name": "labels", "parameters": {"classification": 0}}]})",
       std::nullopt, "classification"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [3],
           "parameters": {"binary_data_size": 8}}]})" +
           fp32,
       "89", "shape [3] of FP32 is 12 bytes, binary_data_size 8"},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [2],
           "parameters": {"binary_data_size": 16}}]})" +
           fp32,
       "89", "binary_data_size: 16 bytes"},
      {"{}" + fp32, "x", "Inference-Header-Content-Length: \"x\""},
      {"{}" + fp32, "100", "Inference-Header-Content-Length: \"100\""},
      {R"({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [2], "data": [1, 2]}]})" +
           fp32,
       std::nullopt, "not a JSON object"},
  };
  for (const auto& c : cases) {
    std::optional<std::string> length = c.length;
    if (length == "89") length = std::to_string(c.body.size() - fp32.size());
    absl::StatusOr<InferCall> call = ParseInfer(c.body, length);
    ASSERT_FALSE(call.ok()) << c.body;
    EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(call.status().message().find(c.names), std::string::npos)
        << c.body << " -> " << call.status();
  }
}

adapt::v1::PredictResponse TwoLabelRows() {
  adapt::v1::PredictResponse response;
  response.set_version(7);
  for (const char* first : {"cat", "dog"}) {
    auto* p = response.add_predictions();
    auto* a = p->add_labels();
    a->set_label(first);
    a->set_score(0.75f);
    auto* b = p->add_labels();
    b->set_label("eel");
    b->set_score(0.25f);
  }
  return response;
}

TEST(OipTensors, WritesLabelsAndScoresInJsonAndBinary) {
  InferCall call;
  call.id = "q";
  absl::StatusOr<InferAnswer> answer = WriteInfer(call, "t/s", TwoLabelRows());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->header_length.has_value());
  const Json json = Json::parse(answer->body);
  EXPECT_EQ(json["model_name"], "t/s");
  EXPECT_EQ(json["model_version"], "7");
  EXPECT_EQ(json["id"], "q");
  EXPECT_EQ(json["outputs"][0]["name"], "labels");
  EXPECT_EQ(json["outputs"][0]["shape"], Json({2, 2}));
  EXPECT_EQ(json["outputs"][0]["data"], Json({"cat", "eel", "dog", "eel"}));
  EXPECT_EQ(json["outputs"][1]["datatype"], "FP32");
  EXPECT_EQ(json["outputs"][1]["data"], Json({0.75, 0.25, 0.75, 0.25}));

  call.outputs = {{"scores", true}, {"labels", true}};
  answer = WriteInfer(call, "t/s", TwoLabelRows());
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_TRUE(answer->header_length.has_value());
  const Json header = Json::parse(answer->body.substr(0, *answer->header_length));
  EXPECT_EQ(header["outputs"][0]["name"], "scores");
  EXPECT_EQ(header["outputs"][0]["parameters"]["binary_data_size"], 16);
  EXPECT_FALSE(header["outputs"][0].contains("data"));
  EXPECT_EQ(answer->body.substr(*answer->header_length),
            Floats({0.75f, 0.25f, 0.75f, 0.25f}) + Strings({"cat", "eel", "dog", "eel"}));

  call.outputs = {{"vectors", false}};
  answer = WriteInfer(call, "t/s", TwoLabelRows());
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.status().message().find("output vectors"), std::string::npos);
}

TEST(OipTensors, WritesVectorsAndMetadata) {
  adapt::v1::PredictResponse response;
  for (float v : {1.0f, 2.0f}) {
    auto* p = response.add_predictions();
    p->add_vector(v);
    p->add_vector(-v);
  }
  InferCall call;
  call.binary_output = true;
  absl::StatusOr<InferAnswer> answer = WriteInfer(call, "t/v", response);
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_TRUE(answer->header_length.has_value());
  const Json header = Json::parse(answer->body.substr(0, *answer->header_length));
  EXPECT_EQ(header["outputs"][0]["name"], "vectors");
  EXPECT_EQ(header["outputs"][0]["shape"], Json({2, 2}));
  EXPECT_EQ(answer->body.substr(*answer->header_length), Floats({1, -1, 2, -2}));

  adapt::v1::StoreInfo store;
  store.set_version(3);
  store.mutable_spec()->set_dim(64);
  store.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_VECTOR);
  store.mutable_spec()->mutable_output()->set_dim(5);
  Json metadata = Json::parse(ModelMetadata("t/v", store, false));
  EXPECT_EQ(metadata["name"], "t/v");
  EXPECT_EQ(metadata["versions"], Json({"3"}));
  EXPECT_EQ(metadata["inputs"][0]["datatype"], "FP32");
  EXPECT_EQ(metadata["inputs"][0]["shape"], Json({-1, 64}));
  EXPECT_EQ(metadata["outputs"][0]["shape"], Json({-1, 5}));
  store.mutable_spec()->mutable_output()->set_kind(adapt::v1::OutputSpec::KIND_LABELS);
  metadata = Json::parse(ModelMetadata("t/v", store, true));
  EXPECT_EQ(metadata["inputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(metadata["inputs"][0]["shape"], Json::array({-1}));
  EXPECT_EQ(metadata["outputs"][1]["name"], "scores");

  EXPECT_EQ(Json::parse(ErrorBody(absl::NotFoundError("no such store")))["error"], "no such store");
}

}  // namespace
}  // namespace adaptd::http::oip
