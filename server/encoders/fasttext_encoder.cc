#include "server/encoders/fasttext_encoder.h"

#include <exception>
#include <filesystem>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "fasttext/fasttext.h"
#include "server/encoders/fingerprint.h"

namespace adaptd {

FastTextEncoder::FastTextEncoder() = default;
FastTextEncoder::~FastTextEncoder() = default;

absl::StatusOr<std::unique_ptr<FastTextEncoder>> FastTextEncoder::Create(
    const adapt::v1::EncoderConfig& config, const std::string& field) {
  const std::string& path = config.model_path();
  auto fail = [&](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat(field, ".model_path: fasttext encoder '",
                                                      config.name(), "' cannot load '", path,
                                                      "': ", why));
  };
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".model_path: required by fasttext encoder '", config.name(), "'"));
  }
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return fail(std::filesystem::exists(path, error) ? "not a regular file" : "no such file");
  }
  auto encoder = std::unique_ptr<FastTextEncoder>(new FastTextEncoder());
  encoder->model_ = std::make_unique<fasttext::FastText>();
  try {
    encoder->model_->loadModel(path);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  const int dim = encoder->model_->getDimension();
  if (dim < 1) return fail(absl::StrCat("the model's dimension is ", dim));
  if (config.dim() != 0 && config.dim() != static_cast<uint32_t>(dim)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".dim: ", config.dim(),
                                                   " differs from the model's dimension ", dim,
                                                   " (leave it 0)"));
  }
  Fnv1a64 hash;
  hash.Add(absl::StrCat("fasttext/v1\nnormalize=", config.normalize() ? 1 : 0, "\nmodel="));
  if (absl::Status s = HashFile(path, &hash); !s.ok()) return fail(std::string(s.message()));
  adapt::v1::EncoderInfo& info = encoder->info_;
  info.set_name(config.name());
  info.set_type("fasttext");
  info.set_input_kind("text");
  info.set_dim(static_cast<uint32_t>(dim));
  info.set_normalize(config.normalize());
  info.set_fingerprint(FormatFingerprint("fasttext", hash.value()));
  return encoder;
}

absl::Status FastTextEncoder::EncodeTexts(const std::vector<std::string_view>& texts,
                                          float* out) const {
  const int64_t d = info_.dim();
  fasttext::Vector vec(d);
  std::string line;
  for (size_t i = 0; i < texts.size(); ++i) {
    line.assign(texts[i].data(), texts[i].size());
    for (char& c : line) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    line.push_back('\n');
    std::istringstream in(line);
    // getSentenceVector only reads the model; it is not declared const.
    model_->getSentenceVector(in, vec);
    for (int64_t j = 0; j < d; ++j) out[i * d + j] = vec[j];
  }
  if (info_.normalize()) NormalizeRows(out, static_cast<int64_t>(texts.size()), d);
  return absl::OkStatus();
}

}  // namespace adaptd
