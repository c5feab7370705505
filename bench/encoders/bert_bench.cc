// sentence_bert throughput: texts per second of the all-MiniLM-L6-v2 encoder at one batch size,
// on the CPU backend with a given thread count. bert_run.sh runs it interleaved with the
// sentence-transformers peer (bert_peer.py) on the same texts; RESULTS-bert.md has figures.
//
//   bert_bench --model DIR --texts tests/fixtures/minilm/sentences.json --batch 8 --threads 2
//
// Prints one JSON line: {"impl": "adaptd", "batch": B, "threads": T, "texts": N,
// "seconds": S, "texts_per_s": N/S}.
#include <chrono>
#include <fstream>
#include <iostream>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/sentence_bert_encoder.h"
#include "server/encoders/text_encoder.h"

namespace adaptd {
namespace {

// The benchmark corpus: the fixture's sentences of at most `max_chars` bytes, repeated to
// `count` texts (bert_peer.py builds the same list).
std::vector<std::string> Corpus(const std::string& path, size_t count, size_t max_chars) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::string> base;
  for (const auto& s : j["sentences"]) {
    std::string text = s["text"].get<std::string>();
    if (!text.empty() && text.size() <= max_chars) base.push_back(text);
  }
  std::vector<std::string> out;
  for (size_t i = 0; out.size() < count; ++i) out.push_back(base[i % base.size()]);
  return out;
}

int Main(int argc, char** argv) {
  CLI::App app{"sentence_bert throughput"};
  std::string model, texts_path;
  int batch = 8, threads = 1;
  size_t count = 512, max_chars = 400;
  app.add_option("--model", model, "model directory")->required();
  app.add_option("--texts", texts_path, "sentences.json")->required();
  app.add_option("--batch", batch, "texts per Encode call");
  app.add_option("--threads", threads, "OpenBLAS threads");
  app.add_option("--count", count, "texts encoded in the timed run");
  app.add_option("--max-chars", max_chars, "longest fixture text used");
  CLI11_PARSE(app, argc, argv);

  auto backend = kernels::MakeCpuBackend(threads);
  adapt::v1::EncoderConfig config;
  config.set_name("minilm");
  config.set_type("sentence_bert");
  config.set_model_path(model);
  auto encoder = MakeSentenceBertEncoder(config, "encoder", backend.get());
  if (!encoder.ok()) {
    std::cerr << encoder.status() << "\n";
    return 1;
  }
  const auto& text_encoder = dynamic_cast<const TextEncoder&>(**encoder);
  const std::vector<std::string> texts = Corpus(texts_path, count, max_chars);
  std::vector<float> out(static_cast<size_t>(batch) * text_encoder.dim());
  auto run = [&](size_t n) {
    for (size_t i = 0; i < n; i += batch) {
      std::vector<std::string_view> views;
      for (size_t k = i; k < std::min(n, i + batch); ++k) views.push_back(texts[k]);
      if (auto s = text_encoder.EncodeTexts(views, out.data()); !s.ok()) {
        std::cerr << s << "\n";
        std::exit(1);
      }
    }
  };
  run(std::min<size_t>(texts.size(), 2 * batch));  // warm-up
  const auto start = std::chrono::steady_clock::now();
  run(texts.size());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json result = {{"impl", "adaptd"},   {"batch", batch},
                           {"threads", threads}, {"texts", texts.size()},
                           {"seconds", seconds}, {"texts_per_s", texts.size() / seconds}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace adaptd

int main(int argc, char** argv) { return adaptd::Main(argc, argv); }
