// The onnx encoder's text input against the Python onnxruntime's answers for the small text
// model of testdata/onnx/text (reference.json, "text/text.onnx": each text run alone, its
// token ids, the mean of its rows and its first row), its sub-batches, and its refusals.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/backend.h"
#include "server/core/engine.h"
#include "server/encoders/encoder_set.h"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/onnx/onnx_engine_test_util.h"
#include "server/encoders/onnx/onnx_test_util.h"
#include "server/encoders/onnx/onnx_text_input.h"

namespace adaptd {
namespace {

namespace fs = std::filesystem;
using onnx_test::Data;
using onnx_test::ResidentBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const nlohmann::json& TextReference() {
  static const nlohmann::json* reference =
      new nlohmann::json(onnx_test::Reference()["text/text.onnx"]);
  return *reference;
}

adapt::v1::EncoderConfig TextConfig(const std::string& model = Data("text/text.onnx")) {
  adapt::v1::EncoderConfig config;
  config.set_name("words");
  config.set_type("onnx");
  config.set_input("text");
  config.set_model_path(model);
  config.set_output_tensor("hidden");
  config.set_max_tokens(TextReference()["max_tokens"].get<uint32_t>());
  return config;
}

std::vector<std::string> Texts() {
  std::vector<std::string> texts;
  for (const auto& run : TextReference()["runs"]) texts.push_back(run["text"]);
  return texts;
}

absl::StatusOr<EncodedBatch> EncodeTexts(const Encoder& encoder,
                                         const std::vector<std::string>& texts) {
  std::vector<adapt::v1::Input> inputs(texts.size());
  std::vector<const adapt::v1::Input*> pointers;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs[i].set_text(texts[i]);
    pointers.push_back(&inputs[i]);
  }
  return encoder.Encode(pointers, 0, 8192,
                        [](size_t i) { return "examples[" + std::to_string(i) + "].input"; });
}

void ExpectRowsClose(const std::vector<float>& got, const std::vector<std::vector<float>>& want) {
  const size_t dim = want[0].size();
  ASSERT_EQ(got.size(), want.size() * dim);
  for (size_t r = 0; r < want.size(); ++r) {
    for (size_t j = 0; j < dim; ++j) {
      EXPECT_LE(std::abs(got[r * dim + j] - want[r][j]),
                1e-5 * std::max(1.0f, std::abs(want[r][j])))
          << "row " << r << " column " << j;
    }
  }
}

class OnnxTextTest : public onnx_test::EncoderTest {
 protected:
  // A directory holding a copy of the text model and its vocab.txt, plus `extra` files.
  static std::string ModelDir(const std::string& name, const std::vector<std::string>& extra,
                              bool vocab = true) {
    const fs::path dir = fs::path(::testing::TempDir()) / ("onnx_text_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(Data("text/text.onnx"), dir / "text.onnx");
    if (vocab) fs::copy_file(Data("text/vocab.txt"), dir / "vocab.txt");
    for (const std::string& file : extra) std::ofstream(dir / file) << "{}";
    return (dir / "text.onnx").string();
  }
};

TEST_F(OnnxTextTest, TokenIdsAreTheReferences) {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load("");
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(*runtime, Data("text/text.onnx"), {.arena = false});
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::unique_ptr<OnnxTextInput>> input =
      OnnxTextInput::Create(**model, TextConfig(), "encoders[0]");
  ASSERT_TRUE(input.ok()) << input.status();
  int64_t cut_texts = 0;
  std::vector<int64_t> cut_rows;  // the texts the reference says pass max_tokens
  for (size_t r = 0; r < TextReference()["runs"].size(); ++r) {
    const auto& run = TextReference()["runs"][r];
    bool truncated = false;
    const std::vector<int32_t> ids = (*input)->Tokenize(run["text"].get<std::string>(), &truncated);
    EXPECT_EQ(ids, run["ids"].get<std::vector<int32_t>>()) << run["text"];
    EXPECT_EQ(truncated, run["truncated"].get<bool>()) << run["text"];
    cut_texts += truncated ? 1 : 0;
    if (run["truncated"].get<bool>()) cut_rows.push_back(static_cast<int64_t>(r));
  }
  // Truncation counts the texts cut.
  std::vector<std::string> texts = Texts();
  std::vector<std::string_view> views(texts.begin(), texts.end());
  std::vector<float> out(texts.size() * 4);
  absl::StatusOr<std::vector<int64_t>> cut = (*input)->Encode(**model, views, 64, out.data());
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(static_cast<int64_t>(cut->size()), cut_texts);
  EXPECT_EQ(cut_texts, 2);
  EXPECT_EQ(*cut, cut_rows);  // which ones, by their index in the batch
}

TEST_F(OnnxTextTest, KeysAreThePythonRuntimesPooledRowsInAnyBatchCut) {
  std::vector<std::vector<float>> mean, first;
  for (const auto& run : TextReference()["runs"]) {
    mean.push_back(run["mean"].get<std::vector<float>>());
    first.push_back(run["first"].get<std::vector<float>>());
  }
  for (uint32_t max_batch : {1u, 2u, 64u}) {
    for (const char* pooling : {"", "mean", "first"}) {
      SCOPED_TRACE(testing::Message() << "max_batch " << max_batch << " pooling " << pooling);
      adapt::v1::EncoderConfig config = TextConfig();
      config.set_max_batch(max_batch);
      config.set_pooling(pooling);
      std::unique_ptr<OnnxEncoder> encoder = Make(config);
      ASSERT_NE(encoder, nullptr);
      EXPECT_EQ(encoder->info().input_kind(), "text");
      EXPECT_EQ(encoder->dim(), 4);
      EXPECT_EQ(encoder->truncated_texts(), 0u);
      absl::StatusOr<EncodedBatch> keys = EncodeTexts(*encoder, Texts());
      ASSERT_TRUE(keys.ok()) << keys.status();
      ExpectRowsClose(keys->keys, std::string(pooling) == "first" ? first : mean);
      EXPECT_EQ(encoder->truncated_texts(), 2u);  // two of the texts pass max_tokens
      EXPECT_EQ(keys->truncated.size(), 2u);      // and the batch names them
    }
  }
}

TEST_F(OnnxTextTest, APooledOutputIsTakenAsItIs) {
  adapt::v1::EncoderConfig config = TextConfig();
  config.set_output_tensor("pooled");
  std::unique_ptr<OnnxEncoder> encoder = Make(config);
  ASSERT_NE(encoder, nullptr);
  // One text: no padding, so the model's plain mean is the mean over its tokens.
  const nlohmann::json run = TextReference()["runs"][1];
  absl::StatusOr<EncodedBatch> keys = EncodeTexts(*encoder, {run["text"].get<std::string>()});
  ASSERT_TRUE(keys.ok()) << keys.status();
  ExpectRowsClose(keys->keys, {run["mean"].get<std::vector<float>>()});

  config.set_pooling("first");
  EXPECT_THAT(Refusal(config).message(), HasSubstr("encoders[0].pooling: the output 'pooled'"));
}

TEST_F(OnnxTextTest, NormalizedKeysHaveUnitLength) {
  adapt::v1::EncoderConfig config = TextConfig();
  config.set_normalize(true);
  std::unique_ptr<OnnxEncoder> encoder = Make(config);
  ASSERT_NE(encoder, nullptr);
  absl::StatusOr<EncodedBatch> keys = EncodeTexts(*encoder, Texts());
  ASSERT_TRUE(keys.ok()) << keys.status();
  for (int64_t r = 0; r < keys->rows; ++r) {
    double norm2 = 0;
    for (int64_t j = 0; j < keys->dim; ++j) norm2 += std::pow(keys->keys[r * keys->dim + j], 2);
    EXPECT_NEAR(norm2, 1.0, 1e-5) << r;
  }
}

TEST_F(OnnxTextTest, InfoListsTheModelsTensorsAndMaxTokens) {
  std::unique_ptr<OnnxEncoder> encoder = Make(TextConfig());
  ASSERT_NE(encoder, nullptr);
  const adapt::v1::EncoderInfo& info = encoder->info();
  EXPECT_EQ(info.max_tokens(), 6u);
  ASSERT_EQ(info.input_tensors_size(), 3);
  EXPECT_EQ(info.input_tensors(0).name(), "input_ids");
  EXPECT_EQ(info.input_tensors(0).element_type(), "int64");
  EXPECT_THAT(info.input_tensors(0).shape(), ElementsAre(-1, -1));
  ASSERT_EQ(info.output_tensors_size(), 3);
  EXPECT_EQ(info.output_tensors(0).name(), "hidden");
  EXPECT_EQ(info.output_tensors(0).element_type(), "float32");
  EXPECT_THAT(info.output_tensors(0).shape(), ElementsAre(-1, -1, 4));
  EXPECT_EQ(info.output_tensors(2).element_type(), "int64");
}

TEST_F(OnnxTextTest, TheFingerprintCoversTheTextSettings) {
  std::unique_ptr<OnnxEncoder> base = Make(TextConfig());
  ASSERT_NE(base, nullptr);
  adapt::v1::EncoderConfig shorter = TextConfig();
  shorter.set_max_tokens(5);
  adapt::v1::EncoderConfig first = TextConfig();
  first.set_pooling("first");
  adapt::v1::EncoderConfig batch = TextConfig();
  batch.set_max_batch(3);
  batch.set_threads(1);
  EXPECT_NE(Make(shorter)->fingerprint(), base->fingerprint());
  EXPECT_NE(Make(first)->fingerprint(), base->fingerprint());
  EXPECT_EQ(Make(batch)->fingerprint(), base->fingerprint());
  EXPECT_EQ(Make(TextConfig(ModelDir("same", {})))->fingerprint(), base->fingerprint());
}

TEST_F(OnnxTextTest, BadTextsAndVectorsAreInvalidArgumentNamingTheExample) {
  std::unique_ptr<OnnxEncoder> encoder = Make(TextConfig());
  ASSERT_NE(encoder, nullptr);
  absl::StatusOr<EncodedBatch> empty = EncodeTexts(*encoder, {"a dog", ""});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "examples[1].input.text: empty");
  adapt::v1::Input vector;
  vector.mutable_vector()->add_values(1.0f);
  absl::StatusOr<EncodedBatch> wrong = encoder->Encode(
      {&vector}, 0, 8192, [](size_t i) { return "inputs[" + std::to_string(i) + "]"; });
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(), "inputs[0]: encoder 'words' takes text");
}

TEST_F(OnnxTextTest, OtherTokenizersFilesAreRefusedNamingThem) {
  absl::Status merges = Refusal(TextConfig(ModelDir("bpe", {"merges.txt", "vocab.json"})));
  EXPECT_EQ(merges.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(merges.message(), HasSubstr("encoders[0]: the onnx text input tokenizes with "
                                          "WordPiece"));
  EXPECT_THAT(merges.message(), HasSubstr("onnx_text_bpe/merges.txt"));
  EXPECT_THAT(merges.message(), HasSubstr("onnx_text_bpe/vocab.json"));

  const std::string unigram = ModelDir("unigram", {});
  std::ofstream(fs::path(unigram).parent_path() / "tokenizer.json")
      << R"({"model": {"type": "Unigram"}})";
  EXPECT_THAT(Refusal(TextConfig(unigram)).message(),
              HasSubstr("tokenizer.json (model type Unigram)"));
  const std::string wordpiece = ModelDir("wordpiece", {});
  std::ofstream(fs::path(wordpiece).parent_path() / "tokenizer.json")
      << R"({"model": {"type": "WordPiece"}})";
  EXPECT_TRUE(Refusal(TextConfig(wordpiece)).ok());

  absl::Status missing = Refusal(TextConfig(ModelDir("novocab", {}, /*vocab=*/false)));
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.message(), HasSubstr("onnx_text_novocab/vocab.txt: missing"));
}

TEST_F(OnnxTextTest, BadSettingsAndModelsAreRefusedNamingThem) {
  adapt::v1::EncoderConfig no_max = TextConfig();
  no_max.clear_max_tokens();
  EXPECT_EQ(Refusal(no_max).message(),
            "encoders[0].max_tokens: required: the model's input 'input_ids' has a dynamic "
            "sequence dimension");
  adapt::v1::EncoderConfig pooling = TextConfig();
  pooling.set_pooling("max");
  EXPECT_EQ(Refusal(pooling).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Refusal(pooling).message(), HasSubstr("encoders[0].pooling: 'max'"));
  adapt::v1::EncoderConfig unnamed = TextConfig();
  unnamed.clear_output_tensor();
  EXPECT_THAT(Refusal(unnamed).message(),
              HasSubstr("has 3 outputs; name one with output_tensor (outputs: hidden, pooled, "
                        "mask_seen)"));
  adapt::v1::EncoderConfig int_output = TextConfig();
  int_output.set_output_tensor("mask_seen");
  EXPECT_THAT(Refusal(int_output).message(),
              HasSubstr("output tensor 'mask_seen' is element type 7"));
  // The vector model has no token inputs.
  adapt::v1::EncoderConfig vectors = TextConfig(Data("linear.onnx"));
  vectors.clear_output_tensor();
  const absl::Status refused = Refusal(vectors);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
}

TEST(OnnxTextSubBatchesTest, OneLongTextDoesNotPadManyShortOnes) {
  std::vector<size_t> lengths(63, 10);
  lengths.push_back(256);
  const auto batches = OnnxTextInput::SubBatches(lengths, 64);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].size(), 63u);
  EXPECT_THAT(batches[1], ElementsAre(63));
}

TEST(OnnxTextSubBatchesTest, BatchesAreSortedBoundedAndPaddedWithinTwiceTheirTokens) {
  std::mt19937 random(40);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<size_t> lengths(1 + random() % 150);
    for (size_t& l : lengths) l = 2 + random() % (random() % 2 ? 20 : 300);
    const int64_t max_batch = 1 + random() % 70;
    std::vector<int> seen(lengths.size(), 0);
    for (const std::vector<size_t>& batch : OnnxTextInput::SubBatches(lengths, max_batch)) {
      ASSERT_FALSE(batch.empty());
      ASSERT_LE(static_cast<int64_t>(batch.size()), max_batch);
      size_t real = 0;
      for (size_t k = 0; k < batch.size(); ++k) {
        ++seen[batch[k]];
        real += lengths[batch[k]];
        if (k > 0) EXPECT_LE(lengths[batch[k - 1]], lengths[batch[k]]);
      }
      EXPECT_LE(batch.size() * lengths[batch.back()], 2 * real);
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(lengths.size()));
  }
  // Lengths within a factor of two share one batch.
  EXPECT_EQ(OnnxTextInput::SubBatches({5, 6, 7, 8, 9, 10}, 64).size(), 1u);
}

// threads 0 takes the server's backend threads on the runtime's shared pool; a set `threads`
// keeps a pool of the session's own. Each case loads a copy of the library (its own runtime).
TEST(OnnxEncoderThreadsTest, ThreadsZeroRunsOnTheSharedPoolOfTheBackendThreads) {
  const std::string library = ::testing::TempDir() + "/ort_encoder_pool.so";
  fs::copy_file(ADAPTD_ONNXRUNTIME_LIBRARY, library, fs::copy_options::overwrite_existing);
  adapt::v1::EncoderConfig config = onnx_test::OnnxConfig("proj", "linear.onnx");
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> pooled =
      OnnxEncoder::Create(config, "encoders[0]", {.library = library, .backend_threads = 2});
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_TRUE((*pooled)->shared_pool());
  EXPECT_EQ((*pooled)->session_threads(), 0);
  const nlohmann::json reference = onnx_test::Reference();
  const nlohmann::json& run = reference["linear.onnx"]["runs"][1];
  std::vector<adapt::v1::Input> inputs(5);
  std::vector<const adapt::v1::Input*> pointers;
  const std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
  for (size_t i = 0; i < values.size(); ++i) inputs[i / 4].mutable_vector()->add_values(values[i]);
  for (const auto& input : inputs) pointers.push_back(&input);
  absl::StatusOr<EncodedBatch> keys =
      (*pooled)->Encode(pointers, 0, 8192, [](size_t i) { return std::to_string(i); });
  ASSERT_TRUE(keys.ok()) << keys.status();
  ExpectRowsClose(keys->keys, {run["output"]["values"].get<std::vector<float>>()});

  config.set_threads(3);
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> own =
      OnnxEncoder::Create(config, "encoders[0]", {.library = library, .backend_threads = 2});
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_FALSE((*own)->shared_pool());
  EXPECT_EQ((*own)->session_threads(), 3);
  // The fingerprint ignores threads.
  EXPECT_EQ((*own)->fingerprint(), (*pooled)->fingerprint());
}

TEST(OnnxEncoderThreadsTest, TheServerConfigNamesTheLibraryAndTheBackendThreads) {
  adapt::v1::ServerConfig config;
  config.set_onnxruntime_library("/opt/ort/libonnxruntime.so.1");
  config.set_backend_threads(3);
  const EncoderSetOptions options = EncoderSetOptionsFromConfig(config);
  EXPECT_EQ(options.onnxruntime_library, "/opt/ort/libonnxruntime.so.1");
  EXPECT_EQ(options.backend_threads, 3);
  // The library named by the server config is the one opened, before the environment's.
  ::setenv(kOnnxRuntimeLibraryEnv, ADAPTD_ONNXRUNTIME_LIBRARY, 1);
  *config.add_encoders() = onnx_test::OnnxConfig("proj", "linear.onnx");
  config.set_onnxruntime_library("/nonexistent/libonnxruntime.so.1");
  absl::StatusOr<std::unique_ptr<EncoderSet>> set =
      EncoderSet::Create(config.encoders(), nullptr, EncoderSetOptionsFromConfig(config));
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(),
              HasSubstr("encoders[0] (onnx): ONNX Runtime's library "
                        "'/nonexistent/libonnxruntime.so.1' could not be opened"));
}

// The texts cut reach the encoder set's hook (the server's adaptd_encoder_truncated_texts_total):
// 0 once at start, so the series exists, then each batch's count; vector encoders never call it.
TEST_F(OnnxTextTest, TruncatedTextsReachTheEncoderSetsHookByEncoder) {
  std::vector<std::pair<std::string, uint64_t>> calls;
  EncoderSetOptions options;
  options.on_truncated_texts = [&calls](const std::string& encoder, uint64_t texts) {
    calls.emplace_back(encoder, texts);
  };
  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  *configs.Add() = TextConfig();
  *configs.Add() = onnx_test::OnnxConfig("proj", "linear.onnx");
  absl::StatusOr<std::unique_ptr<EncoderSet>> set = EncoderSet::Create(configs, nullptr, options);
  ASSERT_TRUE(set.ok()) << set.status();
  using Call = std::pair<std::string, uint64_t>;
  EXPECT_EQ(calls, (std::vector<Call>{{"words", 0}}));
  ASSERT_TRUE(EncodeTexts(*(*set)->Find("words"), Texts()).ok());
  EXPECT_EQ(calls, (std::vector<Call>{{"words", 0}, {"words", 2}}));
  ASSERT_TRUE(EncodeTexts(*(*set)->Find("words"), {"short"}).ok());
  EXPECT_EQ(calls.size(), 2u);  // nothing cut, no call
}

// The responses say how many texts the encoder cut: Adapt's for its examples, Predict's (alone
// and in a batch whose requests are encoded together) for each request's own inputs.
TEST_F(OnnxTextTest, AdaptAndPredictResponsesCountTheTextsCut) {
  const std::string dir = ::testing::TempDir() + "/onnx_text_engine";
  std::filesystem::remove_all(dir);
  adapt::v1::ServerConfig config;
  config.set_data_dir(dir);
  *config.add_encoders() = TextConfig();
  auto backend = kernels::MakeCpuBackend(1);
  auto engine = Engine::Create(config, backend.get(), nullptr);
  ASSERT_TRUE(engine.ok()) << engine.status();
  ASSERT_TRUE((*engine)->CreateStore(onnx_test::FaastStore("words", "words")).ok());
  const std::vector<std::string> texts = Texts();  // two pass max_tokens
  const std::vector<std::string> short_texts = {"a dog", "cat", "dogs"};
  auto adapt = [&](const std::vector<std::string>& inputs) {
    google::protobuf::RepeatedPtrField<adapt::v1::Example> examples;
    for (size_t i = 0; i < inputs.size(); ++i) {
      adapt::v1::Example* x = examples.Add();
      x->mutable_input()->set_text(inputs[i]);
      x->set_label(i % 2 == 0 ? "even" : "odd");
    }
    auto session = (*engine)->StartWrite(TxnKind::kAdapt);
    absl::Status added = session->Add("acme", "words", examples);
    EXPECT_TRUE(added.ok()) << added;
    return session->Finish();
  };
  absl::StatusOr<adapt::v1::AdaptResponse> adapted = adapt(texts);
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  EXPECT_EQ(adapted->accepted(), texts.size());
  EXPECT_EQ(adapted->truncated_texts(), 2u);
  adapted = adapt(short_texts);
  ASSERT_TRUE(adapted.ok()) << adapted.status();
  EXPECT_EQ(adapted->truncated_texts(), 0u);
  ASSERT_TRUE(onnx_test::Compile(**engine, "words").ok());

  auto request = [](const std::vector<std::string>& inputs) {
    adapt::v1::PredictRequest r;
    r.set_tenant("acme");
    r.set_store("words");
    for (const std::string& text : inputs) r.add_inputs()->set_text(text);
    return r;
  };
  const adapt::v1::PredictRequest cut = request(texts);
  const adapt::v1::PredictRequest whole = request(short_texts);
  absl::StatusOr<adapt::v1::PredictResponse> predicted = (*engine)->Predict(cut);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->predictions_size(), static_cast<int>(texts.size()));
  EXPECT_EQ(predicted->truncated_texts(), 2u);
  predicted = (*engine)->Predict(whole);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->truncated_texts(), 0u);
  const adapt::v1::PredictRequest last_cut = request({"cat", texts[4]});
  const auto batched = (*engine)->PredictBatch({&whole, &cut, &whole, &last_cut});
  ASSERT_EQ(batched.size(), 4u);
  std::vector<uint64_t> counts;
  for (const auto& response : batched) {
    ASSERT_TRUE(response.ok()) << response.status();
    counts.push_back(response->truncated_texts());
  }
  EXPECT_EQ(counts, (std::vector<uint64_t>{0, 2, 0, 1}));
}

// A text batch hands the heaps' free pages back (docs/ONNX.md, "Arena"): a 24 MiB block freed
// into a heap stays resident (glibc keeps it for reuse) until the next batch trims.
TEST_F(OnnxTextTest, ABatchHandsTheHeapsFreePagesBack) {
  std::unique_ptr<OnnxEncoder> encoder = Make(TextConfig());
  ASSERT_NE(encoder, nullptr);
  // Freeing a mapped 30 MiB block raises glibc's own mmap threshold above 24 MiB (the heap
  // settings fix it at 32 MiB, onnx_heaps.h), so blocks of 24 MiB come from a heap. The second
  // keeps the first below the heap's top (a freed top past the trim threshold is handed back
  // at once), where it stays resident once freed.
  static char* volatile block = nullptr;  // volatile: each block is really made and freed
  block = static_cast<char*>(std::malloc(size_t{30} << 20));
  std::memset(block, 1, size_t{30} << 20);
  std::free(block);
  block = static_cast<char*>(std::malloc(size_t{24} << 20));
  std::memset(block, 1, size_t{24} << 20);
  char* above = static_cast<char*>(std::malloc(size_t{24} << 20));
  std::free(block);
  const int64_t kept = ResidentBytes();
  absl::SleepFor(absl::Milliseconds(1100));  // past the trim interval of an earlier batch
  ASSERT_TRUE(EncodeTexts(*encoder, {"short"}).ok());
  EXPECT_LE(ResidentBytes(), kept - (16 << 20));
  std::free(above);
}

}  // namespace
}  // namespace adaptd
