#include "server/encoders/bert/sentence_bert_encoder.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/bert_model.h"
#include "server/encoders/bert/model_files.h"
#include "server/encoders/bert/wordpiece.h"
#include "server/encoders/fingerprint.h"
#include "server/encoders/text_encoder.h"

namespace adaptd {
namespace {

namespace fs = std::filesystem;
using bert::BertModel;
using bert::WordPieceTokenizer;

class SentenceBertEncoder final : public TextEncoder {
 public:
  SentenceBertEncoder(adapt::v1::EncoderInfo info, WordPieceTokenizer tokenizer,
                      std::unique_ptr<BertModel> model, int max_tokens, kernels::Backend* backend)
      : info_(std::move(info)),
        tokenizer_(std::move(tokenizer)),
        model_(std::move(model)),
        max_tokens_(max_tokens),
        backend_(backend) {}

  const adapt::v1::EncoderInfo& info() const override { return info_; }

  absl::Status EncodeTexts(const std::vector<std::string_view>& texts, float* out) const override {
    std::vector<std::vector<int32_t>> sequences;
    sequences.reserve(texts.size());
    for (std::string_view text : texts) sequences.push_back(tokenizer_.Encode(text, max_tokens_));
    if (absl::Status s = model_->Embed(sequences, *backend_, out); !s.ok()) {
      return absl::InternalError(absl::StrCat("encoder '", info_.name(), "': ", s.message()));
    }
    return absl::OkStatus();
  }

 private:
  adapt::v1::EncoderInfo info_;
  WordPieceTokenizer tokenizer_;
  std::unique_ptr<BertModel> model_;
  int max_tokens_;
  kernels::Backend* backend_;
};

// The model directory's pieces, checked; errors name the file.
absl::StatusOr<std::unique_ptr<Encoder>> Load(const adapt::v1::EncoderConfig& config,
                                              const std::string& field, kernels::Backend* backend) {
  const fs::path dir(config.model_path());
  auto config_text = bert::ReadModelFile(dir / "config.json");
  if (!config_text.ok()) return config_text.status();
  auto bert_config = bert::ParseBertConfig(*config_text, (dir / "config.json").string());
  if (!bert_config.ok()) return bert_config.status();

  auto tokenizer_config = bert::OptionalJsonFile(dir / "tokenizer_config.json");
  if (!tokenizer_config.ok()) return tokenizer_config.status();
  const auto lower = tokenizer_config->find("do_lower_case");
  const bool lower_case =
      lower == tokenizer_config->end() || !lower->is_boolean() || lower->get<bool>();
  auto vocab_text = bert::ReadModelFile(dir / "vocab.txt");
  if (!vocab_text.ok()) return vocab_text.status();
  auto tokenizer = WordPieceTokenizer::Load((dir / "vocab.txt").string(), lower_case);
  if (!tokenizer.ok()) return tokenizer.status();
  if (tokenizer->vocab_size() > bert_config->vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat((dir / "vocab.txt").string(), ": ", tokenizer->vocab_size(),
                     " tokens, more than the model's vocab_size ", bert_config->vocab_size));
  }

  const fs::path pooling_path = dir / "1_Pooling" / "config.json";
  auto pooling = bert::OptionalJsonFile(pooling_path);
  if (!pooling.ok()) return pooling.status();
  auto flag = [&](const char* key) {
    auto it = pooling->find(key);
    return it != pooling->end() && it->is_boolean() && it->get<bool>();
  };
  if (!pooling->empty() &&
      (!flag("pooling_mode_mean_tokens") || flag("pooling_mode_cls_token") ||
       flag("pooling_mode_max_tokens") || flag("pooling_mode_mean_sqrt_len_tokens"))) {
    return absl::InvalidArgumentError(
        absl::StrCat(pooling_path.string(), ": only mean pooling is supported"));
  }

  const fs::path st_path = dir / "sentence_bert_config.json";
  auto st_config = bert::OptionalJsonFile(st_path);
  if (!st_config.ok()) return st_config.status();
  int64_t max_tokens = bert_config->max_positions;
  if (auto it = st_config->find("max_seq_length"); it != st_config->end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(st_path.string(), ": max_seq_length must be an integer of at least 2"));
    }
    max_tokens = std::min(max_tokens, it->get<int64_t>());
  }
  if (config.max_tokens() > 0) {
    if (config.max_tokens() < 2 || config.max_tokens() > bert_config->max_positions) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".max_tokens: ", config.max_tokens(),
                                                     " is outside [2, ", bert_config->max_positions,
                                                     "] (the model's max_position_embeddings)"));
    }
    max_tokens = config.max_tokens();
  }
  if (config.dim() != 0 && config.dim() != bert_config->hidden) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".dim: ", config.dim(),
                                                   " differs from the model's hidden_size ",
                                                   bert_config->hidden, " (leave it 0)"));
  }

  auto weights = bert::SafetensorsFile::Open((dir / "model.safetensors").string());
  if (!weights.ok()) return weights.status();
  auto model = BertModel::Create(*bert_config, *weights);
  if (!model.ok()) return model.status();

  // Everything that changes the output: the parameters, the architecture, vocabulary, weights.
  Fnv1a64 hash;
  hash.Add(absl::StrCat("sentence_bert/v1\nmax_tokens=", max_tokens, "\nlower=", lower_case,
                        "\nconfig="));
  hash.Add(*config_text);
  hash.Add("\nvocab=");
  hash.Add(*vocab_text);
  hash.Add("\nweights=");
  hash.Add(weights->bytes());
  adapt::v1::EncoderInfo info;
  info.set_name(config.name());
  info.set_type("sentence_bert");
  info.set_input_kind("text");
  info.set_dim(static_cast<uint32_t>(bert_config->hidden));
  info.set_normalize(true);
  info.set_fingerprint(FormatFingerprint("sentence_bert", hash.value()));
  return std::make_unique<SentenceBertEncoder>(std::move(info), *std::move(tokenizer),
                                               *std::move(model), static_cast<int>(max_tokens),
                                               backend);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Encoder>> MakeSentenceBertEncoder(
    const adapt::v1::EncoderConfig& config, const std::string& field, kernels::Backend* backend) {
  if (backend == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": sentence_bert needs a compute backend"));
  }
  if (config.model_path().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".model_path: required for sentence_bert (the model directory)"));
  }
  std::error_code ec;
  if (!fs::is_directory(config.model_path(), ec)) {
    return absl::NotFoundError(
        absl::StrCat(field, ".model_path: ", config.model_path(), " is not a directory"));
  }
  auto encoder = Load(config, field, backend);
  if (!encoder.ok() && !absl::StartsWith(encoder.status().message(), field)) {
    return absl::Status(encoder.status().code(),
                        absl::StrCat(field, ".model_path: ", encoder.status().message()));
  }
  return encoder;
}

}  // namespace adaptd
