// The acceptance test of the onnx encoder's text input (docs/ONNX.md, slice 4): an fp32 ONNX
// graph of all-MiniLM-L6-v2, built from its safetensors weights by
// testdata/onnx/make_minilm_onnx.py (the ctest fixture onnx_minilm_graph writes it to
// ADAPTD_MINILM_ONNX_DIR, a directory of the build), run
// by the onnx encoder with mean pooling and normalisation, gives the native sentence_bert
// encoder's vectors (cosine >= 0.9999) on the fixture's 113 texts and on texts far past the
// 256-token limit, in one batch cut into sub-batches.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/minilm_dir.h"
#include "server/encoders/encoder_set.h"
#include "server/encoders/onnx/onnx_test_util.h"

namespace adaptd {
namespace {

std::vector<std::string> Texts() {
  std::ifstream in(std::string(ADAPTD_MINILM_FIXTURE_DIR) + "/sentences.json");
  EXPECT_TRUE(in.good());
  const nlohmann::json fixture = nlohmann::json::parse(in);
  std::vector<std::string> texts;
  for (const auto& s : fixture["sentences"]) {
    if (!s["text"].get<std::string>().empty()) texts.push_back(s["text"]);  // servers refuse ""
  }
  EXPECT_GE(texts.size(), 100u);
  // Long texts: far past max_tokens, so both encoders truncate them.
  std::string words, numbers;
  for (int i = 0; i < 700; ++i) words += i % 7 == 0 ? "adaptation " : "the server keeps ";
  for (int i = 0; i < 400; ++i) numbers += std::to_string(i * 37) + ", ";
  texts.push_back(words);
  texts.push_back(numbers);
  texts.push_back("short");
  return texts;
}

TEST(OnnxMiniLmTest, TheOnnxGraphGivesTheNativeSentenceBertVectors) {
  ADAPTD_REQUIRE_MINILM(model_dir);
  const std::string onnx_model = std::string(ADAPTD_MINILM_ONNX_DIR) + "/model.onnx";
  ASSERT_TRUE(std::filesystem::exists(onnx_model))
      << onnx_model << " is missing: make_minilm_onnx.py builds it (ctest's onnx_minilm_graph)";
  onnx_test::UseTestRuntime();

  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  adapt::v1::EncoderConfig* native = configs.Add();
  native->set_name("native");
  native->set_type("sentence_bert");
  native->set_model_path(model_dir);
  adapt::v1::EncoderConfig* onnx = configs.Add();
  onnx->set_name("onnx");
  onnx->set_type("onnx");
  onnx->set_input("text");
  onnx->set_model_path(onnx_model);
  onnx->set_output_tensor("last_hidden_state");
  onnx->set_pooling("mean");
  onnx->set_normalize(true);
  onnx->set_max_tokens(256);  // the model's max_seq_length, as sentence_bert reads it
  onnx->set_max_batch(16);
  std::unique_ptr<kernels::Backend> backend = kernels::MakeCpuBackend();
  absl::StatusOr<std::unique_ptr<EncoderSet>> set = EncoderSet::Create(configs, backend.get());
  ASSERT_TRUE(set.ok()) << set.status();
  const Encoder* a = (*set)->Find("native");
  const Encoder* b = (*set)->Find("onnx");
  EXPECT_EQ(b->dim(), 384);
  EXPECT_EQ(b->info().max_tokens(), 256u);

  const std::vector<std::string> texts = Texts();
  std::vector<adapt::v1::Input> inputs(texts.size());
  std::vector<const adapt::v1::Input*> pointers;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs[i].set_text(texts[i]);
    pointers.push_back(&inputs[i]);
  }
  auto field = [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
  absl::StatusOr<EncodedBatch> want = a->Encode(pointers, 0, 8192, field);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<EncodedBatch> got = b->Encode(pointers, 0, 8192, field);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->keys.size(), want->keys.size());
  double worst = 1;
  for (size_t r = 0; r < texts.size(); ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < 384; ++j) {
      const double x = got->keys[r * 384 + j], y = want->keys[r * 384 + j];
      ab += x * y;
      aa += x * x;
      bb += y * y;
    }
    const double cosine = ab / std::sqrt(aa * bb);
    worst = std::min(worst, cosine);
    EXPECT_GE(cosine, 0.9999) << "text " << r << ": " << texts[r].substr(0, 80);
  }
  std::printf("onnx MiniLM against sentence_bert: %zu texts, lowest cosine %.9f\n", texts.size(),
              worst);
}

}  // namespace
}  // namespace adaptd
