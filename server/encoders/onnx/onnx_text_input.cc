#include "server/encoders/onnx/onnx_text_input.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "server/encoders/bert/model_files.h"

namespace adaptd {
namespace {

namespace fs = std::filesystem;

// Files of tokenizers other than WordPiece (BPE, SentencePiece, Unigram) that may sit beside a
// model; the text input refuses a directory holding any of them rather than guess.
constexpr const char* kOtherTokenizerFiles[] = {
    "merges.txt",      "vocab.json", "spiece.model", "sentencepiece.bpe.model",
    "tokenizer.model", "source.spm", "target.spm",   "bpe.codes",
};

// A model file's contents; any error is the model's: FailedPrecondition naming the path.
absl::StatusOr<std::string> ReadText(const fs::path& path) {
  absl::StatusOr<std::string> text = bert::ReadModelFile(path);
  if (!text.ok()) return absl::FailedPreconditionError(text.status().message());
  return text;
}

absl::StatusOr<nlohmann::json> OptionalJson(const fs::path& path) {
  absl::StatusOr<nlohmann::json> j = bert::OptionalJsonFile(path);
  if (!j.ok()) return absl::FailedPreconditionError(j.status().message());
  return j;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// An int64 [batch, tokens] tensor's fixed sequence length (0: dynamic), or the error.
absl::StatusOr<int64_t> TokenTensor(const OrtTensorSpec& spec, const std::string& context) {
  if (spec.element_type != ort::kElementInt64 || spec.dims.size() != 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, " input tensor '", spec.name, "' is element type ", spec.element_type,
        " of shape ", DimsText(spec.dims), "; the text input feeds int64 [batch, tokens]"));
  }
  return std::max<int64_t>(spec.dims[1], 0);
}

}  // namespace

absl::StatusOr<std::unique_ptr<OnnxTextInput>> OnnxTextInput::Create(
    const OrtModel& model, const adapt::v1::EncoderConfig& config, const std::string& field) {
  auto input = std::unique_ptr<OnnxTextInput>(new OnnxTextInput());
  if (auto s = input->LoadTokenizer(model.path()); !s.ok()) return s;
  if (auto s = input->BindTensors(model, config, field); !s.ok()) return s;
  return input;
}

absl::Status OnnxTextInput::LoadTokenizer(const std::string& model_path) {
  const fs::path dir = fs::path(model_path).parent_path();
  std::vector<std::string> others;
  std::error_code error;
  for (const char* file : kOtherTokenizerFiles) {
    if (fs::exists(dir / file, error)) others.push_back((dir / file).string());
  }
  const fs::path tokenizer_json = dir / "tokenizer.json";
  if (fs::exists(tokenizer_json, error)) {
    absl::StatusOr<nlohmann::json> j = OptionalJson(tokenizer_json);
    if (!j.ok()) return j.status();
    const nlohmann::json* type = nullptr;
    if (auto m = j->find("model"); m != j->end() && m->is_object()) {
      if (auto t = m->find("type"); t != m->end() && t->is_string()) type = &*t;
    }
    if (type == nullptr || type->get<std::string>() != "WordPiece") {
      others.push_back(absl::StrCat(tokenizer_json.string(), " (model type ",
                                    type == nullptr ? "not stated" : type->get<std::string>(),
                                    ")"));
    }
  }
  vocab_path_ = (dir / "vocab.txt").string();
  if (!others.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the onnx text input tokenizes with WordPiece from ", vocab_path_,
                     " only; the model's directory holds another tokenizer's files: ",
                     absl::StrJoin(others, ", ")));
  }
  if (!fs::is_regular_file(vocab_path_, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(vocab_path_,
                     ": missing; the onnx text input needs the model's WordPiece vocabulary "
                     "beside it"));
  }
  absl::StatusOr<nlohmann::json> tokenizer_config = OptionalJson(dir / "tokenizer_config.json");
  if (!tokenizer_config.ok()) return tokenizer_config.status();
  const auto lower = tokenizer_config->find("do_lower_case");
  lower_case_ = lower == tokenizer_config->end() || !lower->is_boolean() || lower->get<bool>();
  absl::StatusOr<bert::WordPieceTokenizer> tokenizer =
      bert::WordPieceTokenizer::Load(vocab_path_, lower_case_);
  if (!tokenizer.ok()) {
    return absl::FailedPreconditionError(tokenizer.status().message());
  }
  tokenizer_ = std::make_unique<bert::WordPieceTokenizer>(*std::move(tokenizer));
  for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
    if (tokenizer_->token(id) == "[PAD]") {
      pad_id_ = id;
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status OnnxTextInput::BindTensors(const OrtModel& model,
                                        const adapt::v1::EncoderConfig& config,
                                        const std::string& field) {
  const std::string context = absl::StrCat("ONNX model '", model.path(), "'");
  const OrtTensorSpec* ids = nullptr;
  const OrtTensorSpec* mask = nullptr;
  std::vector<std::string> names;
  for (const OrtTensorSpec& spec : model.inputs()) {
    names.push_back(spec.name);
    if (spec.name == input_ids_) {
      ids = &spec;
    } else if (spec.name == attention_mask_) {
      mask = &spec;
    } else if (spec.name == "token_type_ids") {
      token_type_ids_ = spec.name;
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          context, " has input '", spec.name,
          "'; the text input feeds input_ids, attention_mask and token_type_ids (inputs: ",
          absl::StrJoin(names, ", "), ")"));
    }
  }
  if (ids == nullptr || mask == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " lacks input ", ids == nullptr ? input_ids_ : attention_mask_,
                     "; the text input feeds input_ids, attention_mask and optional "
                     "token_type_ids (inputs: ",
                     absl::StrJoin(names, ", "), ")"));
  }
  for (const OrtTensorSpec& spec : model.inputs()) {
    absl::StatusOr<int64_t> fixed = TokenTensor(spec, context);
    if (!fixed.ok()) return fixed.status();
    if (spec.name == input_ids_) fixed_tokens_ = *fixed;
  }
  if (ids->dims[0] == 1) {
    fixed_batch_ = 1;
  } else if (ids->dims[0] > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " input tensor '", ids->name, "' has a fixed batch of ", ids->dims[0],
                     "; the onnx encoder runs dynamic batches or a batch of 1"));
  }
  return BindOutput(model, config, field, context);
}

absl::Status OnnxTextInput::BindOutput(const OrtModel& model,
                                       const adapt::v1::EncoderConfig& config,
                                       const std::string& field, const std::string& context) {
  // The output: [batch, tokens, dim] pooled, or [batch, dim].
  const OrtTensorSpec* output = nullptr;
  std::vector<std::string> names;
  for (const OrtTensorSpec& spec : model.outputs()) {
    names.push_back(spec.name);
    if (spec.name == config.output_tensor() ||
        (config.output_tensor().empty() && model.outputs().size() == 1)) {
      output = &spec;
    }
  }
  if (output == nullptr) {
    return absl::FailedPreconditionError(
        config.output_tensor().empty()
            ? absl::StrCat(context, " has ", names.size(),
                           " outputs; name one with output_tensor (outputs: ",
                           absl::StrJoin(names, ", "), ")")
            : absl::StrCat(context, " has no output tensor '", config.output_tensor(),
                           "' (outputs: ", absl::StrJoin(names, ", "), ")"));
  }
  const size_t rank = output->dims.size();
  if (output->element_type != ort::kElementFloat || (rank != 2 && rank != 3) ||
      output->dims.back() <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, " output tensor '", output->name, "' is element type ", output->element_type,
        " of shape ", DimsText(output->dims),
        "; the text input reads float32 [batch, tokens, dim] or [batch, dim] with dim fixed"));
  }
  output_ = output->name;
  dim_ = output->dims.back();
  pooled_output_ = rank == 2;
  const std::string& pooling = config.pooling();
  if (pooling != "" && pooling != "mean" && pooling != "first") {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".pooling: '", pooling, "'; \"mean\" or \"first\""));
  }
  if (pooled_output_ && !pooling.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".pooling: the output '", output_,
                     "' is [batch, dim] already; pooling applies to [batch, tokens, dim]"));
  }
  first_token_ = pooling == "first";

  if (config.max_tokens() > 0) {
    if (config.max_tokens() < 2 ||
        (fixed_tokens_ > 0 && static_cast<int64_t>(config.max_tokens()) > fixed_tokens_)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".max_tokens: ", config.max_tokens(), " is outside [2, ",
          fixed_tokens_ > 0 ? absl::StrCat(fixed_tokens_, "] (the model's sequence dimension)")
                            : "...]"));
    }
    max_tokens_ = static_cast<int>(config.max_tokens());
  } else if (fixed_tokens_ >= 2) {
    max_tokens_ = static_cast<int>(fixed_tokens_);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".max_tokens: required: the model's input '", input_ids_,
                     "' has a dynamic sequence dimension"));
  }
  return absl::OkStatus();
}

absl::Status OnnxTextInput::AddToFingerprint(Fnv1a64* hash) const {
  hash->Add(absl::StrCat("\ninput_ids=", input_ids_, "\nattention_mask=", attention_mask_,
                         "\ntoken_type_ids=", token_type_ids_, "\nmax_tokens=", max_tokens_,
                         "\npooling=",
                         pooled_output_ ? "none"
                         : first_token_ ? "first"
                                        : "mean",
                         "\nlower=", lower_case_ ? 1 : 0, "\nvocab="));
  absl::StatusOr<std::string> vocab = ReadText(vocab_path_);
  if (!vocab.ok()) return vocab.status();
  hash->Add(*vocab);
  return absl::OkStatus();
}

std::vector<int32_t> OnnxTextInput::Tokenize(std::string_view text, bool* truncated) const {
  // One token more than allowed tells whether the text was cut; dropping the last piece before
  // [SEP] gives exactly what max_tokens alone would.
  std::vector<int32_t> ids = tokenizer_->Encode(text, max_tokens_ + 1);
  *truncated = static_cast<int>(ids.size()) > max_tokens_;
  if (*truncated) ids.erase(ids.begin() + (max_tokens_ - 1));
  return ids;
}

std::vector<std::vector<size_t>> OnnxTextInput::SubBatches(const std::vector<size_t>& lengths,
                                                           int64_t max_batch) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  size_t real = 0;
  for (size_t i : order) {
    const size_t length = lengths[i];  // the longest so far: the order is ascending
    const bool full = !batches.empty() && static_cast<int64_t>(batches.back().size()) >= max_batch;
    const bool padded =
        !batches.empty() && (batches.back().size() + 1) * length > 2 * (real + length);
    if (batches.empty() || full || padded) {
      batches.emplace_back();
      real = 0;
    }
    batches.back().push_back(i);
    real += length;
  }
  return batches;
}

absl::StatusOr<std::vector<int64_t>> OnnxTextInput::Encode(
    const OrtModel& model, const std::vector<std::string_view>& texts, int64_t max_batch,
    float* out) const {
  std::vector<std::vector<int32_t>> ids(texts.size());
  std::vector<size_t> lengths(texts.size());
  std::vector<int64_t> truncated;
  for (size_t i = 0; i < texts.size(); ++i) {
    bool cut = false;
    ids[i] = Tokenize(texts[i], &cut);
    if (cut) truncated.push_back(static_cast<int64_t>(i));
    // A fixed sequence dimension pads every text alike: only max_batch cuts.
    lengths[i] = fixed_tokens_ > 0 ? static_cast<size_t>(fixed_tokens_) : ids[i].size();
  }
  if (fixed_batch_ == 1) max_batch = 1;
  std::vector<float> rows_out;
  for (const std::vector<size_t>& batch : SubBatches(lengths, max_batch)) {
    std::vector<const std::vector<int32_t>*> rows;
    for (size_t i : batch) rows.push_back(&ids[i]);
    rows_out.assign(batch.size() * static_cast<size_t>(dim_), 0.0f);
    if (auto s = RunBatch(model, rows, rows_out.data()); !s.ok()) return s;
    for (size_t r = 0; r < batch.size(); ++r) {
      std::copy_n(rows_out.data() + r * dim_, dim_, out + batch[r] * dim_);
    }
  }
  return truncated;
}

absl::Status OnnxTextInput::RunBatch(const OrtModel& model,
                                     const std::vector<const std::vector<int32_t>*>& rows,
                                     float* out) const {
  const int64_t batch = static_cast<int64_t>(rows.size());
  int64_t tokens = fixed_tokens_;
  if (tokens == 0) {
    for (const auto* row : rows) tokens = std::max<int64_t>(tokens, row->size());
  }
  std::vector<int64_t> input_ids(static_cast<size_t>(batch * tokens), pad_id_);
  std::vector<int64_t> mask(input_ids.size(), 0);
  std::vector<int64_t> types(token_type_ids_.empty() ? 0 : input_ids.size(), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int32_t>& row = *rows[b];
    for (size_t t = 0; t < row.size(); ++t) {
      input_ids[b * tokens + t] = row[t];
      mask[b * tokens + t] = 1;
    }
  }
  const std::vector<int64_t> shape = {batch, tokens};
  const size_t bytes = input_ids.size() * sizeof(int64_t);
  std::vector<OrtInput> inputs = {
      {input_ids_, ort::kElementInt64, shape, input_ids.data(), bytes},
      {attention_mask_, ort::kElementInt64, shape, mask.data(), bytes},
  };
  if (!token_type_ids_.empty()) {
    inputs.push_back({token_type_ids_, ort::kElementInt64, shape, types.data(), bytes});
  }
  absl::StatusOr<OrtFloatTensor> result = model.Run(inputs, output_);
  if (!result.ok()) return result.status();
  const std::vector<int64_t> want = pooled_output_ ? std::vector<int64_t>{batch, dim_}
                                                   : std::vector<int64_t>{batch, tokens, dim_};
  if (result->shape != want) {
    return absl::InternalError(absl::StrCat("ONNX model '", model.path(), "' output '", output_,
                                            "' has shape ", DimsText(result->shape), ", expected ",
                                            DimsText(want)));
  }
  const float* values = result->values.data();
  if (pooled_output_) {
    std::copy(values, values + batch * dim_, out);
    return absl::OkStatus();
  }
  std::vector<double> sum(static_cast<size_t>(dim_));
  for (int64_t b = 0; b < batch; ++b) {
    const float* first = values + b * tokens * dim_;
    float* row = out + b * dim_;
    if (first_token_) {
      std::copy(first, first + dim_, row);
      continue;
    }
    // Mean over the attention mask (sentence-transformers' mean pooling).
    std::fill(sum.begin(), sum.end(), 0.0);
    const int64_t count = static_cast<int64_t>(rows[b]->size());
    for (int64_t t = 0; t < count; ++t) {
      const float* token = first + t * dim_;
      for (int64_t j = 0; j < dim_; ++j) sum[j] += token[j];
    }
    const double scale = 1.0 / static_cast<double>(std::max<int64_t>(count, 1));
    for (int64_t j = 0; j < dim_; ++j) row[j] = static_cast<float>(sum[j] * scale);
  }
  return absl::OkStatus();
}

}  // namespace adaptd
