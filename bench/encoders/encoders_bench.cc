// Text encoders benchmark: texts per second through Encoder::Encode (the server's path) at
// given batch sizes, and the accuracy a FAAST label store reaches with an encoder on a
// train/test split. Run by run_encoders_bench.sh, which puts the peers beside it.
//
//   encoders_bench throughput --texts FILE --type hashed_ngrams|fasttext|sentence_bert
//                             [--dim D] [--model PATH] [--batches 1,8,64] [--rounds R]
//   encoders_bench accuracy --train TSV --test TSV --type ... [--dim D] [--model PATH]
// TSV lines are LABEL<TAB>TEXT. Each result is one JSON line on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "kernels/backend.h"
#include "nlohmann/json.hpp"
#include "server/core/engine.h"
#include "server/encoders/encoder_set.h"

namespace {

struct Options {
  std::string type = "hashed_ngrams", model, texts, train, test;
  uint32_t dim = 0;
  std::vector<int> batches = {1, 8, 64};
  int rounds = 3;
};

adapt::v1::EncoderConfig EncoderConfigOf(const Options& o) {
  adapt::v1::EncoderConfig config;
  config.set_name("enc");
  config.set_type(o.type);
  config.set_dim(o.dim);
  config.set_model_path(o.model);
  return config;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "encoders_bench: %s\n", message.c_str());
  return 1;
}

int Throughput(const Options& o) {
  auto backend = adaptd::kernels::MakeCpuBackend(1);
  google::protobuf::RepeatedPtrField<adapt::v1::EncoderConfig> configs;
  *configs.Add() = EncoderConfigOf(o);
  auto set = adaptd::EncoderSet::Create(configs, backend.get());
  if (!set.ok()) return Fail(std::string(set.status().message()));
  const adaptd::Encoder* encoder = (*set)->Find("enc");
  const std::vector<std::string> texts = ReadLines(o.texts);
  if (texts.empty()) return Fail("no texts in " + o.texts);
  std::vector<adapt::v1::Input> inputs(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) inputs[i].set_text(texts[i]);
  const auto namer = [](size_t i) { return "inputs[" + std::to_string(i) + "]"; };
  for (int batch : o.batches) {
    std::vector<double> rates;
    for (int round = 0; round < o.rounds; ++round) {
      const auto start = std::chrono::steady_clock::now();
      for (size_t first = 0; first < inputs.size(); first += batch) {
        std::vector<const adapt::v1::Input*> group;
        for (size_t i = first; i < std::min(inputs.size(), first + batch); ++i) {
          group.push_back(&inputs[i]);
        }
        auto keys = encoder->Encode(group, 0, 1 << 24, namer);
        if (!keys.ok()) return Fail(std::string(keys.status().message()));
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      rates.push_back(static_cast<double>(inputs.size()) / seconds);
    }
    std::sort(rates.begin(), rates.end());
    nlohmann::json row = {{"kind", "throughput"},
                          {"impl", "adaptd"},
                          {"encoder", o.type},
                          {"batch", batch},
                          {"texts", inputs.size()},
                          {"dim", encoder->dim()},
                          {"texts_per_s", rates[rates.size() / 2]}};
    std::printf("%s\n", row.dump().c_str());
  }
  return 0;
}

google::protobuf::RepeatedPtrField<adapt::v1::Example> Examples(const std::string& path,
                                                                std::vector<std::string>* labels) {
  google::protobuf::RepeatedPtrField<adapt::v1::Example> out;
  for (const std::string& line : ReadLines(path)) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    if (parts.size() != 2) continue;
    adapt::v1::Example* e = out.Add();
    e->set_label(parts[0]);
    e->mutable_input()->set_text(parts[1]);
    if (labels != nullptr) labels->push_back(parts[0]);
  }
  return out;
}

int Accuracy(const Options& o) {
  auto backend = adaptd::kernels::MakeCpuBackend(1);
  adapt::v1::ServerConfig config;
  *config.add_encoders() = EncoderConfigOf(o);
  config.set_max_dim(65536);
  auto engine = adaptd::Engine::Create(config, backend.get(), nullptr);
  if (!engine.ok()) return Fail(std::string(engine.status().message()));
  adapt::v1::CreateStoreRequest create;
  create.set_tenant("bench");
  create.set_store("texts");
  create.mutable_spec()->set_kind(adapt::v1::STORE_KIND_FAAST);
  create.mutable_spec()->set_encoder("enc");
  create.mutable_spec()->mutable_faast()->set_auto_compile_every(0);
  create.mutable_spec()->mutable_faast()->set_auto_compile_delay_ms(0);
  if (auto s = (*engine)->CreateStore(create); !s.ok())
    return Fail(std::string(s.status().message()));
  const auto train = Examples(o.train, nullptr);
  std::vector<std::string> truth;
  const auto test = Examples(o.test, &truth);
  const auto start = std::chrono::steady_clock::now();
  auto session = (*engine)->StartWrite(adaptd::TxnKind::kAdapt);
  if (auto s = session->Add("bench", "texts", train); !s.ok())
    return Fail(std::string(s.message()));
  if (auto s = session->Finish(); !s.ok()) return Fail(std::string(s.status().message()));
  adapt::v1::CompileRequest compile;
  compile.set_tenant("bench");
  compile.set_store("texts");
  std::promise<absl::StatusOr<adapt::v1::CompileResponse>> done;
  (*engine)->Compile(
      compile, [&](absl::StatusOr<adapt::v1::CompileResponse> r) { done.set_value(std::move(r)); });
  auto compiled = done.get_future().get();
  if (!compiled.ok()) return Fail(std::string(compiled.status().message()));
  const double adapt_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  adapt::v1::PredictRequest predict;
  predict.set_tenant("bench");
  predict.set_store("texts");
  for (const auto& e : test) *predict.add_inputs() = e.input();
  auto predicted = (*engine)->Predict(predict);
  if (!predicted.ok()) return Fail(std::string(predicted.status().message()));
  int correct = 0;
  for (int i = 0; i < predicted->predictions_size(); ++i) {
    correct += predicted->predictions(i).labels(0).label() == truth[i];
  }
  const auto encoders = (*engine)->ListEncoders();
  nlohmann::json row = {{"kind", "accuracy"},
                        {"encoder", o.type},
                        {"dim", encoders.encoders(0).dim()},
                        {"train", train.size()},
                        {"test", test.size()},
                        {"accuracy", static_cast<double>(correct) / std::max(1, test.size())},
                        {"solver", compiled->faast().solver()},
                        {"effective_rank", compiled->faast().effective_rank()},
                        {"adapt_compile_s", adapt_seconds}};
  std::printf("%s\n", row.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"adaptd text encoders: throughput and FAAST accuracy"};
  Options o;
  app.require_subcommand(1);
  for (CLI::App* sub : {app.add_subcommand("throughput", "Texts per second by batch size"),
                        app.add_subcommand("accuracy", "FAAST accuracy on a train/test split")}) {
    sub->add_option("--type", o.type, "Encoder type")->required();
    sub->add_option("--dim", o.dim, "Encoder dim (hashed_ngrams buckets)");
    sub->add_option("--model", o.model, "Model path (fasttext .bin, sentence_bert directory)");
  }
  CLI::App* throughput = app.get_subcommand("throughput");
  throughput->add_option("--texts", o.texts, "Texts, one per line")->required();
  throughput->add_option("--batches", o.batches, "Batch sizes")->delimiter(',');
  throughput->add_option("--rounds", o.rounds, "Repeats (the median is reported)");
  CLI::App* accuracy = app.get_subcommand("accuracy");
  accuracy->add_option("--train", o.train, "Training TSV (LABEL<TAB>TEXT)")->required();
  accuracy->add_option("--test", o.test, "Test TSV")->required();
  CLI11_PARSE(app, argc, argv);
  return throughput->parsed() ? Throughput(o) : Accuracy(o);
}
