// The onnx encoder's figures (bench/RESULTS.md, "ONNX encoders"; run.sh drives it with
// ort_peer.py, the Python onnxruntime on the same tensors). Each subcommand prints one JSON line
// per case:
//   model     the model run alone (OrtModel, the encoder's session settings for texts) on the
//             int64 token ids of --ids ([rows, tokens], written by ort_peer.py make-ids), at
//             --threads intra-op threads, for each batch of --batches: rows/s;
//   tokenize  WordPiece over --texts with the vocab.txt beside --model: texts/s;
//   images    PNG/JPEG decoding, and decoding with preprocessing (resize 256, crop 224), of
//             --images: images/s each;
//   encode    the whole text encoder in process (OnnxEncoder::Encode: tokenizing, sub-batches,
//             the model, pooling) over --texts, one call per batch of --batches, from each of
//             --callers threads at once: texts/s summed.
// Each case runs one warm-up call, then calls for --seconds.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "server/encoders/image/image_decode.h"
#include "server/encoders/image/image_preprocess.h"
#include "server/encoders/onnx/onnx_encoder.h"
#include "server/encoders/onnx/onnx_text_input.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {
namespace {

// Calls `call` (which handles `items` items) for `seconds` after one warm-up; items per second.
double Rate(double seconds, int64_t items, const std::function<void()>& call) {
  call();
  const auto start = std::chrono::steady_clock::now();
  int64_t calls = 0;
  double elapsed = 0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  return static_cast<double>(calls * items) / elapsed;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void Fail(const absl::Status& status) {
  std::cerr << "onnx_bench: " << status << "\n";
  std::exit(1);
}

const OrtRuntime* Runtime(const std::string& library) {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load(library);
  if (!runtime.ok()) Fail(runtime.status());
  return *runtime;
}

void Emit(nlohmann::json line) { std::cout << line.dump() << std::endl; }

void RunModel(const std::string& library, const std::string& model_path, const std::string& ids,
              int64_t tokens, int threads, const std::vector<int64_t>& batches, double seconds) {
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(Runtime(library), model_path, {.intra_op_threads = threads, .arena = false});
  if (!model.ok()) Fail(model.status());
  const std::string raw = Bytes(ids);
  std::vector<int64_t> values(raw.size() / sizeof(int64_t));
  std::memcpy(values.data(), raw.data(), values.size() * sizeof(int64_t));
  const std::vector<int64_t> ones(values.size(), 1), zeros(values.size(), 0);
  for (int64_t batch : batches) {
    const std::vector<int64_t> shape = {batch, tokens};
    const size_t bytes = static_cast<size_t>(batch * tokens) * sizeof(int64_t);
    const std::vector<OrtInput> inputs = {
        {"input_ids", ort::kElementInt64, shape, values.data(), bytes},
        {"attention_mask", ort::kElementInt64, shape, ones.data(), bytes},
        {"token_type_ids", ort::kElementInt64, shape, zeros.data(), bytes}};
    const double rate = Rate(seconds, batch, [&] {
      absl::StatusOr<OrtFloatTensor> out = (*model)->Run(inputs, "last_hidden_state");
      if (!out.ok()) Fail(out.status());
    });
    Emit({{"side", "adaptd"},
          {"case", "model"},
          {"batch", batch},
          {"threads", threads},
          {"tokens", tokens},
          {"rows_per_s", rate}});
  }
}

adapt::v1::EncoderConfig TextConfig(const std::string& model_path) {
  adapt::v1::EncoderConfig config;
  config.set_name("minilm");
  config.set_type("onnx");
  config.set_input("text");
  config.set_model_path(model_path);
  config.set_output_tensor("last_hidden_state");
  config.set_max_tokens(256);
  config.set_normalize(true);
  return config;
}

void RunTokenize(const std::string& library, const std::string& model_path,
                 const std::string& texts_path, double seconds) {
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(Runtime(library), model_path, {.intra_op_threads = 1, .arena = false});
  if (!model.ok()) Fail(model.status());
  absl::StatusOr<std::unique_ptr<OnnxTextInput>> input =
      OnnxTextInput::Create(**model, TextConfig(model_path), "encoders[0]");
  if (!input.ok()) Fail(input.status());
  const std::vector<std::string> texts = Lines(texts_path);
  int64_t tokens = 0;
  const double rate = Rate(seconds, static_cast<int64_t>(texts.size()), [&] {
    tokens = 0;
    for (const std::string& text : texts) {
      bool truncated = false;
      tokens += static_cast<int64_t>((*input)->Tokenize(text, &truncated).size());
    }
  });
  Emit({{"side", "adaptd"},
        {"case", "tokenize"},
        {"texts", texts.size()},
        {"mean_tokens", static_cast<double>(tokens) / texts.size()},
        {"texts_per_s", rate}});
}

void RunImages(const std::vector<std::string>& files, double seconds) {
  std::vector<std::string> images;
  for (const std::string& file : files) images.push_back(Bytes(file));
  ImagePreprocess preprocess;
  preprocess.resize = ImagePreprocess::Resize::kShorterSide;
  preprocess.shorter_side = 256;
  preprocess.crop = {224, 224};
  std::vector<float> row(3 * 224 * 224);
  for (bool with_preprocessing : {false, true}) {
    const double rate = Rate(seconds, static_cast<int64_t>(images.size()), [&] {
      for (const std::string& bytes : images) {
        absl::StatusOr<RgbImage> image = DecodeImage(bytes, {});
        if (!image.ok()) Fail(image.status());
        if (with_preprocessing) {
          if (auto s = PreprocessImage(*image, preprocess, {224, 224}, row.data()); !s.ok()) {
            Fail(s);
          }
        }
      }
    });
    Emit({{"side", "adaptd"},
          {"case", with_preprocessing ? "decode+preprocess" : "decode"},
          {"images", images.size()},
          {"images_per_s", rate}});
  }
}

void RunEncode(const std::string& library, const std::string& model_path,
               const std::string& texts_path, int threads, int pool,
               const std::vector<int64_t>& batches, const std::vector<int>& callers,
               double seconds) {
  adapt::v1::EncoderConfig config = TextConfig(model_path);
  config.set_threads(static_cast<uint32_t>(threads));
  config.set_max_batch(64);
  absl::StatusOr<std::unique_ptr<OnnxEncoder>> encoder =
      OnnxEncoder::Create(config, "encoders[0]", {.library = library, .backend_threads = pool});
  if (!encoder.ok()) Fail(encoder.status());
  const std::vector<std::string> texts = Lines(texts_path);
  std::vector<adapt::v1::Input> inputs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) inputs[i].set_text(texts[i]);
  const FieldNamer field = [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
  for (int concurrent : callers) {
    for (int64_t batch : batches) {
      // `concurrent` threads each calling Encode on its own texts, as the server's workers do.
      std::vector<double> rates(static_cast<size_t>(concurrent));
      std::vector<std::thread> threads_running;
      for (int c = 0; c < concurrent; ++c) {
        threads_running.emplace_back([&, c] {
          size_t next = static_cast<size_t>(c) * 97;
          rates[static_cast<size_t>(c)] = Rate(seconds, batch, [&] {
            std::vector<const adapt::v1::Input*> pointers;
            for (int64_t i = 0; i < batch; ++i) pointers.push_back(&inputs[next++ % inputs.size()]);
            absl::StatusOr<EncodedBatch> keys = (*encoder)->Encode(pointers, 384, 384, field);
            if (!keys.ok()) Fail(keys.status());
          });
        });
      }
      for (std::thread& t : threads_running) t.join();
      double total = 0;
      for (double r : rates) total += r;
      Emit({{"side", "adaptd"},
            {"case", "encode"},
            {"batch", batch},
            {"threads", threads},
            {"pool", (*encoder)->shared_pool() ? pool : 0},
            {"callers", concurrent},
            {"texts_per_s", total}});
    }
  }
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) {
  CLI::App app{"The onnx encoder's figures (bench/onnx/run.sh)"};
  app.require_subcommand(1);
  std::string library, model, ids, texts;
  std::vector<std::string> images;
  int64_t tokens = 128;
  int threads = 1;
  int pool = 0;
  std::vector<int64_t> batches = {1, 8, 64};
  std::vector<int> callers = {1};
  double seconds = 3;
  auto common = [&](CLI::App* sub) {
    sub->add_option("--library", library, "ONNX Runtime's library")->required();
    sub->add_option("--model", model, "the MiniLM ONNX graph (vocab.txt beside it)")->required();
    sub->add_option("--seconds", seconds, "seconds per case");
  };
  CLI::App* model_cmd = app.add_subcommand("model", "the model run alone on token ids");
  common(model_cmd);
  model_cmd->add_option("--ids", ids, "int64 [rows, tokens] token ids")->required();
  model_cmd->add_option("--tokens", tokens, "tokens per row");
  model_cmd->add_option("--threads", threads, "intra-op threads");
  model_cmd->add_option("--batches", batches, "batch sizes")->delimiter(',');
  CLI::App* tokenize_cmd = app.add_subcommand("tokenize", "WordPiece over texts");
  common(tokenize_cmd);
  tokenize_cmd->add_option("--texts", texts, "texts, one a line")->required();
  CLI::App* images_cmd = app.add_subcommand("images", "image decoding and preprocessing");
  images_cmd->add_option("--images", images, "PNG or JPEG files")->required();
  images_cmd->add_option("--seconds", seconds, "seconds per case");
  CLI::App* encode_cmd = app.add_subcommand("encode", "the text encoder in process");
  common(encode_cmd);
  encode_cmd->add_option("--texts", texts, "texts, one a line")->required();
  encode_cmd->add_option("--threads", threads, "the encoder's threads (0: --pool's)");
  encode_cmd->add_option("--pool", pool,
                         "the shared pool's threads for --threads 0, as the server's backend "
                         "threads (0: ONNX Runtime's default pool of the session's own)");
  encode_cmd->add_option("--batches", batches, "texts per Encode call")->delimiter(',');
  encode_cmd->add_option("--callers", callers, "threads calling Encode at once")->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  if (*model_cmd) adaptd::RunModel(library, model, ids, tokens, threads, batches, seconds);
  if (*tokenize_cmd) adaptd::RunTokenize(library, model, texts, seconds);
  if (*images_cmd) adaptd::RunImages(images, seconds);
  if (*encode_cmd)
    adaptd::RunEncode(library, model, texts, threads, pool, batches, callers, seconds);
  return 0;
}
